"""Admin sessions, and the sign-in tickets that move a signing-in browser to a fresh id.

An admin session belongs to one browser id (the signed, HttpOnly cookie of `web.server.identity`). A Gradio event
cannot set a cookie, so a sign-in (or sign-out) hands its tab a ticket, and the tab redeems it at once with a
plain request (POST /admin/session, `web.admin.routes`) that answers with a fresh browser id cookie; the
session is opened for that fresh id only. A browser id planted before the sign-in (a fixation) therefore
never becomes an admin session. Tickets travel only over the tab's own event stream and are stored as hashes.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable
from typing import Protocol

from web.server.session_memory import BoundedMap, SessionMap

TICKET_TTL_S = 120.0


class SignedInBrowsers(Protocol):
    """Where admin sessions live: `AdminSessions` in this process, or a table replicas share."""

    def open(self, browser: str) -> None: ...

    def close(self, browser: str) -> None: ...

    def valid(self, browser: str) -> bool: ...


class AdminSessions:
    """Signed-in admin browsers: a server-side record per browser id (the signed, HttpOnly cookie), with an
    expiry. Nothing the client sends can name a session; an empty or missing browser id never has one."""

    def __init__(self, ttl_s: float, capacity: int = 1000, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self.capacity = capacity
        self._clock = clock
        self._expires: dict[str, float] = {}
        self._lock = threading.Lock()

    def open(self, browser: str) -> None:
        if not browser:
            raise ValueError("an admin session needs a browser id")
        now = self._clock()
        with self._lock:
            self._expires = {b: t for b, t in self._expires.items() if t > now}
            if len(self._expires) >= self.capacity:
                self._expires.pop(min(self._expires, key=self._expires.__getitem__))
            self._expires[browser] = now + self.ttl_s

    def close(self, browser: str) -> None:
        with self._lock:
            self._expires.pop(browser, None)

    def valid(self, browser: str) -> bool:
        with self._lock:
            return bool(browser) and self._expires.get(browser, 0.0) > self._clock()


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


class SignInTickets:
    """Tickets that let one browser trade its id for a fresh one, once, within `ttl_s` (wall clock, so a
    store shared by replicas agrees). `store` is a `SessionMap`: in memory, or `SharedMap` for replicas."""

    def __init__(self, store: SessionMap | None = None, ttl_s: float = TICKET_TTL_S,
                 clock: Callable[[], float] = time.time) -> None:
        self._store: SessionMap = store if store is not None else BoundedMap(capacity=1000)
        self.ttl_s = ttl_s
        self._clock = clock

    def issue(self, browser: str, *, admin: bool) -> str:
        """A ticket for `browser`; redeeming it opens an admin session for the fresh id when `admin`."""
        if not browser:
            raise ValueError("a ticket needs a browser id")
        ticket = secrets.token_urlsafe(32)
        self._store.put(_digest(ticket), {"browser": browser, "admin": admin, "expires": self._clock() + self.ttl_s})
        return ticket

    def redeem(self, ticket: object, browser: str) -> bool | None:
        """Use up `ticket` if `browser` was given it and it has not expired: whether it signs in (True) or
        out (False); None when it is not this browser's (another browser's ticket stays unused)."""
        if not isinstance(ticket, str) or not ticket or len(ticket) > 200 or not browser:
            return None
        key = _digest(ticket)
        found = self._store.get(key)
        if not isinstance(found, dict) or found.get("browser") != browser:
            return None
        if self._store.pop(key) is None or found.get("expires", 0.0) <= self._clock():
            return None  # expired, or redeemed by a concurrent request a moment ago
        return bool(found.get("admin"))
