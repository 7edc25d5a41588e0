"""Scoring the pool in the background: a thread of the serving process that scores, with the champion, every pool
item the champion has not scored yet, so no labeller's request ever waits for it.

It looks every few seconds (and at once when nudged), which covers every way items arrive: `newsloop import` in
another process, the admin upload, a correction added to the pool, a new champion (every item is then scored again,
by it). Items not scored yet are served as they come (`feedback.labelling.pool`), never as "least sure".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

log = logging.getLogger(__name__)

Scorer = Callable[[list[str]], np.ndarray]
# Small batches: each forward pass is short, so the requests served beside it on the same cores wait little.
BATCH = 32
# After each batch the thread rests this many times as long as the batch took: a whole pool scored again after a
# new champion takes at most half the cores' time, and labellers' requests find the cores free half of it.
REST = 1.0


class Rescorable(Protocol):
    """What the thread needs of a store (`feedback.labelling.pool.Pool.rescore`: a store's `pool`)."""

    def rescore(self, scorer: Scorer, model_version: str, *, batch_size: int = ...,
                labels: Sequence[str] | None = ...) -> int: ...


class PoolScoring:
    """Scores unscored pool items with the champion every `interval_s` seconds, on a daemon thread.

    `version()` names the champion now served (None: none yet, nothing is scored); `scorer(texts)` returns its
    probabilities in label order, its labels being `labels()` (None: the taxonomy's keys). A failed round is logged
    and tried again at the next look.
    """

    def __init__(
        self, store: Rescorable, version: Callable[[], str | None], scorer: Scorer, interval_s: float,
        clock: Callable[[], float] = time.perf_counter, labels: Callable[[], Sequence[str]] | None = None,
    ) -> None:
        self._store, self._version, self._interval_s, self._clock = store, version, interval_s, clock
        self._labels = labels
        self._inner = scorer
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def _scorer(self, texts: list[str]) -> np.ndarray:
        """The champion's probabilities for one batch, then a rest as long as REST times the batch took (cut short
        when the thread is stopped)."""
        started = self._clock()
        probabilities = self._inner(texts)
        self._stopped.wait(REST * max(self._clock() - started, 0.0))
        return probabilities

    def run_once(self) -> int:
        """Score what the champion has not scored; how many items were scored."""
        version = self._version()
        if version is None:
            return 0
        try:
            # Read with the version: a champion swapped mid-round has another version, so the next round scores
            # every item again with its own labels.
            labels = tuple(self._labels()) if self._labels is not None else None
            return self._store.rescore(self._scorer, version, batch_size=BATCH, labels=labels)
        except Exception:  # a store or model hiccup: the next look tries again
            log.exception("scoring the pool with model %s failed; trying again in %.0f s", version, self._interval_s)
            return 0

    def nudge(self) -> None:
        """Look now rather than at the next interval (items were just added)."""
        self._wake.set()

    def start(self) -> None:
        """Start the thread (once): it looks at once, then every interval."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name="pool-scoring", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the thread after the batch it is scoring."""
        self._stopped.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _loop(self) -> None:
        while not self._stopped.is_set():
            self.run_once()
            self._wake.wait(self._interval_s)
            self._wake.clear()
