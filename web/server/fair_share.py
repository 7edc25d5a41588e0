"""Fair share of the page's event queue: at most N queued or running events per client address.

Gradio's queue has one global size. Without a share per address, one client joining events fast enough
fills it and everyone else is told "Queue is full". `FairShare` counts, per address, the events it let
in that the queue still holds (queued or running) and refuses a join beyond the limit; a join that is
being answered holds a place too, so concurrent joins cannot slip past the count.

The queue is first come, first served, so a visitor waits behind every event the queue holds. When many
addresses have events waiting, each one's share shrinks so that all of them together hold at most `budget`
(never below `floor` each): twenty addresses joining at once cannot put 300 events before a visitor's one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from core.serving.limits import RateLimiter
from web.server.session_memory import BoundedMap


class FairShare:
    """Admission per client address. Used from the server's event loop only (no locks needed).

    `is_live(event_id)` tells whether the queue still holds an event; an event is also forgotten after
    `max_age_s` whatever it says, so a queue that never reports an event finished cannot lock an address out.
    """

    def __init__(
        self,
        limit: int,
        is_live: Callable[[str], bool],
        *,
        budget: int = 48,
        floor: int = 2,
        max_age_s: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if limit < 1:
            raise ValueError("limit must be >= 1")
        self.limit = limit
        self.budget = max(budget, limit)
        self.floor = min(floor, limit)
        self._is_live = is_live
        self._max_age_s = max_age_s
        self._clock = clock
        self._events: dict[str, dict[str, float]] = {}  # address -> event id -> when it joined
        self._joining: dict[str, int] = {}  # address -> joins let in and not answered yet

    def pending(self, address: str) -> int:
        """Events of `address` queued or running now, joins being answered included."""
        events = self._events.get(address)
        if events:
            oldest = self._clock() - self._max_age_s
            for event_id in [e for e, at in events.items() if at < oldest or not self._is_live(e)]:
                del events[event_id]
            if not events:
                del self._events[address]
        return len(self._events.get(address, ())) + self._joining.get(address, 0)

    def share(self, address: str) -> int:
        """How many events `address` may have pending now: `limit`, or its part of `budget` when many
        addresses have events pending (at least `floor`)."""
        active = len(set(self._events) | set(self._joining) | {address})
        return max(self.floor, min(self.limit, self.budget // active))

    def admit(self, address: str) -> bool:
        """Hold a place for one more event of `address`, or refuse (False) when it has its share already."""
        if self.pending(address) >= self.share(address):
            return False
        self._joining[address] = self._joining.get(address, 0) + 1
        if len(self._events) > 10_000:  # many one-off addresses: forget those with nothing pending
            for other in list(self._events):
                self.pending(other)
        return True

    def joined(self, address: str, event_id: str | None) -> None:
        """The join `admit` let in was answered: with the queue's event id, or None when it was refused."""
        left = self._joining.get(address, 1) - 1
        if left > 0:
            self._joining[address] = left
        else:
            self._joining.pop(address, None)
        if event_id:
            self._events.setdefault(address, {})[event_id] = self._clock()


class NewSessions:
    """Admission of page sessions the server has not seen: Gradio builds a session's state (a copy of every
    component's config, about 25 ms on 2 cores for this page) on the event loop when a session's first event
    joins, so a crowd joining with fresh session hashes would stall every other request. A new session is
    let in only while its address has opened fewer than `per_address` in the last minute (and a quarter of
    `per_second` in the last second) and everyone together fewer than `per_second` in the last second; a
    session seen once joins freely after that.

    When everyone's second is full, a new session waits in line for a place instead of being refused: one per
    address (its others are refused), `line` at most (by default four seconds' worth; beyond it: refused), let in
    first come, first served as the seconds allow. So addresses opening sessions as fast as they may cannot refuse
    a newcomer (the admin opening the page during a storm of guesses): it waits behind at most one session of each
    address in line, `line / per_second` seconds at most. `line=0`: no line (refused at once).
    Used from the server's event loop only."""

    def __init__(self, per_address: int, per_second: int, *, capacity: int = 4096, line: int | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self._per_address = RateLimiter(per_address, 60.0, clock)
        # One address may take at most a quarter of everyone's second, so one flooder leaves room for newcomers.
        self._address_second = RateLimiter(max(1, per_second // 4), 1.0, clock)
        self._everyone = RateLimiter(per_second, 1.0, clock)
        self._seen: BoundedMap[bool] = BoundedMap(capacity)  # the least recently seen forgotten first
        self._line = 4 * per_second if line is None else line
        self._waiting: set[str] = set()  # addresses with a session in line
        self._turn: asyncio.Lock | None = None  # made in the event loop that uses it
        self._sleep = sleep

    def refuses(self, session: str, address: str) -> str | None:
        """What `admit` would refuse at once ("address", "everyone"), or None; records nothing (a cheap look before
        costlier checks)."""
        if self._seen.get(session):
            return None
        if self._per_address.peek(address) or self._address_second.peek(address) or address in self._waiting:
            return "address"
        return "everyone" if len(self._waiting) >= self._line and self._everyone.peek("*") else None

    async def admit(self, session: str, address: str) -> str | None:
        """None when `session` may join (it is remembered as seen), after waiting its turn if everyone's second is
        full; else why not: "address" (its minute or second is full, or it has a session in line already) or
        "everyone" (the line is full)."""
        if self._seen.get(session):
            return None
        if why := self.refuses(session, address):
            return why
        self._waiting.add(address)
        try:
            self._turn = self._turn or asyncio.Lock()
            async with self._turn:  # first come, first served: asyncio's lock wakes its waiters in order
                while wait := self._everyone.check("*"):
                    await self._sleep(wait)
        finally:
            self._waiting.discard(address)
        self._per_address.check(address)
        self._address_second.check(address)
        self._seen.put(session, True)
        return None


class DataBudget:
    """Event data per client address: each address may send `per_minute` bytes a minute (a bucket that holds a
    minute's worth and refills evenly), so the cost of reading and parsing event bodies is counted per address and
    one address sending large ones as fast as it can is refused for a moment, whatever each one is for.
    Used from the server's event loop only."""

    def __init__(self, per_minute: int, *, capacity: int = 4096, clock: Callable[[], float] = time.monotonic) -> None:
        if per_minute < 1:
            raise ValueError("per_minute must be >= 1")
        self.per_minute = per_minute
        self._clock = clock
        self._buckets: BoundedMap[tuple[float, float]] = BoundedMap(capacity)  # address -> (bytes left, when)

    def spend(self, address: str, size: int) -> float:
        """Take `size` bytes from `address`'s budget and return 0, or take nothing and return the seconds until it
        holds that much (a body larger than a minute's worth waits a full minute)."""
        now, rate = self._clock(), self.per_minute / 60.0
        left, then = self._buckets.get(address) or (float(self.per_minute), now)
        left = min(float(self.per_minute), left + (now - then) * rate)
        if size <= left:
            self._buckets.put(address, (left - size, now))
            return 0.0
        self._buckets.put(address, (left, now))
        return min(60.0, (size - left) / rate)
