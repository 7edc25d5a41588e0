"""The champion's served predictions, tallied by the form each text reads as: the estimates /metrics shows, and the
day tallies written to the feedback store (feedback.traffic.served) that the admin view, `status` and `watch` read.

Apart from web.server.metrics, which only reads the estimates at scrape: keeping the tallies (folding rows, writing a
process's share to the store) is persistence, not the Prometheus interface.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from core.data import InputForm
from core.evaluation.estimate import Estimate, Tally
from core.input_forms import FORM_NAMES
from feedback.traffic.served import TallyKey, utc_day

log = logging.getLogger(__name__)


class ServedTallies:
    """The champion's served predictions, tallied (core.evaluation.estimate.Tally) by the form each text reads as:
    since the champion started serving here (the /metrics gauges), and per UTC day and model version, written to
    the feedback store (feedback.traffic.served) at most every `save_s` seconds, which the admin view, `status` and `watch`
    read. Only the serving champion's predictions count.

    A prediction only appends its row (a list append); rows are folded into tallies every FOLD_ROWS rows or when
    read or saved, so a request never pays for the arithmetic (~50 us a call), and at most one request in
    `save_s` seconds pays for one write of this process's few rows (failures are logged, never raised)."""

    FOLD_ROWS = 512

    def __init__(self, save: Callable[[str, dict[TallyKey, Tally]], None] | None = None, *, save_s: float = 10.0,
                 clock: Callable[[], float] = time.time) -> None:
        self._save, self._save_s, self._clock = save, save_s, clock
        self._writer = uuid.uuid4().hex  # this process's rows of the store's tallies (feedback.traffic.served)
        self._lock, self._save_lock = threading.Lock(), threading.Lock()
        self._version: str | None = None
        self._gauge: dict[str, Tally] = {}
        self._days: dict[TallyKey, Tally] = {}
        self._pending: dict[TallyKey, list[list[float]]] = {}
        self._pending_rows = 0
        self._saved_at = clock()

    def observe(self, predictions: Sequence[Any], champion: str | None) -> None:
        """Served predictions, each with the form its text reads as (core.serving.classifier.Prediction.form)."""
        if champion is None:
            return
        day = utc_day(self._clock())
        rows = [(TallyKey(day, InputForm(prediction.form).value, champion), _in_label_order(prediction.probabilities))
                for prediction in predictions
                # a prediction of the model being replaced is not the champion's traffic
                if prediction.model_version == champion]
        if not rows:
            return
        with self._lock:
            if self._version != champion:
                self._fold()
                self._version, self._gauge = champion, {}
            for key, row in rows:
                self._pending.setdefault(key, []).append(row)
            self._pending_rows += len(rows)
            if self._pending_rows >= self.FOLD_ROWS:
                self._fold()
        if self._save is not None and self._clock() - self._saved_at >= self._save_s:
            self.flush(wait=False)

    def estimates(self, champion: str | None) -> dict[str, Estimate]:
        """Each form's estimate for `champion` since it started serving here (none for another model), by the
        form's name (core.input_forms.FORM_NAMES)."""
        with self._lock:
            if champion is None or self._version != champion:
                return {}
            self._fold()
            tallies = dict(self._gauge)
        # Only the accuracy is shown: a tally's columns are the model's own topics, named nowhere here.
        return {FORM_NAMES[form]: tally.estimate([str(i) for i in range(len(tally.confusion))])
                for form, tally in tallies.items()}

    def flush(self, *, wait: bool = True) -> None:
        """Write this process's day tallies to the store now (`wait=False`: unless another thread is writing)."""
        if self._save is None or not self._save_lock.acquire(blocking=wait):
            return
        try:
            with self._lock:
                self._fold()
                snapshot = dict(self._days)
                self._saved_at = self._clock()
                # Days before yesterday are written for the last time: nothing served now can count for them.
                oldest = utc_day(self._clock() - 86_400.0)
                self._days = {key: tally for key, tally in self._days.items() if key.day >= oldest}
            try:
                self._save(self._writer, snapshot)
            except Exception:  # a database hiccup must not fail a classification; the next write repeats it
                log.exception("cannot write the served tallies")
        finally:
            self._save_lock.release()

    def _fold(self) -> None:
        for key, rows in self._pending.items():
            added = Tally().add(np.asarray(rows), len(rows[0]))
            self._days[key] = self._days.get(key, Tally()) + added
            if key.model_version == self._version:
                self._gauge[key.form] = self._gauge.get(key.form, Tally()) + added
        self._pending, self._pending_rows = {}, 0


def _in_label_order(probabilities: dict[str, float]) -> list[float]:
    # The model's own topics, in its output order: the same for all of one model version's rows, whatever the
    # taxonomy says (tallies are kept per model version).
    return list(probabilities.values())
