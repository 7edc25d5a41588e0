"""Request batching: concurrent callers share one forward pass.

Gradio's own `batch=True` hands a batched function only the first caller's request, which would
break per-client rate limits and feedback attribution; batching below the handler keeps each
request's identity and still runs one model call for everyone waiting.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Generic, TypeVar

T = TypeVar("T")


def take_similar(pending: list[tuple[str, Future[T], int]], size: int) -> tuple[list, list]:
    """The next pass: the oldest text and the `size - 1` others closest to it in length, in queue order.

    A pass pads every text to its longest, so when more is queued than one pass takes, texts of a similar
    length go together; anchoring on the oldest text means none waits behind a stream of others.
    """
    if len(pending) <= size:
        return pending, []
    anchor = len(pending[0][0])
    chosen = set(sorted(range(len(pending)), key=lambda i: (abs(len(pending[i][0]) - anchor), i))[:size])
    return [p for i, p in enumerate(pending) if i in chosen], [p for i, p in enumerate(pending) if i not in chosen]


class MicroBatcher(Generic[T]):
    """Collects texts from concurrent callers for up to `max_wait_s`, then predicts them together."""

    def __init__(
        self, predict: Callable[[Sequence[str]], list[T]], *, max_batch: int, max_wait_s: float
    ) -> None:
        if max_batch < 1 or max_wait_s < 0:
            raise ValueError("max_batch must be >= 1 and max_wait_s >= 0")
        self._predict = predict
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self._pending: list[tuple[str, Future[T], int]] = []  # text, its answer, the call it came from
        self._calls = 0
        self._cond = threading.Condition()
        self._concurrent = False  # whether the last pass served several calls or had texts queued behind it
        self._worker = threading.Thread(target=self._run, name="micro-batcher", daemon=True)
        self._worker.start()
        self.batches = 0  # forward passes run, for tests and benchmarks

    def predict_many(self, texts: Sequence[str]) -> list[T]:
        """One caller's texts, answered in order. They join the queue like single texts, so concurrent lists
        share passes too, and the model runs one pass at a time instead of many competing for the cores."""
        futures: list[Future[T]] = [Future() for _ in texts]
        with self._cond:
            self._calls += 1
            self._pending.extend((text, future, self._calls) for text, future in zip(texts, futures, strict=True))
            self._cond.notify()
        return [future.result() for future in futures]

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending:
                    self._cond.wait()
                # Under concurrent load (the last pass was shared) the first caller waits at most max_wait_s for
                # company, and a full batch goes at once. A lone caller goes at once: waiting for company that
                # is not coming would add the whole wait to every request of a single client.
                if self._concurrent:
                    self._cond.wait_for(lambda: len(self._pending) >= self.max_batch, timeout=self.max_wait_s)
                batch, self._pending = take_similar(self._pending, self.max_batch)
                self._concurrent = len({call for _, _, call in batch}) > 1 or bool(self._pending)
            try:
                results = self._predict([text for text, _, _ in batch])
            except BaseException as exc:
                for _, future, _ in batch:
                    future.set_exception(exc)
                continue
            self.batches += 1
            for (_, future, _), result in zip(batch, results, strict=True):
                future.set_result(result)
