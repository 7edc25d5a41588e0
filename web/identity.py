"""Who is asking: a pseudonymous client id, the session key, the address to rate limit, and per-session memory."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass

import gradio as gr


@dataclass
class LastPrediction:
    text: str
    label: str
    probabilities: dict[str, float]
    model_version: str


class SessionMemory:
    """The last prediction each session saw, so feedback refers to what the user was shown."""

    def __init__(self, capacity: int = 10_000) -> None:
        self._items: OrderedDict[str, LastPrediction] = OrderedDict()
        self._lock = threading.Lock()
        self.capacity = capacity

    def put(self, key: str, value: LastPrediction) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def get(self, key: str) -> LastPrediction | None:
        with self._lock:
            return self._items.get(key)


def client_id(request: gr.Request | None) -> str:
    """A pseudonymous id: the signed-in user's name if the host provides one, else the browser session."""
    if request is None:
        return "anonymous"
    if getattr(request, "username", None):
        return f"user:{request.username}"
    session = getattr(request, "session_hash", None) or "none"
    return "session:" + hashlib.sha256(session.encode()).hexdigest()[:16]


def session_key(request: gr.Request | None) -> str:
    """Key of the per-session memory (last prediction, current queue item)."""
    return getattr(request, "session_hash", None) or client_id(request)


def client_address(request: gr.Request | None, trusted_proxy_hops: int = 0) -> str:
    """Who to rate limit: the user if signed in, else a hash of the client's address.

    Behind `trusted_proxy_hops` proxies, each appends the address it saw to X-Forwarded-For; only those
    entries, counted from the right, are believed, since anything to their left is written by the client.
    """
    if request is None:
        return "anonymous"
    if getattr(request, "username", None):
        return f"user:{request.username}"
    headers = getattr(request, "headers", None) or {}
    raw = headers.get("x-forwarded-for", "") if hasattr(headers, "get") else ""
    forwarded = [part.strip() for part in raw.split(",") if part.strip()]
    if trusted_proxy_hops and forwarded:
        address = forwarded[-min(trusted_proxy_hops, len(forwarded))]
    else:
        address = getattr(getattr(request, "client", None), "host", "") or ""
    return "addr:" + hashlib.sha256(address.encode()).hexdigest()[:16]
