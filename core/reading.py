"""How the model reads a text longer than it can take: the article's head and its tail, the same way in training
(retrain) and in serving (core.serving), so a served prediction reads exactly what training read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Reading:
    """`max_length` tokens at most, the two special tokens ([CLS] ... [SEP]) included; of a longer text, the last
    `tail` body tokens are kept after its first ones. `tail` 0 keeps the head alone (every version exported before
    tails were read)."""

    max_length: int
    tail: int = 0

    def __post_init__(self) -> None:
        if self.max_length < 3:
            raise ValueError(f"max_length must leave room for a token between the special ones, got {self.max_length}")
        if not 0 <= self.tail <= self.max_length - 3:
            raise ValueError(f"tail must lie in 0..{self.max_length - 3} (a head token kept), got {self.tail}")

    def ids(self, ids: Sequence[int]) -> list[int]:
        """The tokens read of `ids`, a whole encoded text with its special tokens at both ends."""
        if len(ids) <= self.max_length:
            return list(ids)
        head = self.max_length - 2 - self.tail
        tail = list(ids[len(ids) - 1 - self.tail: len(ids) - 1]) if self.tail else []
        return [*ids[: 1 + head], *tail, ids[-1]]

    def to_meta(self) -> dict[str, str]:
        """The entries of an exported file's metadata that serving reads back (`from_meta`)."""
        return {"max_length": str(self.max_length), "tail_tokens": str(self.tail)}

    @classmethod
    def from_meta(cls, meta: dict[str, str], default_length: int) -> Reading:
        return cls(int(meta.get("max_length", default_length)), int(meta.get("tail_tokens", 0)))
