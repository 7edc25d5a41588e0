"""Per-client sliding-window rate limiting (in memory) and a failure throttle for guesses over any limiter."""

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
    """Throttles guesses: only failures count, per key and from everyone together.

    A key (a client address) that failed `per_key.limit` times in the window is refused until one of its
    failures leaves it. Beyond `everyone.limit` failures in the window from all keys together, every attempt
    is slowed by `slow_s` instead of refused, so a guessing run from many addresses slows everyone down but
    can never lock out someone who knows the password. The limiters may be in memory (`RateLimiter`) or
    shared by replicas through their database (`feedback.shared_state.SharedRateLimiter`).
    """

    EVERYONE = "*"

    def __init__(self, per_key: Limiter | None = None, everyone: Limiter | None = None, slow_s: float = 2.0) -> None:
        self.per_key = per_key or RateLimiter(5, 300.0)
        self.everyone = everyone or RateLimiter(20, self.per_key.window_s)
        self.slow_s = slow_s

    def wait(self, key: str) -> float:
        """Seconds `key` must wait before it may try again (0 = may try now); counts nothing."""
        return self.per_key.peek(key)

    def delay(self) -> float:
        """Seconds every attempt is slowed by now: `slow_s` while everyone's failures are over their limit."""
        return self.slow_s if self.everyone.peek(self.EVERYONE) else 0.0

    def failed(self, key: str) -> None:
        """Count one failed attempt by `key` (beyond a full window a limiter records nothing more: it stays full)."""
        self.per_key.check(key)
        self.everyone.check(self.EVERYONE)
