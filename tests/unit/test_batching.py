from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest

from core.serving.batching import MicroBatcher


def test_concurrent_callers_share_forward_passes_and_get_their_own_answers() -> None:
    calls: list[int] = []

    def predict(texts: Sequence[str]) -> list[str]:
        calls.append(len(texts))
        time.sleep(0.01)  # a model call takes a while, so callers pile up behind it
        return [t.upper() for t in texts]

    batcher = MicroBatcher(predict, max_batch=8, max_wait_s=0.01)
    results: dict[int, str] = {}

    def worker(i: int) -> None:
        results[i] = batcher.predict_many([f"text {i}"])[0]

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
        batcher.predict_many(["x"])
    # The worker survives and keeps serving.
    with pytest.raises(RuntimeError):
        batcher.predict_many(["y"])


def test_a_lone_caller_does_not_wait_for_company_that_is_not_coming() -> None:
    # A single client would otherwise pay the whole wait on every request (REST p50).
    batcher = MicroBatcher(lambda texts: list(texts), max_batch=8, max_wait_s=30.0)
    start = time.monotonic()
    assert [batcher.predict_many([f"t{i}"])[0] for i in range(3)] == ["t0", "t1", "t2"]
    assert time.monotonic() - start < 10.0  # far below one 30 s wait
    assert batcher.batches == 3


def test_concurrent_lists_come_back_in_order_and_share_passes() -> None:
    calls: list[int] = []

    def predict(texts: Sequence[str]) -> list[str]:
        calls.append(len(texts))
        time.sleep(0.01)
        return [t.upper() for t in texts]

    batcher = MicroBatcher(predict, max_batch=8, max_wait_s=0.01)
    results: dict[int, list[str]] = {}

    def worker(i: int) -> None:
        results[i] = batcher.predict_many([f"c{i} t{j}" for j in range(5)])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: [f"C{i} T{j}" for j in range(5)] for i in range(6)}
    assert sum(calls) == 30 and max(calls) <= 8


def test_a_pass_takes_the_oldest_text_and_those_closest_to_it_in_length() -> None:
    from concurrent.futures import Future

    from core.serving.batching import take_similar

    pending = [(text, Future(), i) for i, text in enumerate(["x" * 50, "x" * 5, "x" * 48, "x" * 200, "x" * 52, "x" * 6])]
    batch, rest = take_similar(pending, 3)
    assert [len(t) for t, _, _ in batch] == [50, 48, 52]  # in queue order, the oldest first
    assert [len(t) for t, _, _ in rest] == [5, 200, 6]
    assert take_similar(pending[:2], 3) == (pending[:2], [])
