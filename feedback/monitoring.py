"""The champion on its traffic, day by day: the estimate from served tallies beside the traffic set's measured
accuracy, and the window's alert and drift (core.evaluation.monitor). What the admin view plots, `status` prints
and `watch` may retrain on, read in one place.

Measured: a trusted label on a traffic-set item (feedback.traffic.traffic_set: a random sample of what was served, never
trained on) against the label the champion predicted when the item was shown, counted on the day of the item's
first answer and under the form its text reads as (core.input_forms).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from core.evaluation.estimate import Tally
from core.evaluation.monitor import Baseline, TrafficCheck, check_traffic, wilson_interval
from core.input_forms import guess_form
from core.settings.policies import MonitorPolicy, TrustPolicy
from feedback.meaning import agrees
from feedback.store import FeedbackStore
from feedback.traffic.served import read_tallies, utc_day
from feedback.training.snapshot import traffic_hashes
from feedback.trust.rules import select_trusted

DAY_S = 86_400.0


@dataclass(frozen=True)
class DayPoint:
    """One day and input form of the champion's traffic: estimated (with its standard error) and, where traffic
    labels exist, measured (with a 95% Wilson interval)."""

    day: str
    form: str
    n: int
    estimated: float
    estimated_se: float
    labelled: int = 0
    measured: float = math.nan
    measured_low: float = math.nan
    measured_high: float = math.nan

    @property
    def error_points(self) -> float | None:
        """Estimated minus measured, in points, where both exist."""
        return (self.estimated - self.measured) * 100 if self.labelled else None


@dataclass(frozen=True)
class TrafficReport:
    version: str | None
    points: list[DayPoint]
    check: TrafficCheck

    def to_dict(self) -> dict[str, Any]:
        """What `status` prints: the window's check and every day's point."""
        check = self.check
        return {
            "version": self.version, "window_days": check.days, "alerts": [c.form for c in check.alerts],
            "forms": {form: asdict(c) for form, c in check.forms.items()},
            "form_mix": dict(check.form_mix), "form_mix_drift": check.form_mix_drift,
            "label_shares": list(check.label_shares), "label_drift": check.label_drift,
            "days": [asdict(p) | {"error_points": p.error_points} for p in self.points],
        }


def measured_traffic(store: FeedbackStore, trust: TrustPolicy, version: str) -> dict[tuple[str, str], tuple[int, int]]:
    """(right, labelled) per (day, form) of `version`'s predictions on traffic-set items with a trusted label."""
    traffic = traffic_hashes(store)
    if not traffic:
        return {}
    rows = store.answers.rows()
    trusted = select_trusted(rows, store.pool.gold_labels(), trust)
    truth = {t.text_hash: t.label for t in trusted if t.text_hash in traffic}
    counts: dict[tuple[str, str], list[int]] = {}
    seen: set[str] = set()
    for row in sorted(rows, key=lambda r: r["id"]):  # the first answer on an item dates it
        digest = row["text_hash"]
        if digest not in truth or digest in seen or row.get("model_version") != version or not row.get("predicted_label"):
            continue
        seen.add(digest)
        cell = counts.setdefault((str(row["created_at"])[:10], guess_form(row["text"]).value), [0, 0])
        cell[0] += int(agrees(row["predicted_label"], truth[digest]))  # labels as they mean now
        cell[1] += 1
    return {key: (right, n) for key, (right, n) in counts.items()}


def traffic_report(store: FeedbackStore, version: str | None, meta: Mapping[str, Any], policy: MonitorPolicy,
                   trust: TrustPolicy, *, days: int = 30, now: float | None = None) -> TrafficReport:
    """`version`'s last `days` days of traffic, and the check of its last `policy.window_days`."""
    now = time.time() if now is None else now
    baseline = Baseline.from_meta(meta)
    if version is None:
        return TrafficReport(None, [], check_traffic({}, baseline, policy))
    tallies = read_tallies(store.database, utc_day(now - (days - 1) * DAY_S), version)
    measured = measured_traffic(store, trust, version)
    points = []
    for key in sorted(tallies, key=lambda k: (k.day, k.form)):
        estimate = tallies[key].estimate([str(i) for i in range(len(tallies[key].confusion))])
        right, labelled = measured.get((key.day, key.form), (0, 0))
        low, high = wilson_interval(right, labelled)
        points.append(DayPoint(key.day, key.form, estimate.n, estimate.accuracy, estimate.accuracy_se, labelled,
                               right / labelled if labelled else math.nan, low, high))
    window_start = utc_day(now - (policy.window_days - 1) * DAY_S)
    window: dict[str, Tally] = {}
    for key, tally in tallies.items():
        if key.day >= window_start:
            window[key.form] = window.get(key.form, Tally()) + tally
    return TrafficReport(version, points, check_traffic(window, baseline, policy))

