"""The settings that decide who may do what on a public host: identities, admins, proxies, what trains.

`core.settings.config.Settings` extends this class; it is split out only to keep each file to one concern.
"""

from __future__ import annotations

import os

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from core.settings.policies import TRAIN_ON

MIN_PUBLIC_PASSWORD = 16  # characters an admin password needs on a public host, so guessing it is hopeless


def on_public_host() -> bool:
    """Whether this process runs on a Hugging Face Space (which sets SPACE_ID), reachable by anyone."""
    return bool(os.environ.get("SPACE_ID"))


class HostingSettings(BaseSettings):
    """Identity, admin and proxy settings. Environment variable = `NEWSLOOP_` + upper-case field name."""

    model_config = SettingsConfigDict(env_prefix="NEWSLOOP_", extra="ignore", frozen=True)

    admin_password: SecretStr | None = None
    admins: str = Field("", description="Comma-separated Hugging Face usernames that are admins when signed in (Space).")
    admin_session_minutes: float = Field(60.0, gt=0.0, le=7 * 24 * 60, description="An admin sign-in expires after this.")
    users: SecretStr | None = Field(None, description="'name:password,...': the whole page asks to sign in (verified identities).")
    secret_key: SecretStr | None = Field(None, description="Signs browser ids; empty = a random key kept in home.")
    train_on: str = Field(
        default_factory=lambda: "signed_in" if on_public_host() else "anyone",
        description="Whose answers may train: signed_in | checked | anyone.",
    )
    trusted_proxy_hops: int = Field(
        default_factory=lambda: 1 if on_public_host() else 0, ge=0, le=5,
        description="Proxies in front of the app whose X-Forwarded-For entries are believed.",
    )
    public_urls: str = Field(
        "", description="Comma-separated URLs people open the app at (e.g. https://news.example.org); pages of "
        "any other origin may not act on it. The host a request names and a Space's own host always count.",
    )
    proxy_addresses: str = Field(
        default_factory=lambda: "*" if on_public_host() else "127.0.0.1,::1",
        description="Comma-separated IPs/networks the proxies connect from; '*' (any) only on a Space.",
    )

    @field_validator("train_on")
    @classmethod
    def _train_on(cls, value: str) -> str:
        if value not in TRAIN_ON:
            raise ValueError(f"must be one of {', '.join(TRAIN_ON)}")
        return value

    @model_validator(mode="after")
    def _headers_only_from_proxies(self) -> HostingSettings:
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
    def _strong_admin_password_in_public(self) -> HostingSettings:
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
        return tuple(part.strip() for part in self.proxy_addresses.split(",") if part.strip())

    @property
    def public_url_list(self) -> tuple[str, ...]:
        return tuple(part.strip() for part in self.public_urls.split(",") if part.strip())

    @property
    def space_host(self) -> str:
        """The Space's public host name (SPACE_HOST, set by Hugging Face on a Space), or ""."""
        return os.environ.get("SPACE_HOST", "").strip() if on_public_host() else ""

    @property
    def admin_list(self) -> frozenset[str]:
        return frozenset(part.strip() for part in self.admins.split(",") if part.strip())

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
