"""Who is asking: an identity the server vouches for, and the client address it believes.

A visitor's identity is never the session hash the client chooses. It is either an account the host
signed in (Gradio `auth=`, or Hugging Face sign-in on a Space), which is *verified*, or a random browser
id the server issued in a signed, HttpOnly cookie, which is not: anyone can mint such ids by dropping
the cookie, so the trust rules weigh them accordingly (see `feedback.trust.rules` and
docs/concepts/threat-model.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import ipaddress
import os
import secrets
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from typing import Any

from starlette.requests import HTTPConnection

from web.server.gradio_internals import OAUTH_SESSION_COOKIE, oauth_session_info

COOKIE = "newsloop_id"
# The anti-forgery token: a keyed hash of the browser id, in a cookie the page's own script can read (not
# HttpOnly) and sends back as a header with every event (web/server/forms.js). Another site can make a browser send
# the cookies but can read neither, so it cannot name the header: a signed double-submit token.
FORM_COOKIE = "newsloop_form"
FORM_HEADER = "x-newsloop-form"
_COOKIE_MAX_AGE_S = 400 * 24 * 3600  # browsers cap cookie lifetime at about 400 days


@dataclass(frozen=True)
class Identity:
    """One visitor as the server knows them."""

    annotator: str  # what answers are stored under: "user:<name>" or "anon:<keyed hash of the browser id>"
    verified: bool  # an account the host signed in, not a self-minted browser id
    browser: str  # the server-issued browser id's keyed hash; "" when the request carried none
    address: str  # keyed hash of the client address the server believes (see ProxyPolicy)
    session: str  # key of per-tab memory: browser and Gradio session together


@dataclass(frozen=True)
class ProxyPolicy:
    """Which proxies' X-Forwarded-For entries are believed, and how many hops of them there are.

    Each proxy appends the address it saw; entries to the left of the last `hops` were written by the
    client and are never believed. A request whose peer is not one of `addresses` is taken at its peer
    address, so a client that reaches the app directly cannot claim another address.
    """

    hops: int = 0
    addresses: tuple[str, ...] = ()  # IPs or CIDR networks of the proxies; "*" = any peer (only on a Space)

    def trusts(self, peer: str) -> bool:
        if not self.hops or not peer:
            return False
        if "*" in self.addresses:
            return True
        try:
            ip = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(ip in ipaddress.ip_network(net, strict=False) for net in self.addresses)

    def client_address(self, peer: str, forwarded_for: str | Sequence[str]) -> str:
        """The address to attribute a request to, from its TCP peer and its X-Forwarded-For header lines.

        Every line counts, in order, as if joined by commas (RFC 9110): a proxy that appends a line of its
        own instead of extending the client's must not have its entry hidden behind the client's line.
        """
        if not self.trusts(peer):
            return peer
        joined = forwarded_for if isinstance(forwarded_for, str) else ",".join(forwarded_for)
        entries = [part.strip() for part in joined.split(",") if part.strip()]
        if len(entries) < self.hops:
            return peer  # fewer entries than proxies: the chain is not what we were told, believe nothing
        return entries[-self.hops]


class IdentityService:
    """Issues and checks browser ids, and turns a request into an `Identity` (keyed hashes, never raw values)."""

    def __init__(self, secret: bytes, proxy: ProxyPolicy = ProxyPolicy(), *, secure_cookie: bool = False) -> None:
        if len(secret) < 16:
            raise ValueError("the identity secret must be at least 16 bytes")
        self._secret = secret
        self.proxy = proxy
        self.secure_cookie = secure_cookie

    def _mac(self, value: str, purpose: str) -> str:
        return hmac.new(self._secret, f"{purpose}:{value}".encode(), hashlib.sha256).hexdigest()

    # Browser ids ------------------------------------------------------------------------------------
    def mint_cookie(self) -> str:
        browser = secrets.token_urlsafe(18)
        return f"{browser}.{self._mac(browser, 'cookie')[:32]}"

    def browser_id(self, cookie: str | None) -> str:
        """The browser id a signed cookie value carries, or "" when it is missing or forged."""
        if not cookie or "." not in cookie or len(cookie) > 200:
            return ""
        browser, mac = cookie.rsplit(".", 1)
        return browser if hmac.compare_digest(mac, self._mac(browser, "cookie")[:32]) else ""

    def browser_key(self, cookie: str | None) -> str:
        """The keyed hash `identify` gives (as `Identity.browser`) to the browser a cookie value carries."""
        browser = self.browser_id(cookie)
        return self._mac(browser, "browser")[:16] if browser else ""

    def form_token(self, browser_key: str) -> str:
        """The anti-forgery token of the browser whose keyed id is `browser_key` ("" for none)."""
        return self._mac(browser_key, "form")[:32] if browser_key else ""

    def sent_form_token(self, request: Any) -> bool:
        """Whether a request carries its own browser's anti-forgery token in `FORM_HEADER`."""
        headers = getattr(request, "headers", None) or {}
        sent = headers.get(FORM_HEADER, "") if hasattr(headers, "get") else ""
        expected = self.form_token(self.identify(request).browser)
        return bool(expected) and isinstance(sent, str) and hmac.compare_digest(sent.encode(), expected.encode())

    # Requests ---------------------------------------------------------------------------------------
    def address_of(self, request: Any) -> str:
        """Keyed hash of the client address to rate limit (a Starlette request or a gr.Request)."""
        peer = getattr(getattr(request, "client", None), "host", "") or ""
        return "addr:" + self._mac(self.proxy.client_address(peer, forwarded_lines(request)), "address")[:16]

    def identify(self, request: Any, profile: Any = None) -> Identity:
        """The identity behind a request (a gr.Request in handlers; None when called outside a request).

        `profile` is the `gr.OAuthProfile` Gradio injects into a handler that asks for one (Hugging Face
        sign-in); a plain Starlette request, where Gradio injects nothing, is read by `hf_session_user`."""
        address = self.address_of(request) if request is not None else "addr:none"
        cookies = getattr(request, "cookies", None) or {}
        browser = self.browser_id(cookies.get(COOKIE) if hasattr(cookies, "get") else None)
        browser_key = self._mac(browser, "browser")[:16] if browser else ""
        tab = getattr(request, "session_hash", None) or ""
        session = f"{browser_key}:{tab}" if browser_key else ""
        user = signed_in_user(request, profile)
        if user is None and profile is None and isinstance(request, HTTPConnection):
            user = hf_session_user(request)
        if user:
            return Identity(f"user:{user}", True, browser_key, address, session or f"user:{user}:{tab}")
        annotator = f"anon:{browser_key}" if browser_key else ""
        return Identity(annotator, False, browser_key, address, session)


