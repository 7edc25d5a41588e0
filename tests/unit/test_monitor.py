"""Watching served traffic: the alert rule and the drift (core.evaluation.monitor), the served tallies kept in the
feedback store on both backends (feedback.traffic.served), a server's tallies written as it serves (ServedTallies), and
the day-by-day report of estimated beside measured accuracy (feedback.monitoring)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa

from core.evaluation.estimate import Tally
from core.evaluation.monitor import Baseline, alert_lines, check_traffic, distance, wilson_interval
from core.labels import LABELS
from core.settings.policies import MonitorPolicy, TrustPolicy
from feedback.database.db import parse_iso_time
from feedback.database.tables import pool
from feedback.labelling.answers import AnswerInput
from feedback.monitoring import traffic_report
from feedback.store import FeedbackStore
from feedback.traffic.served import TallyKey, read_tallies, save_tallies, utc_day
from testkit.pg_cluster import StoreFactory
from web.server.tallies import ServedTallies

POLICY = MonitorPolicy(alert_points=3.0, min_texts=100, window_days=2)
BASELINE = Baseline(accuracy={"title": 0.87, "full": 0.93}, confidence_counts={"title": [0] * 7 + [10, 30, 60]},
                    label_shares=(0.25, 0.25, 0.25, 0.25), form_mix={"full": 0.6, "title": 0.3, "body": 0.1})


def _sure(n: int, confidence: float, label: int = 0) -> np.ndarray:
    """n probability rows, each giving `label` `confidence` and the rest the others evenly."""
    rows = np.full((n, len(LABELS)), (1 - confidence) / (len(LABELS) - 1))
    rows[:, label] = confidence
    return rows


def test_an_estimate_more_than_the_margin_below_validation_raises_the_alert() -> None:
    check = check_traffic({"title": Tally().add(_sure(100, 0.80)), "full": Tally().add(_sure(500, 0.92))},
                          BASELINE, POLICY)
    assert [c.form for c in check.alerts] == ["title"]
    assert check.forms["title"].drop_points == pytest.approx(7.0)
    [line] = alert_lines(check)
    assert "headline" in line and "80.0%" in line and "7.0 points below" in line and "87.0%" in line


@pytest.mark.parametrize(("n", "confidence"), [(99, 0.80), (400, 0.845), (400, 0.95)])
def test_no_alert_on_too_few_texts_or_a_drop_within_the_margin(n: int, confidence: float) -> None:
    check = check_traffic({"title": Tally().add(_sure(n, confidence))}, BASELINE, POLICY)
    assert check.alerts == [] and alert_lines(check) == []


def test_a_form_the_version_has_no_validation_for_never_alerts() -> None:
    check = check_traffic({"body": Tally().add(_sure(1000, 0.3))}, BASELINE, POLICY)
    assert check.alerts == [] and check.forms["body"].validation is None


def test_drift_is_zero_for_the_same_mix_and_grows_as_the_mix_moves() -> None:
    assert distance([1, 2, 3], [10, 20, 30]) == pytest.approx(0.0, abs=1e-9)
    assert distance([1, 0], [0, 1]) == pytest.approx(1.0)
    assert distance([1, 2], []) is None
    like_training = check_traffic({"full": Tally().add(_sure(600, 0.9)), "title": Tally().add(_sure(300, 0.9)),
                                   "body": Tally().add(_sure(100, 0.9))}, BASELINE, POLICY)
    headlines_only = check_traffic({"title": Tally().add(_sure(1000, 0.9))}, BASELINE, POLICY)
    assert like_training.form_mix_drift == pytest.approx(0.0, abs=1e-9)
    assert headlines_only.form_mix == {"title": 1.0, "body": 0.0, "full": 0.0}
    assert headlines_only.form_mix_drift is not None and headlines_only.form_mix_drift > 0.5
    # Every text predicted World against the base data's even labels; confidences far below validation's.
    assert headlines_only.label_shares == [1.0, 0.0, 0.0, 0.0]
    assert headlines_only.label_drift is not None and headlines_only.label_drift > 0.5
    low = check_traffic({"title": Tally().add(_sure(200, 0.45))}, BASELINE, POLICY).forms["title"].confidence_drift
    high = check_traffic({"title": Tally().add(_sure(200, 0.95))}, BASELINE, POLICY).forms["title"].confidence_drift
    assert low is not None and high is not None and low > high


def test_wilson_interval_matches_the_textbook_values() -> None:
    low, high = wilson_interval(8, 10)
    assert (round(low, 3), round(high, 3)) == (0.490, 0.943)
    assert wilson_interval(0, 5)[0] == 0.0 and wilson_interval(5, 5)[1] == 1.0
    assert all(math.isnan(v) for v in wilson_interval(0, 0))


def test_a_baseline_reads_validation_by_form_as_served_else_by_true_form_else_whole_articles() -> None:
    served = {"validation_read_as": {"title": {"n": 9, "accuracy": 0.8, "confidence_counts": [1] * 10}},
              "validation_by_form": {"title": {"accuracy": 0.7}}}
    assert Baseline.from_meta(served).accuracy == {"title": 0.8}
    assert Baseline.from_meta(served).confidence_counts == {"title": [1] * 10}
    assert Baseline.from_meta({"validation_by_form": {"title": {"accuracy": 0.7}}}).accuracy == {"title": 0.7}
    old = {"validation": {"int8": {"accuracy": 0.9}, "confusion_matrix": [[3, 1], [0, 4]]}, "rows_by_form": {"full": 5}}
    assert Baseline.from_meta(old).accuracy == {"full": 0.9}
    assert Baseline.from_meta(old).label_shares == (0.5, 0.5) and Baseline.from_meta(old).form_mix == {"full": 1.0}


def test_served_tallies_sum_over_writers_and_a_rewrite_replaces_its_own_row(make_store: StoreFactory,
                                                                            tmp_path: Path) -> None:
    store = make_store(tmp_path / "feedback.db")
    today, key, old_key = utc_day(), TallyKey(utc_day(), "title", "v2"), TallyKey("2020-01-01", "title", "v2")
    first, second = Tally().add(_sure(3, 0.9)), Tally().add(_sure(5, 0.6))
    save_tallies(store.database, "a", {key: first, old_key: first})
    save_tallies(store.database, "a", {key: first + first})  # the same writer's running tally, grown
    save_tallies(store.database, "b", {key: second, TallyKey(today, "title", "v1"): second})
    got = read_tallies(store.database, since_day=today, model_version="v2")
    assert set(got) == {key}
    assert got[key].n == 11
    assert got[key].estimate().accuracy == pytest.approx((6 * 0.9 + 5 * 0.6) / 11)
    assert got[key].confidence_counts == (first + first + second).confidence_counts
    assert set(read_tallies(store.database)) == {key, old_key, TallyKey(today, "title", "v1")}


@dataclass
class _Served:
    form: str
    probabilities: dict[str, float]
    model_version: str


def _predictions(n: int, confidence: float, form: str = "title", version: str = "v1") -> list[_Served]:
    return [_Served(form, dict(zip(LABELS, row, strict=True)), version) for row in _sure(n, confidence)]


def test_a_server_writes_its_tallies_every_few_seconds_and_counts_only_the_champion(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "feedback.db")
    now = [1_800_000_000.0]
    tallies = ServedTallies(lambda writer, t: save_tallies(store.database, writer, t), save_s=10.0,
                            clock=lambda: now[0])
    tallies.observe(_predictions(4, 0.9), "v1")
    tallies.observe(_predictions(2, 0.5, version="v0"), "v1")  # the model being replaced: not counted
    assert read_tallies(store.database) == {}  # nothing written before save_s has passed
    now[0] += 11
    tallies.observe(_predictions(1, 0.7, form="full"), "v1")
    day = utc_day(now[0])
    got = read_tallies(store.database)
    assert {k: t.n for k, t in got.items()} == {TallyKey(day, "title", "v1"): 4, TallyKey(day, "full", "v1"): 1}
    tallies.observe(_predictions(3, 0.6, version="v2"), "v2")  # a new champion: the gauges start over, the days keep v1's
    assert {form: e.n for form, e in tallies.estimates("v2").items()} == {"headline": 3}
    tallies.flush()
    assert read_tallies(store.database, model_version="v1")[TallyKey(day, "title", "v1")].n == 4
    assert read_tallies(store.database, model_version="v2")[TallyKey(day, "title", "v2")].n == 3


def test_a_failing_write_never_fails_a_classification(tmp_path: Path) -> None:
    def broken(writer: str, tallies: object) -> None:
        raise OSError("disk gone")

    tallies = ServedTallies(broken, save_s=0.0)
    tallies.observe(_predictions(2, 0.9), "v1")  # writes at once, fails, is logged
    assert tallies.estimates("v1")["headline"].n == 2


def test_the_report_puts_the_traffic_sets_measured_accuracy_beside_the_estimate(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "feedback.db")
    texts = [f"Headline number {i} about markets" for i in range(10)]
    store.pool.add(texts, source="test")
    with store.database.write() as conn:  # the traffic set: drawn at random in service, all of them here
        conn.execute(pool.update().values(traffic=1))
    with store.database.read() as conn:
        items = dict(conn.execute(sa.select(pool.c.text, pool.c.id)).all())
    for i, text in enumerate(texts):  # the champion predicted World on each; 7 of 10 truly are
        store.answers.record(AnswerInput(text=text, user_label="World" if i < 7 else "Sports", predicted_label="World",
                     model_version="v1", annotator="user:ann", verified=True, kind="queue", item_id=items[text]))
    now = parse_iso_time(store.answers.rows()[0]["created_at"])  # the answers' day is the tallies' day
    save_tallies(store.database, "a", {TallyKey(utc_day(now), "title", "v1"): Tally().add(_sure(150, 0.75))})
    meta = {"validation_read_as": {"title": {"n": 500, "accuracy": 0.87, "confidence_counts": [0] * 10}}}
    report = traffic_report(store, "v1", meta, POLICY, TrustPolicy(), now=now)
    [point] = report.points
    assert (point.day, point.form, point.n, point.labelled) == (utc_day(now), "title", 150, 10)
    assert point.estimated == pytest.approx(0.75) and point.measured == pytest.approx(0.7)
    assert (round(point.measured_low, 3), round(point.measured_high, 3)) == (0.397, 0.892)
    assert point.error_points == pytest.approx(5.0)
    assert [c.form for c in report.check.alerts] == ["title"]
    assert report.to_dict()["alerts"] == ["title"]
    # Another version's traffic is not this one's; a day outside the window does not raise the alert.
    assert traffic_report(store, "v2", meta, POLICY, TrustPolicy(), now=now).points == []
    later = traffic_report(store, "v1", meta, POLICY, TrustPolicy(), now=now + 3 * 86_400)
    assert later.points and later.check.alerts == []
