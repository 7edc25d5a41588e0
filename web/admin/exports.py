"""Exported feedback files, each downloadable once, by the admin browser that asked for it."""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

EXPORT_TTL_S = 600.0


@dataclass(frozen=True)
class Offer:
    path: Path
    filename: str
    browser: str
    expires: float


class ExportDownloads:
    """Exported files, each downloadable once by the browser that asked for it, within `ttl_s`.

    Files live in `directory` (emptied when this starts); a file is deleted once sent (by the route) or when
    its offer expires, whichever comes first. Offers are in this process: the download must reach the
    replica that wrote the file (the load balancer's stickiness, which Gradio's queue needs anyway).
    """

    def __init__(self, directory: Path | None = None, ttl_s: float = EXPORT_TTL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.directory = directory or Path(tempfile.mkdtemp(prefix="newsloop-exports-"))
        self.directory.mkdir(parents=True, exist_ok=True)
        for leftover in self.directory.iterdir():  # files offered by a process that has since stopped
            with contextlib.suppress(OSError):
                leftover.unlink()
        self.ttl_s = ttl_s
        self._clock = clock
        self._offers: dict[str, Offer] = {}
        self._taken: set[str] = set()
        self._lock = threading.Lock()

    def new_file(self, suffix: str) -> Path:
        """An empty file to export into."""
        handle, name = tempfile.mkstemp(prefix="feedback-", suffix=suffix, dir=self.directory)
        os.close(handle)
        return Path(name)

    def offer(self, path: Path, filename: str, browser: str) -> str:
        """A one-time token for `path`, for `browser` only; the file is removed when the token expires."""
        token = secrets.token_urlsafe(24)
        with self._lock:
            self._sweep()
            self._offers[token] = Offer(path, filename, browser, self._clock() + self.ttl_s)
        timer = threading.Timer(self.ttl_s + 1.0, self._expire, args=(token,))
        timer.daemon = True
        timer.start()
        return token

    def take(self, token: str, browser: str) -> Offer | None:
        """The offer behind `token` if it is `browser`'s, unused and unexpired, now used up. The caller sends
        the file and deletes it; should the sending fail, the file still goes when the offer expires."""
        with self._lock:
            self._sweep()
            offer = self._offers.get(token)
            if offer is None or token in self._taken or not browser or offer.browser != browser:
                return None
            self._taken.add(token)
            return offer

    def __len__(self) -> int:
        """Offers not yet used nor expired."""
        with self._lock:
            self._sweep()
            return len(self._offers) - len(self._taken)

    def _expire(self, _token: str) -> None:
        with self._lock:
            self._sweep()

    def _sweep(self) -> None:
        now = self._clock()
        for token in [t for t, o in self._offers.items() if o.expires <= now]:
            self._taken.discard(token)
            with contextlib.suppress(OSError):
                self._offers.pop(token).path.unlink()
