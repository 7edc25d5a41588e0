"""The admin view's decision, progress and preview, rendered from the typed records: every rule's refusal and a
promotion are rendered, and every number on the page is checked against the record it came from."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from core.evaluation.decision import FeedbackParts, GateResult, Rule, RuleResult, p_text, pct, points
from core.evaluation.paired import power_of
from core.labels import LABELS
from core.registry.stages import Outcome, Progress, RowCounts, RunRecord, Stage, read_last_run, state_payload
from core.registry.versions import write_json_atomic
from core.settings.policies import GateConfig
from core.storage.paths import HomePaths
from core.topic_maps import NewTopicScore
from feedback.training.readiness import Evidence
from retrain.gate.rules import EvalSet, decide
from web.admin import report
from web.admin.decision_words import decision_text, statistics_fold
from web.admin.jobs import JobStatus, RetrainJobs
from web.admin.report import served_accuracy

ROWS = RowCounts(base_train=3000, feedback_train=14, feedback_holdout=5, traffic=0, base_validation=1600)


def truth(per_class: int) -> np.ndarray:
    return np.repeat(np.arange(4), per_class)


def wrong_at(y: np.ndarray, positions: list[int]) -> np.ndarray:
    pred = y.copy()
    pred[positions] = (pred[positions] + 1) % 4
    return pred


def gate_for(case: str) -> GateResult:
    """A real gate result in which `case` names the rule that fails (or "promote")."""
    y = truth(400)
    better = wrong_at(y, [i * 400 + k for i in range(4) for k in range(20)])  # a champion the challenger beats
    if case == "promote":
        return decide([EvalSet("base_validation", y, better, y.copy())], GateConfig())
    if case == "margin":
        return decide([EvalSet("base_validation", y, better, y.copy())], GateConfig(margin=0.2))
    if case == "gain":
        return decide([EvalSet("base_validation", y, wrong_at(y, [0, 400, 800]), wrong_at(y, [1]))],
                      GateConfig(margin=0.0))
    if case == "discordant":
        return decide([EvalSet("base_validation", y, y.copy(), y.copy())], GateConfig(margin=0.0))
    if case == "label_recall":
        champion = wrong_at(y, [i * 400 + k for i in range(3) for k in range(40)])
        return decide([EvalSet("base_validation", y, champion, wrong_at(y, list(range(1200, 1207))))], GateConfig())
    if case == "base_accuracy":
        y = truth(500)
        users = truth(25)
        holdout = EvalSet("feedback_holdout", users, wrong_at(users, list(range(40))), users.copy())
        lost = [(k % 4) * 500 + k for k in range(13)]
        # Base mode: fewer own articles than decide (GateConfig.own_rows).
        return decide([EvalSet("base_validation", y, y.copy(), wrong_at(y, lost)), holdout], GateConfig(own_rows=1000))
    if case == "new_topic":  # a topic the champion lacks, with too few held-out answers to judge
        few = NewTopicScore("Health", "Health", 8, found=6, predicted=7, right=6)
        return decide([EvalSet("base_validation", y, better, y.copy())], GateConfig(), LABELS, [few])
    if case == "own_gain":  # the newsroom's own articles decide: the new model is right on one fewer of them
        own = truth(30)
        golden = EvalSet("golden", own, own.copy(), wrong_at(own, [5]))
        return decide([EvalSet("base_validation", y, y.copy(), y.copy()), golden], GateConfig())
    if case == "own_not_worse":  # one more right of 100, too few to rule out a 2-point loss
        own = truth(25)
        golden = EvalSet("golden", own, wrong_at(own, [0, 30, 60]), wrong_at(own, [1, 31]))
        return decide([EvalSet("base_validation", y, y.copy(), y.copy()), golden], GateConfig())
    if case == "topic_not_worse":  # better overall, but it lost ten of one topic's articles
        own = truth(50)
        golden = EvalSet("golden", own, wrong_at(own, list(range(50, 62))), wrong_at(own, list(range(10))))
        return decide([EvalSet("base_validation", y, y.copy(), y.copy()), golden], GateConfig())
    if case == "forgetting":  # better on its own articles, but a base topic read 10 points worse
        own = truth(50)
        golden = EvalSet("golden", own, wrong_at(own, list(range(0, 200, 10))), own.copy())
        return decide([EvalSet("base_validation", y, y.copy(), wrong_at(y, list(range(40)))), golden], GateConfig())
    if case == "not_worse":
        users = truth(50)
        traffic = EvalSet("traffic", users, users.copy(), wrong_at(users, list(range(0, 200, 20))))
        return decide([EvalSet("base_validation", y, better, y.copy()), traffic], GateConfig(margin=0.0, own_rows=1000))
    raise AssertionError(case)


def record_for(case: str) -> RunRecord:
    checks = [RuleResult(Rule.CHAMPION, True, subject="v0001")]
    if case == "champion":
        return RunRecord(Outcome.FAILED.value, checks=[RuleResult(Rule.CHAMPION, False)], seconds=1.0)
    refused = case in ("feedback", "feedback_on_validation")
    checks.append(RuleResult(Rule.FEEDBACK, not refused, n=0 if refused else 14,
                             left_out=10 if case == "feedback_on_validation" else 0,
                             holdout=3 if case == "feedback_on_validation" else 0))
    if refused:
        return RunRecord(Outcome.REFUSED.value, champion_before="v0001", champion_after="v0001", rows=ROWS,
                         checks=checks, seconds=42.0)
    gate = gate_for("promote" if case in ("promote", "champion_unchanged") else case)
    if case in ("promote", "champion_unchanged"):
        checks.append(RuleResult(Rule.CHAMPION_UNCHANGED, case == "promote", subject="v0001",
                                 note="v0002" if case == "promote" else "v0003"))
    promoted = case == "promote"
    return RunRecord(Outcome.PROMOTED.value if promoted else Outcome.REFUSED.value, champion_before="v0001",
                     challenger="v0002", champion_after="v0002" if promoted else "v0001", rows=ROWS, gate=gate,
                     checks=checks, seconds=765.0)


def shown_numbers(text: str) -> set[str]:
    """Every number the text shows, versions (v0001) aside."""
    return set(re.findall(r"(?<![\w.])[-+]?\d(?:[\d,]*\d)?(?:\.\d+)?(?:e[-+]?\d+)?", re.sub(r"v\d{4}", "", text)))


def record_numbers(run: RunRecord) -> set[str]:
    """Every number the record holds, in the formats the page uses."""
    values: set[str] = {f"{v:,}" for v in run.rows.values()} | {f"{run.seconds / 60:.1f}"}
    for r in run.rules:
        for share in (r.champion, r.challenger, r.confidence):
            if share is not None:
                values.add(pct(share).rstrip("%"))
        for diff in (r.difference, r.bound, r.threshold):
            if diff is not None:
                values |= {points(diff).split()[0], points(diff).split()[0].lstrip("+")}
        values |= {p_text(r.p_value), f"{r.threshold or 0:g}", f"{r.threshold or 0:.0f}", f"{r.n:,}",
                   f"{r.challenger_only:,}", f"{r.champion_only:,}", f"{r.challenger_only + r.champion_only:,}",
                   str(len(r.tests)), f"{r.left_out:,}", f"{r.holdout:,}", f"{r.traffic:,}",
                   f"{FeedbackParts.of(r).trusted:,}"}
        for t in r.tests:
            values |= {f"{t.n:,}", f"{t.challenger_only:,}", f"{t.champion_only:,}"}
        values |= {f"{v:.2f}" for v in (r.recall, r.precision, r.min_recall, r.min_precision) if v is not None}
    return values


CASES = ["promote", "feedback", "feedback_on_validation", "champion", "margin", "discordant", "gain", "not_worse", "base_accuracy",
         "label_recall", "champion_unchanged", "new_topic", "own_gain", "own_not_worse", "topic_not_worse", "forgetting"]


def test_every_rule_can_fail_in_these_cases() -> None:
    failing = {r.rule for case in CASES for r in record_for(case).failed_rules}
    assert failing == set(Rule)


@pytest.mark.parametrize("case", CASES)
def test_decision_shows_only_numbers_from_the_record(case: str, tmp_path: Path) -> None:
    run = record_for(case)
    run.refresh_reasons()
    # Through the state file and back, as the page reads it.
    paths = HomePaths(tmp_path)
    write_json_atomic(paths.retrain_state, state_payload(run, "2026-01-01T00:00:00Z"))
    stored = read_last_run(paths)
    assert stored is not None and stored.rules == run.rules and stored.rows == run.rows
    text = decision_text(stored)
    extra = shown_numbers(text) - record_numbers(stored)
    assert not extra, (extra, text)
    for rule in stored.failed_rules:  # every failed rule is named, with its own numbers
        if rule.rule in (Rule.BASE_ACCURACY, Rule.LABEL_RECALL, Rule.MARGIN, Rule.NOT_WORSE):
            assert pct(rule.champion) in text and pct(rule.challenger) in text, (rule, text)
        if rule.rule in (Rule.BASE_ACCURACY, Rule.LABEL_RECALL):
            assert points(rule.difference) in text and points(rule.bound) in text
        if rule.rule == Rule.LABEL_RECALL:
            assert f"How many {rule.subject} articles" in text
        if rule.rule in (Rule.GAIN, Rule.NOT_WORSE):
            assert f"p = {p_text(rule.p_value)}" in text
    if stored.decision == Outcome.PROMOTED:
        assert text.startswith("**Promoted.** The new model **v0002** replaced **v0001**.")
        gain = stored.gate.rule(Rule.GAIN)
        assert f"p = {p_text(gain.p_value)}" in text and pct(stored.gate.rule(Rule.BASE_ACCURACY).challenger) in text
    elif stored.decision == Outcome.REFUSED:
        assert text.startswith("**Not promoted.** **v0001** stays in service.")
    if stored.challenger:  # the old page said "0 feedback and 0 base rows" here
        assert "trained on 14 feedback and 3,000 base rows" in text and "in 12.8 min" in text


def test_the_numbers_accordion_holds_every_rule() -> None:
    run = record_for("label_recall")
    numbers = report.decision_numbers(run)
    assert numbers["rows"]["feedback_train"] == 14
    assert [r["rule"] for r in numbers["rules"]] == [r.rule.value for r in run.rules]
    assert report.decision_numbers(None) == {}
    assert "label_fixes" not in numbers and "validation_scores" not in numbers  # a run without fixes: not mentioned


def test_the_numbers_accordion_gives_both_validation_scores_while_fixes_touch_validation() -> None:
    run = record_for("label_recall")
    run.label_fixes = {"live": 3, "base_train": 1, "base_validation": 2}
    run.validation_scores = {"as_labelled": {"champion": {"accuracy": 0.9}}, "as_corrected": {"champion": {"accuracy": 0.91}}}
    numbers = report.decision_numbers(run)
    assert numbers["label_fixes"]["base_validation"] == 2
    assert numbers["validation_scores"]["as_corrected"]["champion"]["accuracy"] == 0.91


def test_the_statistics_fold_names_its_assumptions() -> None:
    config = GateConfig()
    assumed = Evidence(0, 40, 30, config.own_rows, power_of(70, config.discordance, False, config.alpha, config.power,
                                                             config.own_margin, config.target_gain))
    text = statistics_fold(assumed)
    assert text.startswith("<details><summary>") and "disagree on 10.00% of articles" in text
    assert "NEWSLOOP_GATE_DISCORDANCE, until a retrain measures it" in text and "2.00 points or more ruled out" in text
    measured = Evidence(200, 90, 65, config.own_rows, power_of(355, 0.05, True, 0.05, 0.8, 0.02, 0.01))
    assert "as the last retrain measured" in statistics_fold(measured)
    assert measured.mode == "own" and "Your own 355 held-out articles" in measured.words()
    assert "a 1-point gain is visible" in measured.words()


def job(step: Stage | None, **overrides: object) -> JobStatus:
    values: dict = {"command": "run", "running": True, "exit_code": None, "stage": step.caption if step else "Starting",
                    "percent": 50.0, "seconds_left": 120.0, "log_tail": "", "step": step}
    return JobStatus(**(values | overrides))


def test_progress_names_every_stage_to_the_end() -> None:
    assert "about 2 min left" in report.progress_html(job(Stage.TRAINING))
    assert "Putting it in service" in report.progress_html(job(Stage.PROMOTE))
    done = report.progress_html(job(Stage.DONE, decision="promoted", percent=100.0))
    assert "<strong>Done</strong> · 100% · promoted, finishing up" in done
    assert "taking longer than the last run" in report.progress_html(job(Stage.TRAINING, seconds_left=0.0))
    ended = job(None, running=False, exit_code=3)
    # Exit status 3 is any run that kept the champion, a stop before training too: no gate is claimed.
    assert "not promoted, the champion stays (the decision says why)" in report.progress_html(ended)
    assert "gate" not in report.progress_html(ended)
    assert "exit code 1" in report.progress_html(job(None, running=False, exit_code=1))


def test_job_runner_reads_the_stage_the_run_wrote(tmp_path: Path) -> None:
    paths = HomePaths(tmp_path)
    jobs = RetrainJobs(paths)
    write_json_atomic(paths.retrain_state, state_payload(RunRecord(Outcome.REFUSED.value, seconds=100.0), "t"))
    # A stand-in child process, so the runner's own bookkeeping is what is tested.
    jobs._job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    jobs._args, jobs._started = ("run",), time.time()
    try:
        for stage in Stage:
            write_json_atomic(paths.retrain_progress, Progress(stage, time.time(), 1, "refused").to_dict())
            status = jobs.status()
            assert status.step == stage and status.stage == stage.caption
            low = 100 * stage.start
            assert low <= status.percent <= (100.0 if stage == Stage.DONE else 100 * stage.following - 1)
        assert status.decision == "refused"
    finally:
        jobs._job.kill()
        jobs._job.wait()


def test_review_line_counts_true_looking_corrections() -> None:
    assert report.review_line(0).startswith("No suspicious answers")
    assert report.review_line(1234).startswith("**1,234** suspicious answer(s) from signed-in or checked people")


def test_served_accuracy_reads_the_file_the_version_serves() -> None:
    meta = {"serve_file": "model.int8.onnx", "validation": {"int8": {"accuracy": 0.93}, "fp32": {"accuracy": 0.94}}}
    assert served_accuracy(meta) == 0.93
    assert served_accuracy(meta | {"serve_file": "model.onnx"}) == 0.94
    assert served_accuracy({"validation": {"accuracy": 0.5}}) == 0.5
    assert served_accuracy({}) is None


def test_trusted_texts_that_cannot_train_are_named_by_part() -> None:
    # A trusted text on a base-validation article, or in the holdout, is never trained on; the decision says where
    # each went instead of "no feedback", and claims no gate (none ran).
    text = decision_text(record_for("feedback_on_validation"))
    assert ("Nothing to train on, so no new model was trained or judged (13 trusted texts: 0 to train on, 3 held out "
            "for the gate, 10 left out as base-validation articles)") in text
    assert "no trusted feedback" not in text
    assert "no trusted feedback to learn from yet" in decision_text(record_for("feedback")).lower()
