"""Per-session memory: bounded maps of what each tab was shown, and what an answer to it needs."""

from __future__ import annotations

import hashlib
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from core.settings.policies import SESSION_CAPACITY

V = TypeVar("V")


class BoundedMap(Generic[V]):
    """A thread-safe map that forgets its least recently used keys beyond `capacity` keys or `max_bytes`
    (per-session memory). `weigh(value)` estimates a value's bytes; without it only the count is bounded."""

    def __init__(
        self, capacity: int = SESSION_CAPACITY, max_bytes: int | None = None, weigh: Callable[[V], int] | None = None
    ) -> None:
        self._items: OrderedDict[str, V] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self._lock = threading.Lock()
        self.capacity = capacity
        self.max_bytes = max_bytes
        self._weigh = weigh
        self.nbytes = 0  # the weighed bytes of what is kept

    def put(self, key: str, value: V) -> None:
        size = self._weigh(value) if self._weigh is not None else 0
        with self._lock:
            self.nbytes -= self._sizes.pop(key, 0)
            self._items.pop(key, None)
            if self.max_bytes is not None and size > self.max_bytes:
                return  # larger than the whole budget: not kept (the caller's checks bound values far below it)
            self._items[key] = value
            self._sizes[key] = size
            self.nbytes += size
            while len(self._items) > self.capacity or (self.max_bytes is not None and self.nbytes > self.max_bytes):
                oldest, _ = self._items.popitem(last=False)
                self.nbytes -= self._sizes.pop(oldest)

    def get(self, key: str) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def pop(self, key: str) -> V | None:
        with self._lock:
            self.nbytes -= self._sizes.pop(key, 0)
            return self._items.pop(key, None)

    def __len__(self) -> int:
        return len(self._items)


class SessionMap(Protocol):
    """Per-session memory: `BoundedMap` in this process, or one shared through a database by replicas."""

    def put(self, key: str, value: Any) -> None: ...

    def get(self, key: str) -> Any | None: ...

    def pop(self, key: str) -> Any | None: ...


@dataclass(frozen=True)
class LastPrediction:
    """The prediction a tab shows, with what an answer to it needs and nothing more (memory is bounded in bytes)."""

    id: str  # server-issued, random: the page sends it back with each answer, so an answer names what it saw
    text: str  # the classified text, cut to what the feedback store keeps
    text_digest: str  # of the whole classified text: an answer must come with the box still holding it
    label: str
    probabilities: dict[str, float]
    model_version: str

    @property
    def nbytes(self) -> int:
        """Roughly what this costs in memory: the text, plus the ids, label and probabilities (under 1 KB)."""
        return sys.getsizeof(self.text) + 1024


def text_digest(text: str) -> str:
    """Exact identity of a text as the box held it (not `core.text.text_hash`, which ignores case and spacing)."""
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def queue_item_bytes(item: dict[str, Any]) -> int:
    """Roughly what a remembered queue item ({"id", "text", "shown"}) costs in memory, or a tab's buffer
    ({"held": [items], "done": [[id, label]]}, web.page.labelling.BufferedQueue)."""
    if "held" in item:
        return sum(queue_item_bytes(held) for held in item["held"]) + 96 * len(item.get("done", [])) + 512
    return sys.getsizeof(item.get("text", "")) + 512
