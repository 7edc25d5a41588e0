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


class MicroBatcher(Generic[T]):
    """Collects texts from concurrent callers for up to `max_wait_s`, then predicts them together."""

    def __init__(
        self, predict: Callable[[Sequence[str]], list[T]], *, max_batch: int = 16, max_wait_s: float = 0.004
    ) -> None:
        if max_batch < 1 or max_wait_s < 0:
            raise ValueError("max_batch must be >= 1 and max_wait_s >= 0")
        self._predict = predict
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self._pending: list[tuple[str, Future[T]]] = []
        self._cond = threading.Condition()
        self._worker = threading.Thread(target=self._run, name="micro-batcher", daemon=True)
        self._worker.start()
        self.batches = 0  # forward passes run, for tests and benchmarks

    def predict_one(self, text: str) -> T:
        future: Future[T] = Future()
        with self._cond:
            self._pending.append((text, future))
            self._cond.notify()
        return future.result()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending:
                    self._cond.wait()
                # The first caller waits at most max_wait_s for company; a full batch goes at once.
                self._cond.wait_for(lambda: len(self._pending) >= self.max_batch, timeout=self.max_wait_s)
                batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch :]
            try:
                results = self._predict([text for text, _ in batch])
            except BaseException as exc:
                for _, future in batch:
                    future.set_exception(exc)
                continue
            self.batches += 1
            for (_, future), result in zip(batch, results, strict=True):
                future.set_result(result)
