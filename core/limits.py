"""Per-client sliding-window rate limiting, in memory."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable


class RateLimiter:
    """Allow at most `limit` events per `window_s` seconds for each key."""

    def __init__(self, limit: int, window_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        if limit < 1 or window_s <= 0:
            raise ValueError("limit must be >= 1 and window_s > 0")
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._events: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def check(self, key: str) -> float:
        """Record an event for `key` and return 0, or refuse it and return the seconds to wait."""
        now = self._clock()
        with self._lock:
            events = self._events.setdefault(key, deque())
            while events and events[0] <= now - self.window_s:
                events.popleft()
            if len(events) >= self.limit:
                return max(0.001, events[0] + self.window_s - now)
            events.append(now)
            if len(self._events) > 100_000:  # bound memory against many one-off clients
                self._events = {k: v for k, v in self._events.items() if v and v[-1] > now - self.window_s}
            return 0.0
