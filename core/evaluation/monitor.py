"""Is the champion slipping on what people send? The alert and the drift, from served traffic's tallies. Pure.

Served traffic is kept as `core.evaluation.estimate.Tally` rows, one per day, input form and model version; this
module reads the window of the champion's days against what its validation said (`Baseline`, from the version's
meta) and says, per form (core.input_forms, the form as serving reads it):
- the estimated accuracy (from calibrated confidences) beside the validation accuracy of that form, and an
  alert when it is more than `MonitorPolicy.alert_points` below it on at least `min_texts` texts;
- drift, as the Jensen-Shannon distance (base 2: 0 same, 1 disjoint) of three distributions against the model's
  own: the mix of input forms (against the mix it was trained on), the predicted labels (against the labels of
  its validation rows, the base data's), and each form's top-probability histogram (against validation's).
Drift is shown, never alerted on by itself: a shift of topics or forms is only a problem when it costs accuracy,
which the estimate says.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.evaluation.estimate import Tally
from core.input_forms import FORM_NAMES
from core.settings.policies import MonitorPolicy

FORMS = ("full", "title", "body")  # InputForm values (core.input_forms.FORM_NAMES), in the order shown


@dataclass(frozen=True)
class Baseline:
    """What a model version's validation said: accuracy and top-probability histogram per form, the share of
    each label among validation rows, and the share of each form among training rows (any may be unknown)."""

    accuracy: Mapping[str, float] = field(default_factory=dict)
    confidence_counts: Mapping[str, Sequence[int]] = field(default_factory=dict)
    label_shares: Sequence[float] = ()
    form_mix: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> Baseline:
        """From a version's meta: its validation texts grouped by the form serving reads them as
        (`validation_read_as`, written by retrain.export.calibration.calibrate); a version exported before that has its
        accuracy per true form (a starter's `validation_by_form`) or on whole articles only, and no histogram."""
        read_as = meta.get("validation_read_as") or {}
        by_form = meta.get("validation_by_form") or {}
        accuracy = ({form: float(v["accuracy"]) for form, v in read_as.items()}
                    or {form: float(v["accuracy"]) for form, v in by_form.items() if "accuracy" in v})
        if not accuracy and "accuracy" in (meta.get("validation", {}).get("int8") or {}):
            accuracy = {"full": float(meta["validation"]["int8"]["accuracy"])}
        matrix = np.asarray(meta.get("validation", {}).get("confusion_matrix") or [], dtype=np.float64)
        rows_by_form = {str(k): float(v) for k, v in (meta.get("rows_by_form") or {}).items()}
        return cls(
            accuracy=accuracy,
            confidence_counts={str(k): [int(x) for x in v["confidence_counts"]] for k, v in read_as.items()},
            label_shares=tuple(_shares(matrix.sum(axis=1))) if matrix.size else (),
            form_mix=dict(zip(rows_by_form, _shares(list(rows_by_form.values())), strict=True)),
        )


@dataclass(frozen=True)
class FormCheck:
    """One input form over the window."""

    form: str
    n: int
    estimated: float
    estimated_se: float
    validation: float | None  # the form's validation accuracy, if the version has one
    confidence_drift: float | None  # Jensen-Shannon distance of the top-probability histograms
    alert: bool

    @property
    def drop_points(self) -> float | None:
        return None if self.validation is None else (self.validation - self.estimated) * 100


@dataclass(frozen=True)
class TrafficCheck:
    """The window's verdict: each form, and the drift of the whole window."""

    days: int
    forms: Mapping[str, FormCheck]
    form_mix: Mapping[str, float]
    form_mix_drift: float | None
    label_shares: Sequence[float]
    label_drift: float | None
    policy: MonitorPolicy

    @property
    def alerts(self) -> list[FormCheck]:
        return [check for check in self.forms.values() if check.alert]

    @property
    def texts(self) -> int:
        return sum(check.n for check in self.forms.values())


def _shares(counts: Sequence[float] | np.ndarray) -> list[float]:
    total = float(np.sum(counts))
    return [float(c) / total for c in counts] if total > 0 else []


def distance(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray) -> float | None:
    """Jensen-Shannon distance (base 2) of two distributions given as counts or shares; None when either is empty
    or they differ in length."""
    from scipy.spatial.distance import jensenshannon  # here: the admin view's first read, not the app's start

    p_arr, q_arr = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    if len(p_arr) != len(q_arr) or not len(p_arr) or p_arr.sum() <= 0 or q_arr.sum() <= 0:
        return None
    return float(jensenshannon(p_arr / p_arr.sum(), q_arr / q_arr.sum(), base=2))


def check_traffic(tallies: Mapping[str, Tally], baseline: Baseline, policy: MonitorPolicy) -> TrafficCheck:
    """The alert and the drift for one version's tallies over the window, by form (InputForm values)."""
    forms: dict[str, FormCheck] = {}
    for form in FORMS:
        tally = tallies.get(form)
        if tally is None or not tally.n:
            continue
        estimate = tally.estimate([str(i) for i in range(len(tally.confusion))])
        validation = baseline.accuracy.get(form)
        alert = (validation is not None and tally.n >= policy.min_texts
                 and (validation - estimate.accuracy) * 100 > policy.alert_points)
        forms[form] = FormCheck(form, tally.n, estimate.accuracy, estimate.accuracy_se, validation,
                                distance(tally.confidence_counts, baseline.confidence_counts.get(form, ())), alert)
    total = sum(check.n for check in forms.values())
    mix = {form: forms[form].n / total if form in forms else 0.0 for form in FORMS} if total else {}
    trained_mix = [baseline.form_mix.get(form, 0.0) for form in FORMS]
    predicted = np.sum([tallies[form].predicted_counts for form in forms if tallies[form].confusion], axis=0) \
        if forms else np.zeros(0)
    return TrafficCheck(
        days=policy.window_days, forms=forms, form_mix=mix,
        form_mix_drift=distance(list(mix.values()), trained_mix) if mix and baseline.form_mix else None,
        label_shares=_shares(predicted) if len(predicted) else [],
        label_drift=distance(predicted, baseline.label_shares) if len(predicted) else None,
        policy=policy,
    )


def alert_lines(check: TrafficCheck) -> list[str]:
    """The alert in words, one line per form that raised it (none: no alert). The one phrasing the admin view
    and `status` show."""
    window = "today" if check.days == 1 else f"the last {check.days} days"
    return [
        f"Estimated accuracy on {FORM_NAMES[c.form]} texts is {c.estimated:.1%} over {window} ({c.n:,} texts), "
        f"{c.drop_points:.1f} points below its validation accuracy {c.validation:.1%} "
        f"(the alert is at {check.policy.alert_points:g} points: NEWSLOOP_MONITOR_ALERT_POINTS)."
        for c in check.alerts if c.validation is not None and c.drop_points is not None
    ]


def wilson_interval(correct: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of an accuracy measured as `correct` of `n` (scipy's); (nan, nan) for n=0.
    Unlike the normal approximation it stays inside [0, 1] and is honest for a handful of labels."""
    if n <= 0:
        return math.nan, math.nan
    from scipy.stats import binomtest  # here: the admin view's first read, not the app's start

    interval = binomtest(correct, n).proportion_ci(confidence, method="wilson")
    return float(interval.low), float(interval.high)
