"""Fair share of the page's event queue: at most N queued or running events per client address.

Gradio's queue has one global size. Without a share per address, one client joining events fast enough
fills it and everyone else is told "Queue is full". `FairShare` counts, per address, the events it let
in that the queue still holds (queued or running) and refuses a join beyond the limit; a join that is
being answered holds a place too, so concurrent joins cannot slip past the count.
"""

from __future__ import annotations

import time
from collections.abc import Callable


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
        max_age_s: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if limit < 1:
            raise ValueError("limit must be >= 1")
        self.limit = limit
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

    def admit(self, address: str) -> bool:
        """Hold a place for one more event of `address`, or refuse (False) when it has `limit` already."""
        if self.pending(address) >= self.limit:
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
