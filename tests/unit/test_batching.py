from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest

from core.batching import MicroBatcher


def test_concurrent_callers_share_forward_passes_and_get_their_own_answers() -> None:
    calls: list[int] = []

    def predict(texts: Sequence[str]) -> list[str]:
        calls.append(len(texts))
        time.sleep(0.01)  # a model call takes a while, so callers pile up behind it
        return [t.upper() for t in texts]

    batcher = MicroBatcher(predict, max_batch=8, max_wait_s=0.01)
    results: dict[int, str] = {}

    def worker(i: int) -> None:
        results[i] = batcher.predict_one(f"text {i}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: f"TEXT {i}" for i in range(32)}
    assert sum(calls) == 32 and max(calls) <= 8
    assert len(calls) < 32  # some callers shared a pass


def test_a_failing_model_call_reaches_every_waiting_caller() -> None:
    def predict(texts: Sequence[str]) -> list[str]:
        raise RuntimeError("model exploded")

    batcher = MicroBatcher(predict, max_batch=4, max_wait_s=0.001)
    with pytest.raises(RuntimeError, match="exploded"):
        batcher.predict_one("x")
    # The worker survives and keeps serving.
    with pytest.raises(RuntimeError):
        batcher.predict_one("y")