def forwarded_lines(request: Any) -> list[str]:
    """Every X-Forwarded-For header line of a request (Starlette's or a gr.Request), in the order received."""
    headers = getattr(request, "headers", None) or {}
    if hasattr(headers, "getlist"):
        return list(headers.getlist("x-forwarded-for"))
    line = headers.get("x-forwarded-for", "") if hasattr(headers, "get") else ""
    return [line] if line else []


def cookie_attributes(value: str, *, secure: bool) -> str:
    """The Set-Cookie value that gives a browser the id cookie `value` (signed by `IdentityService.mint_cookie`)."""
    attributes = f"{COOKIE}={value}; Path=/; HttpOnly; Max-Age={_COOKIE_MAX_AGE_S}"
    # A Space shows the app in a cross-site iframe, where only a Secure, SameSite=None cookie comes back.
    return attributes + ("; Secure; SameSite=None" if secure else "; SameSite=Lax")


def form_cookie_attributes(token: str, *, secure: bool) -> str:
    """The Set-Cookie value of the anti-forgery token: readable by the page's script, sent like the id cookie."""
    attributes = f"{FORM_COOKIE}={token}; Path=/; Max-Age={_COOKIE_MAX_AGE_S}"
    return attributes + ("; Secure; SameSite=None" if secure else "; SameSite=Lax")


