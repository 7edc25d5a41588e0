"""Answer limits: an anonymous browser id, a signed-in account and a client address each have their own; the
address bounds many anonymous ids from one place, never signed-in people sharing it (a newsroom)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.settings.policies import StoreLimits
from feedback.errors import RateLimited
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore

ADDRESS = "address-hash-of-one-newsroom"


def _answer(store: FeedbackStore, who: str, i: int, *, verified: bool) -> None:
    store.answers.record(AnswerInput(text=f"Story number {i} by {who}", user_label="World", annotator=who, kind="correct",
                 predicted_label="Sports", verified=verified, address=ADDRESS))


def test_signed_in_people_behind_one_address_are_not_capped_by_the_address_limit(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "f.db", StoreLimits(writes_per_minute=5, verified_writes_per_minute=8,
                                                         address_writes_per_minute=4))
    for person in ("hf:ada", "hf:grace"):
        for i in range(8):
            _answer(store, person, i, verified=True)  # 16 answers from one address: none refused
    with pytest.raises(RateLimited, match="at most 8 a minute"):
        _answer(store, "hf:ada", 99, verified=True)  # an account's own limit still holds
    for i in range(4):  # anonymous ids from that address: the address limit counts only theirs
        _answer(store, f"anon:{i}", i, verified=False)
    with pytest.raises(RateLimited, match="from this address"):
        _answer(store, "anon:new", 0, verified=False)
