"""Per-client sliding-window rate limiting and a failure throttle for guesses, in memory."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol


def wait_for_room(times: Sequence[float], limit: int, window_s: float, now: float, cost: int = 1) -> float:
    """Seconds until `cost` more events fit beside `times` (those in the window, oldest first); 0 = now."""
    if len(times) + cost <= limit:
        return 0.0
    if cost > limit:
        return window_s
    # The oldest events must leave the window until `cost` more fit.
    return max(0.001, times[len(times) + cost - limit - 1] + window_s - now)


class Limiter(Protocol):
    """What the page needs from a rate limiter: `RateLimiter` in memory, or one shared through a database."""

    limit: int
    window_s: float

    def check(self, key: str, cost: int = 1) -> float: ...

    def peek(self, key: str) -> float: ...


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

    def peek(self, key: str) -> float:
        """Seconds until `key` may have another event (0 = now), without recording one."""
        now = self._clock()
        with self._lock:
            events = [t for t in self._events.get(key, ()) if t > now - self.window_s]
            return wait_for_room(events, self.limit, self.window_s, now)

    def check(self, key: str, cost: int = 1) -> float:
        """Record `cost` events for `key` and return 0, or refuse them all and return the seconds to wait."""
        now = self._clock()
        with self._lock:
            events = self._events.setdefault(key, deque())
            while events and events[0] <= now - self.window_s:
                events.popleft()
            wait = wait_for_room(events, self.limit, self.window_s, now, cost)
            if wait:
                return wait
            events.extend([now] * cost)
            if len(self._events) > 100_000:  # bound memory against many one-off clients
                self._events = {k: v for k, v in self._events.items() if v and v[-1] > now - self.window_s}
            return 0.0


class FailureThrottle:
    """Throttles guesses: only failures count, per key and globally.

    A key (a client address) may fail `per_key` times per `window_s`. Beyond `global_limit` failures in
    the window from everyone together, every key waits `base_backoff_s`, doubling with each further
    failure (up to the window), so guessing from many addresses is slowed as well.
    """

    def __init__(
        self,
        per_key: int = 5,
        window_s: float = 300.0,
        global_limit: int = 20,
        base_backoff_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._per_key = RateLimiter(per_key, window_s, clock)
        self._window_s = window_s
        self._global_limit = global_limit
        self._base_backoff_s = base_backoff_s
        self._clock = clock
        self._failures: deque[float] = deque()
        self._lock = threading.Lock()

    def wait(self, key: str) -> float:
        """Seconds `key` must wait before its next attempt (0 = may try now); does not count anything."""
        now = self._clock()
        with self._lock:
            while self._failures and self._failures[0] <= now - self._window_s:
                self._failures.popleft()
            excess = len(self._failures) - self._global_limit
            global_wait = 0.0
            if excess >= 0:
                backoff = min(self._window_s, self._base_backoff_s * 2 ** min(excess, 30))
                global_wait = max(0.0, self._failures[-1] + backoff - now)
        return max(global_wait, self._per_key.peek(key))

    def failed(self, key: str) -> None:
        """Count one failed attempt by `key`."""
        with self._lock:
            self._failures.append(self._clock())
        self._per_key.check(key)