def signed_in_user(request: Any, profile: Any = None) -> str | None:
    """The account name the host signed in: Gradio's `auth=` (`request.username`), or Hugging Face sign-in on
    a Space, the `gr.OAuthProfile` Gradio injects into a handler with a `gr.OAuthProfile | None` parameter."""
    username = getattr(request, "username", None) if request is not None else None
    if isinstance(username, str) and username:
        return username
    name = getattr(profile, "username", None)
    return name if isinstance(name, str) and name else None


def hf_session_user(request: HTTPConnection) -> str | None:
    """The Hugging Face account in Gradio's signed session cookie, for a plain Starlette request.

    Only the upload guard (`web.server.asgi.RequestGuard`) needs this: it runs outside Gradio, before Gradio's
    SessionMiddleware (installed on the mounted page) has decoded the cookie, and Gradio cannot inject a
    `gr.OAuthProfile` there. So the cookie is read the way that middleware and gradio.oauth write it
    (`web.server.gradio_internals.oauth_session_info`), the profile under "oauth_info" -> "userinfo",
    unexpired. Every page handler gets the injected profile instead.
    """
    secret = os.environ.get("OAUTH_CLIENT_SECRET")
    cookie = request.cookies.get(OAUTH_SESSION_COOKIE)
    if not secret or not cookie or len(cookie) > 16_384:
        return None
    info = oauth_session_info(cookie, secret)
    if info is None:
        return None
    expires = info.get("expires_at")
    if isinstance(expires, int | float) and expires < time.time():
        return None  # as gradio.oauth: an expired sign-in is signed out
    name = info["userinfo"].get("preferred_username")
    return name if isinstance(name, str) and name else None


Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Scope]], Callable[[Scope], Awaitable[None]]], Awaitable[None]]


class BrowserIdMiddleware:
    """Gives every browser a signed, HttpOnly id cookie; a request without a valid one gets a fresh id.

    The fresh id is also placed on the request itself, so even a first request (or a script that never
    keeps cookies) acts as exactly one identity of its own and never shares another client's memory.
    """

    def __init__(self, app: ASGIApp, identities: IdentityService) -> None:
        self.app = app
        self.identities = identities

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = list(scope.get("headers") or [])
        jar = SimpleCookie()
        for name, value in headers:
            if name == b"cookie":
                with contextlib.suppress(CookieError):  # a malformed header counts as no cookie
                    jar.load(value.decode("latin-1"))
        current = jar.get(COOKIE)
        if current is not None and self.identities.browser_id(current.value):
            token = self.identities.form_token(self.identities.browser_key(current.value))
            known = jar.get(FORM_COOKIE)
            if known is not None and known.value == token:
                await self.app(scope, receive, send)
                return
            # A browser from before the token, or one that lost it: hand it its token, nothing else changes.
            await self.app(scope, receive, _adding(send, [form_cookie_attributes(token, secure=self.identities.secure_cookie)]))
            return
        fresh = self.identities.mint_cookie()
        headers = [(n, v) for n, v in headers if n != b"cookie"]
        others = "; ".join(f"{k}={m.value}" for k, m in jar.items() if k not in (COOKIE, FORM_COOKIE))
        headers.append((b"cookie", f"{COOKIE}={fresh}{'; ' + others if others else ''}".encode("latin-1")))
        scope = dict(scope, headers=headers)
        secure = self.identities.secure_cookie
        cookies = [cookie_attributes(fresh, secure=secure),
                   form_cookie_attributes(self.identities.form_token(self.identities.browser_key(fresh)), secure=secure)]
        await self.app(scope, receive, _adding(send, cookies))


def _adding(send: Any, cookies: list[str]) -> Any:
    """`send`, with a Set-Cookie header for each of `cookies` on the response's start, unless the response sets
    that cookie itself (a sign-in's fresh id and token win over the ones the request came with)."""

    async def send_with_cookies(message: Scope) -> None:
        if message["type"] == "http.response.start":
            named = {v.split(b"=", 1)[0].strip() for n, v in message.get("headers", []) if n.lower() == b"set-cookie"}
            extra = [(b"set-cookie", c.encode()) for c in cookies if c.split("=", 1)[0].encode() not in named]
            message = dict(message, headers=[*message.get("headers", []), *extra])
        await send(message)

    return send_with_cookies
