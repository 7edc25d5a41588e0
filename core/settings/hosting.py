"""The hosting section of the settings: who may do what on a public host (identities, admins, proxies)."""

from __future__ import annotations

import os

from pydantic import SecretStr, model_validator

from core.settings.fields import Section, setting

MIN_PUBLIC_PASSWORD = 16  # characters an admin password needs on a public host, so guessing it is hopeless


def on_public_host() -> bool:
    """Whether this process runs on a Hugging Face Space (which sets SPACE_ID), reachable by anyone."""
    return bool(os.environ.get("SPACE_ID"))


def _split(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


class HostingSection(Section):
    """Identity, admin and proxy settings."""

    admin_password: SecretStr | None = setting(
        None, description="Password of the admin view; on a public host at least 16 characters. Unset = none."
    )
    admins: str = setting("", description="Comma-separated Hugging Face usernames that are admins when signed in (Space).")
    admin_session_minutes: float = setting(
        60.0, gt=0.0, le=7 * 24 * 60, description="An admin sign-in expires after this."
    )
    users: SecretStr | None = setting(
        None, description="'name:password,...': the whole page asks to sign in (verified identities)."
    )
    secret_key: SecretStr | None = setting(None, description="Signs browser ids; empty = a random key kept in home.")
    trusted_proxy_hops: int = setting(
        0, ge=0, le=5, on_space=1, description="Proxies in front of the app whose X-Forwarded-For entries are believed."
    )
    public_urls: str = setting(
        "", description="Comma-separated URLs people open the app at (e.g. https://news.example.org); pages of "
        "any other origin may not act on it. The host a request names and a Space's own host always count.",
    )
    proxy_addresses: str = setting(
        "127.0.0.1,::1", on_space="*",
        description="Comma-separated IPs/networks the proxies connect from; '*' (any) only on a Space.",
    )

    @model_validator(mode="after")
    def _headers_only_from_proxies(self) -> HostingSection:
        # '*' believes X-Forwarded-For from any peer: safe only where nothing but the host's proxy can
        # connect (a Space). Elsewhere a client could write the header itself and pick its own address.
        if self.trusted_proxy_hops and "*" in self.proxy_address_list and not on_public_host():
            raise ValueError(
                "NEWSLOOP_PROXY_ADDRESSES='*' would believe a header any client can write; "
                "list the addresses your proxy connects from"
            )
        if self.trusted_proxy_hops and not self.proxy_address_list:
            raise ValueError("NEWSLOOP_TRUSTED_PROXY_HOPS is set but NEWSLOOP_PROXY_ADDRESSES is empty")
        return self

    @model_validator(mode="after")
    def _strong_admin_password_in_public(self) -> HostingSection:
        # Anyone can try passwords on a public host; the sign-in throttle slows guessing but never refuses the
        # right password, so the password itself must be too long to guess.
        password = self.admin_password.get_secret_value() if self.admin_password is not None else ""
        if password and len(password) < MIN_PUBLIC_PASSWORD and on_public_host():
            raise ValueError(
                f"NEWSLOOP_ADMIN_PASSWORD has {len(password)} characters; on a public host (a Space) it needs at "
                f"least {MIN_PUBLIC_PASSWORD}: use a long passphrase, or sign admins in with NEWSLOOP_ADMINS"
            )
        return self

    @property
    def proxy_address_list(self) -> tuple[str, ...]:
        return _split(self.proxy_addresses)

    @property
    def public_url_list(self) -> tuple[str, ...]:
        return _split(self.public_urls)

    @property
    def space_host(self) -> str:
        """The Space's public host name (SPACE_HOST, set by Hugging Face on a Space), or ""."""
        return os.environ.get("SPACE_HOST", "").strip() if on_public_host() else ""

    @property
    def admin_list(self) -> frozenset[str]:
        return frozenset(_split(self.admins))

    @property
    def on_space(self) -> bool:
        return on_public_host()

    @property
    def hf_sign_in(self) -> bool:
        """Hugging Face sign-in is available: a Space with `hf_oauth: true` sets OAUTH_CLIENT_ID."""
        return on_public_host() and bool(os.environ.get("OAUTH_CLIENT_ID"))

    @property
    def admin_enabled(self) -> bool:
        return (self.admin_password is not None and bool(self.admin_password.get_secret_value())) or bool(
            self.admin_list
        )
