"""Hugging Face sign-in as a Space has it, without the network: the settings a Space with `hf_oauth: true` sets,
and a validly signed Gradio OAuth session cookie for any username.

gradio.oauth.attach_oauth (installed when the page has a `gr.LoginButton`) adds Starlette's SessionMiddleware
with the secret sha256(OAUTH_CLIENT_SECRET + "-v4") and, after the Hugging Face callback, keeps the token
response in the session under "oauth_info", the profile under its "userinfo". The middleware's cookie is
`session`: base64 of the session's JSON, signed with itsdangerous' TimestampSigner. Minting it with the same
secret is what a real sign-in leaves in the browser; Gradio then injects the `gr.OAuthProfile` itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from base64 import b64encode

import itsdangerous

SESSION_COOKIE = "session"
CLIENT_SECRET = "test-oauth-client-secret-not-for-production"


def space_oauth_env(client_secret: str = CLIENT_SECRET, space_id: str = "newsloop/oauth-test") -> dict[str, str]:
    """The environment a Space with `hf_oauth: true` gives the app (what gradio.oauth and NewsLoop read)."""
    return {
        "SPACE_ID": space_id,
        "SYSTEM": "spaces",
        "SPACE_HOST": space_id.replace("/", "-") + ".hf.space",
        "OAUTH_CLIENT_ID": "00000000-test-client",
        "OAUTH_CLIENT_SECRET": client_secret,
        "OAUTH_SCOPES": "openid profile",
        "OPENID_PROVIDER_URL": "https://huggingface.co",
    }


def signed_session_cookie(
    username: str,
    *,
    client_secret: str | None = None,
    expires_in_s: float = 8 * 3600,
    name: str | None = None,
) -> str:
    """The value of the `session` cookie Gradio sets when `username` signs in with Hugging Face.

    `client_secret` is the Space's OAUTH_CLIENT_SECRET (default: this process's environment, else
    CLIENT_SECRET); a negative `expires_in_s` gives a sign-in that has expired.
    """
    secret = client_secret or os.environ.get("OAUTH_CLIENT_SECRET") or CLIENT_SECRET
    now = int(time.time())
    oauth_info = {
        "access_token": f"hf_oauth_test_{username}",
        "token_type": "bearer",
        "expires_in": int(expires_in_s),
        "expires_at": int(now + expires_in_s),
        "scope": "openid profile",
        "id_token": "test",
        "userinfo": {
            "sub": hashlib.sha256(username.encode()).hexdigest()[:24],
            "name": name or username.title(),
            "preferred_username": username,
            "profile": f"https://huggingface.co/{username}",
            "picture": f"https://huggingface.co/avatars/{username}.png",
            "website": "",
            "aud": "00000000-test-client",
            "auth_time": now,
        },
    }
    signer = itsdangerous.TimestampSigner(hashlib.sha256(f"{secret}-v4".encode()).hexdigest())
    return signer.sign(b64encode(json.dumps({"oauth_info": oauth_info}).encode())).decode()
