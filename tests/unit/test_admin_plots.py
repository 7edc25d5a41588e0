"""The admin view's version plot cannot mislead: served and refused versions drawn apart, an axis at least ten
points wide, every evaluation set side by side, the gate's significance written under it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from matplotlib.colors import to_rgba

from core.evaluation.decision import GateResult, Rule, RuleResult, SetScores
from core.registry.stages import RunRecord
from core.registry.versions import ModelRegistry
from web.admin.plots import MIN_SPAN, axis_range, significance_note, version_scores, versions_figure


def _registry(root: Path) -> ModelRegistry:
    accuracy = {"v0001": 0.9322, "v0002": 0.9316, "v0003": 0.9340}
    for version, value in accuracy.items():
        folder = root / "versions" / version
        folder.mkdir(parents=True)
        meta = {"serve_file": "model.int8.onnx", "validation": {"n": 1636, "int8": {"accuracy": value}}}
        (folder / "meta.json").write_text(json.dumps(meta))
    record = {"champion": "v0003", "history": ["v0001"], "events": [
        {"action": "promote", "version": "v0001"}, {"action": "refused", "version": "v0002", "reasons": ["x"]},
        {"action": "promote", "version": "v0003"}]}
    (root / "registry.json").write_text(json.dumps(record))
    return ModelRegistry(root)


def _run() -> RunRecord:
    sets = (SetScores("base_validation", 1636, 0.8, 0.93, 0.934, 0.9322, 0.9340),
            SetScores("feedback_holdout", 40, 0.1, 0.70, 0.85, 0.70, 0.85),
            SetScores("traffic", 60, 0.1, 0.80, 0.82, 0.80, 0.8167))
    gain = RuleResult(Rule.GAIN, True, p_value=0.012, threshold=0.05)
    gate = GateResult(True, (gain,), sets, champion_score=0.90, challenger_score=0.912, p_value=0.012)
    return RunRecord(decision="promoted", champion_before="v0001", challenger="v0003", champion_after="v0003",
                     gate=gate)


def test_versions_are_told_apart_and_scored_on_every_set(tmp_path: Path) -> None:
    points = version_scores(_registry(tmp_path), _run())
    by = {p.version: p for p in points}
    assert [p.version for p in points] == ["v0001", "v0002", "v0003"]
    assert by["v0001"].served and by["v0003"].served and not by["v0002"].served and by["v0002"].refused
    assert by["v0002"].accuracy == {"base_validation": 0.9316}  # a refused version keeps its own base score
    assert by["v0003"].accuracy == {"base_validation": 0.9340, "feedback_holdout": 0.85, "traffic": 0.8167}
    assert by["v0001"].accuracy["feedback_holdout"] == 0.70 and by["v0001"].rows["traffic"] == 60
    note = significance_note(_run())
    assert note == "v0003 vs v0001: macro-F1 +1.20 pt, p = 0.012 (needs < 0.05): promoted"


def test_the_axis_shows_the_size_of_a_real_change() -> None:
    lo, hi = axis_range([0.9322, 0.9316])
    assert hi - lo >= MIN_SPAN and lo <= 0.9316 and hi >= 0.9322  # a 0.06-point dip is not a cliff
    assert axis_range([0.99, 1.0])[1] == 1.0 and axis_range([0.0, 0.01])[0] == 0.0
    assert axis_range([0.2, 0.9]) == pytest.approx((0.19, 0.91))


def test_refused_versions_are_hollow_and_off_the_served_line(tmp_path: Path) -> None:
    points = version_scores(_registry(tmp_path), _run())
    fig = versions_figure(points, significance_note(_run()))
    ax = fig.axes[0]
    markers = [line for line in ax.get_lines() if line.get_marker() == "o" and len(line.get_xdata()) == 1]
    hollow = [line for line in markers if to_rgba(line.get_markerfacecolor()) == to_rgba("white")]
    assert [round(float(line.get_xdata()[0])) for line in hollow] == [1]  # v0002, the refused one
    served_line = next(line for line in ax.get_lines() if line.get_marker() in ("None", "") and len(line.get_xdata()) > 1)
    assert [round(float(x)) for x in served_line.get_xdata()] == [0, 2]  # it skips v0002
    assert "refused" in ax.get_xticklabels()[1].get_text()
    assert any("p = 0.012" in text.get_text() for text in fig.texts)
    assert ax.get_ylim()[1] - ax.get_ylim()[0] >= MIN_SPAN


def test_the_traffic_plot_has_a_panel_per_served_form_with_estimate_measured_validation_and_the_alert() -> None:
    from core.evaluation.estimate import Tally
    from core.evaluation.monitor import Baseline, check_traffic
    from core.settings.policies import MonitorPolicy
    from feedback.monitoring import DayPoint
    from web.admin.plots import traffic_figure

    policy = MonitorPolicy(min_texts=10)
    unsure = Tally().add([[0.6, 0.2, 0.1, 0.1]] * 20)
    check = check_traffic({"title": unsure, "full": Tally().add([[0.95, 0.02, 0.02, 0.01]] * 20)},
                          Baseline(accuracy={"title": 0.87, "full": 0.93}), policy)
    points = [DayPoint("2026-12-01", "title", 20, 0.6, 0.1, 10, 0.5, 0.24, 0.76),
              DayPoint("2026-12-02", "title", 20, 0.6, 0.1),
              DayPoint("2026-12-02", "full", 20, 0.95, 0.05)]
    fig = traffic_figure(points, check)
    panels = {ax.get_title(): ax for ax in fig.axes}
    assert set(panels) == {"headline · ALERT", "full"}  # the forms served, the alerting one named
    headline = panels["headline · ALERT"]
    assert to_rgba(headline.title.get_color()) == to_rgba("#b91c1c")
    assert [t.get_text() for t in headline.get_xticklabels()] == ["12-01", "12-02"]
    flat = {line.get_linestyle(): round(float(line.get_ydata()[0]), 6) for line in headline.get_lines()
            if line.get_linestyle() in ("--", ":")}
    assert flat == {"--": 0.87, ":": 0.84}  # the validation accuracy, the alert's line
    names = {text.get_text() for legend in fig.legends for text in legend.get_texts()}
    assert {"estimated from confidences, 95%", "measured on traffic labels, 95%", "validation", "alert below"} <= names
    low, high = headline.get_ylim()
    assert low <= 0.5 and high >= 0.87 and high - low >= MIN_SPAN  # every point and the validation line in view


def test_answers_per_day_starts_at_zero_when_empty_and_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    """Issue 59: the empty chart had a -0.04..0.04 axis, and each admin load logged matplotlib's "Using categorical
    units" twice (days as strings that read as dates)."""
    from web.admin.plots import per_day_figure

    with caplog.at_level("INFO"):
        empty = per_day_figure({})
        full = per_day_figure({"2026-12-01": 3, "2026-12-02": 5})
    assert empty.axes[0].get_ylim() == (0.0, 1.0) and "No answers yet" in [t.get_text() for t in empty.axes[0].texts]
    assert [t.get_text() for t in full.axes[0].get_xticklabels()] == ["2026-12-01", "2026-12-02"]
    assert not [r for r in caplog.records if r.name.startswith("matplotlib")]
