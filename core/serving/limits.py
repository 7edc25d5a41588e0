"""Per-client sliding-window rate limiting over a store of events (in memory here; a database in `feedback`), and
a failure throttle for guesses over any limiter."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol


def wait_for_room(times: Sequence[float], limit: int, window_s: float, now: float, cost: int = 1) -> float:
    """Seconds until `cost` more events fit beside `times` (those in the window, oldest first); 0 = now."""
    if len(times) + cost <= limit:
        return 0.0
    if cost > limit:
        return window_s
    # The oldest events must leave the window until `cost` more fit.
    return max(0.001, times[len(times) + cost - limit - 1] + window_s - now)


class Window(Protocol):
    """One key's events, as a store keeps them (for the duration of one check or peek)."""

    def times(self, since: float) -> Sequence[float]:
        """The key's events after `since`, oldest first."""
        ...

    def record(self, at: float, cost: int) -> None:
        """Add `cost` events at `at`."""
        ...

    def forget(self, before: float) -> None:
        """Drop the key's events at or before `before` (they no longer count)."""
        ...


class WindowStore(Protocol):
    """Where a `RateLimiter` keeps its events: in memory (`MemoryWindows`) or in a database
    (`feedback.database.shared_state.DatabaseWindows`, shared by replicas)."""

    def locked(self, key: str) -> contextlib.AbstractContextManager[Window]:
        """`key`'s events, with no other check on `key` running until the block ends (read, decide, record)."""
        ...

    def viewed(self, key: str) -> contextlib.AbstractContextManager[Window]:
        """`key`'s events, to read only."""
        ...


class Limiter(Protocol):
    """What the page needs from a rate limiter (`RateLimiter`, over either store)."""

    limit: int
    window_s: float

    def check(self, key: str, cost: int = 1) -> float: ...

    def peek(self, key: str) -> float: ...


class _MemoryWindow:
    def __init__(self, events: deque[float], store: MemoryWindows | None = None) -> None:
        self._events, self._store = events, store

    def times(self, since: float) -> Sequence[float]:
        return [t for t in self._events if t > since]

    def record(self, at: float, cost: int) -> None:
        self._events.extend([at] * cost)

    def forget(self, before: float) -> None:
        while self._events and self._events[0] <= before:
            self._events.popleft()
        if self._store is not None:
            self._store.horizon = before


class MemoryWindows:
    """Events per key in this process's memory, bounded against many one-off clients."""

    MAX_KEYS = 100_000

    def __init__(self) -> None:
        self._events: dict[str, deque[float]] = {}
        self._lock = threading.Lock()
        self.horizon = float("-inf")  # the newest `forget` time: events at or before it count nowhere

    @contextlib.contextmanager
    def locked(self, key: str) -> Iterator[Window]:
        with self._lock:
            yield _MemoryWindow(self._events.setdefault(key, deque()), self)
            if len(self._events) > self.MAX_KEYS:  # keep only keys with an event that still counts
                self._events = {k: v for k, v in self._events.items() if v and v[-1] > self.horizon}

    @contextlib.contextmanager
    def viewed(self, key: str) -> Iterator[Window]:
        with self._lock:
            yield _MemoryWindow(deque(self._events.get(key, ())))


class RateLimiter:
    """Allow at most `limit` events per `window_s` seconds for each key: one sliding-window rule, whichever
    store keeps the events (this process's memory by default)."""

    def __init__(self, limit: int, window_s: float, clock: Callable[[], float] = time.monotonic,
                 store: WindowStore | None = None) -> None:
        if limit < 1 or window_s <= 0:
            raise ValueError("limit must be >= 1 and window_s > 0")
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._store: WindowStore = store or MemoryWindows()

    def peek(self, key: str) -> float:
        """Seconds until `key` may have another event (0 = now), without recording one."""
        now = self._clock()
        with self._store.viewed(key) as window:
            return wait_for_room(window.times(now - self.window_s), self.limit, self.window_s, now)

    def check(self, key: str, cost: int = 1) -> float:
        """Record `cost` events for `key` and return 0, or refuse them all and return the seconds to wait."""
        with self._store.locked(key) as window:
            return self.admit(window, self._clock(), cost)

    def admit(self, window: Window, now: float, cost: int = 1) -> float:
        """`check` on a window the caller holds locked (e.g. inside its own write transaction, so the check
        and what it guards commit together)."""
        wait = wait_for_room(window.times(now - self.window_s), self.limit, self.window_s, now, cost)
        if wait:
            return wait
        window.record(now, cost)
        window.forget(now - self.window_s)
        return 0.0


class FailureThrottle:
    """Throttles guesses: only failures count, per key and from everyone together.

    A key (a client address) that failed `per_key.limit` times in the window is refused until one of its
    failures leaves it. Beyond `everyone.limit` failures in the window from all keys together, every attempt
    is slowed by `slow_s` instead of refused, so a guessing run from many addresses slows everyone down but
    can never lock out someone who knows the password. The limiters are `RateLimiter`s, in memory or shared by
    replicas through their database (`feedback.database.shared_state.SharedRateLimiter`).
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
