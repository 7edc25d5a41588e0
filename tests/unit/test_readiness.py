"""One meaning of "enough new feedback" (new trusted answers since the last run) for `retrain watch`, the in-app
schedule (which runs `watch --once`) and the retrain preview; and true-looking corrections first in review."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa

from core.evaluation.estimate import Tally
from core.evaluation.monitor import Baseline, check_traffic
from core.labels import LABELS
from core.registry.stages import Outcome, RunRecord, state_payload
from core.registry.versions import write_json_atomic
from core.settings.config import load_settings
from core.settings.policies import GateConfig, MonitorPolicy, QueuePolicy, RetrainPolicy, StoreLimits, TrustPolicy
from core.storage.paths import HomePaths
from feedback.labelling.answers import AnswerInput
from feedback.monitoring import TrafficReport
from feedback.store import FeedbackStore
from feedback.training.readiness import count_new_trusted, readiness
from feedback.trust.credible import credible_waiting
from feedback.trust.review import ReviewFilter
from testkit.pg_cluster import StoreFactory
from web.admin import report
from web.admin.jobs import Expected

SURE_OF_WORLD = {"World": 0.9, "Sports": 0.05, "Business": 0.03, "Sci/Tech": 0.02}


@pytest.fixture
def store(make_store: StoreFactory, tmp_path: Path) -> FeedbackStore:
    return make_store(tmp_path / "feedback.db")


def answer(store: FeedbackStore, i: int, who: str, **extra: object) -> int:
    return store.answers.record(AnswerInput(text=f"story {i}", user_label=LABELS[i % 4], annotator=who, kind="correct", **extra)).id


def test_only_trusted_answers_since_the_last_run_count(store: FeedbackStore) -> None:
    signed_in = TrustPolicy(train_on="signed_in")
    for i in range(5):
        answer(store, i, "user:ann", verified=True)
    for i in range(5, 30):
        answer(store, i, "anon:burst")  # not signed in: stored, never trusted under train_on=signed_in
    suspicious = store.answers.record(AnswerInput(text="story 99", user_label="Sports", annotator="user:ann", kind="correct",
                              probabilities=SURE_OF_WORLD, verified=True))
    assert suspicious.status == "suspicious"  # waits for review: not trusted yet
    assert count_new_trusted(store, signed_in, None) == 5
    assert count_new_trusted(store, TrustPolicy(), None) == 30  # anyone may train: the burst counts too
    last = RunRecord(Outcome.REFUSED.value, last_answer_id=suspicious.id)
    assert count_new_trusted(store, signed_in, last) == 0
    answer(store, 100, "user:ann", verified=True)
    answer(store, 101, "anon:burst")
    assert count_new_trusted(store, signed_in, last) == 1
    store.answers.set_status(suspicious.id, "accepted")  # reviewed now, but it is older than the last run
    assert count_new_trusted(store, signed_in, last) == 1


def test_preview_says_what_is_new_what_trains_what_judges_and_what_waits(store: FeedbackStore) -> None:
    store.pool.add([f"pool story {i}" for i in range(100)], source="test")
    store.pool.next_item("anyone", QueuePolicy())  # draws the traffic set
    with store.database.read() as db:
        pool = list(db.execute(sa.text("SELECT id, text, traffic FROM pool ORDER BY id")).mappings())
    for row in pool:
        store.answers.record(AnswerInput(text=row["text"], user_label="World", annotator="user:ann", kind="queue", item_id=row["id"],
                     verified=True))
    store.answers.record(AnswerInput(text="a chip maker's earnings", user_label="Business", annotator="user:ann", kind="correct",
                 probabilities=SURE_OF_WORLD, verified=True))
    ready = readiness(store, TrustPolicy(), RetrainPolicy(min_feedback=150), GateConfig(), None)
    traffic = sum(row["traffic"] for row in pool)
    assert ready.evidence.traffic == traffic > 0 and ready.train + ready.holdout + traffic == ready.trusted == 100
    assert ready.new_trusted == 100 and not ready.enough and ready.credible_waiting == 1
    # Fewer own held-out articles than decide (GateConfig.own_rows): the preview says how many a golden set adds.
    evidence = ready.evidence
    assert evidence.own == traffic + ready.holdout < evidence.own_rows and evidence.mode == "base"
    assert evidence.power.n == evidence.own and evidence.power.more_for_target == evidence.power.rows_for_target - evidence.own
    text = report.preview_text(ready, Expected(seconds=576.0, runs=3))
    assert ready.parts.trusted == ready.trusted  # the parts add up to every trusted text
    assert (f"**100 trusted texts: {ready.train:,} to train on, {ready.holdout:,} held out for the gate, {traffic:,} in "
            "the traffic set (judged on, never trained on)**") in text
    assert "about **10 min**, measured on this host (the median of its last 3 retrains)" in text
    assert f"A golden set of {evidence.own_rows - evidence.own:,} more (`newsloop golden import`" in text
    assert f"about {evidence.power.more_for_target:,} more would show a 1-point gain" in text
    assert "<details><summary>The statistics behind this</summary>" in text and "**1** suspicious answer(s)" in text
    assert "100 new trusted answer(s) since the last run, below NEWSLOOP_RETRAIN_MIN_FEEDBACK (150)" in text
    assert "Estimated accuracy" not in text  # no served traffic given: nothing quoted

    # With the champion's served traffic, the preview quotes the estimate per form, and the alert when it is up.
    policy = MonitorPolicy(min_texts=10)
    baseline = Baseline(accuracy={"title": 0.87, "full": 0.93})
    unsure = check_traffic({"title": Tally().add(np.tile([0.6, 0.2, 0.1, 0.1], (20, 1)))}, baseline, policy)
    quoted = report.preview_text(ready, Expected(seconds=576.0, runs=3), TrafficReport("v1", [], unsure))
    assert "served traffic" in quoted and "headline 60.0% (20 texts; validation 87.0%)" in quoted
    assert "⚠️ **Alert:** Estimated accuracy on headline texts is 60.0%" in quoted


def test_preview_counts_the_label_fixes_and_reads_answers_through_them(store: FeedbackStore) -> None:
    from core.text import text_hash
    from feedback.trust.label_errors import Candidate, Source

    for i in range(4):
        answer(store, i, "user:ann", verified=True)
    store.label_errors.save_search("s1", [Candidate(Source.ANSWER, text_hash("story 1"), "answer #2", "story 1",
                                                    LABELS[1], LABELS[2], 0.9)])
    [candidate] = store.label_errors.open_candidates()[0]
    ready = readiness(store, TrustPolicy(), RetrainPolicy(), GateConfig(), None)
    assert ready.label_fixes == 0 and ready.train + ready.holdout == 4
    assert "label fix" not in report.preview_text(ready, Expected(seconds=576.0, runs=3))
    store.label_errors.decide([candidate["id"]], "exclude", by="admin")
    ready = readiness(store, TrustPolicy(), RetrainPolicy(), GateConfig(), None)
    assert ready.label_fixes == 1 and ready.train + ready.holdout == 3  # the excluded text trains no more
    assert "through your **1 label fix(es)**" in report.preview_text(ready, Expected(seconds=576.0, runs=3))


def test_true_looking_corrections_come_first_in_review(store: FeedbackStore) -> None:
    store.pool.add(["check one", "check two", "check three"], source="checks", labels=["World"] * 3)
    checked, failing = "anon:checked", "anon:guesser"
    with store.database.read() as db:
        checks = list(db.execute(sa.text("SELECT id, text FROM pool")).mappings())
    for row in checks:  # the model said Sports on the first: a telling check, which "checked" needs right
        store.answers.record(AnswerInput(text=row["text"], user_label="World", annotator=checked, kind="queue", item_id=row["id"],
                     predicted_label="Sports" if row["text"] == "check one" else "World"))
        store.answers.record(AnswerInput(text=row["text"], user_label="Sports", annotator=failing, kind="queue", item_id=row["id"]))
    ids = {}
    for who, verified in ((checked, False), ("user:signed", True), (failing, False), ("anon:new", False)):
        ids[who] = store.answers.record(AnswerInput(text=f"confident story for {who}", user_label="Sports", annotator=who,
                                kind="correct", probabilities=SURE_OF_WORLD, verified=verified)).id
    rows, total = store.reviews.find(ReviewFilter(status="suspicious"))
    assert total == 4
    order = [row["id"] for row in rows]
    assert set(order[:2]) == {ids[checked], ids["user:signed"]}  # signed in or passed checks: first
    assert order[2:] == [ids["anon:new"], ids[failing]]  # the rest newest first
    assert credible_waiting(store.database, TrustPolicy()) == 2
    assert credible_waiting(store.database, TrustPolicy(min_checks=4)) == 1  # three checks are not enough now
    store.answers.set_status(ids["user:signed"], "accepted")
    assert credible_waiting(store.database, TrustPolicy()) == 1


def test_watch_retrains_on_new_trusted_answers_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import retrain.run
    from retrain.__main__ import main

    monkeypatch.setenv("NEWSLOOP_HOME", str(tmp_path))
    monkeypatch.setenv("NEWSLOOP_TRAIN_ON", "signed_in")
    runs: list[object] = []
    monkeypatch.setattr(retrain.run, "retrain", lambda setup: runs.append(setup) or RunRecord(Outcome.REFUSED.value))
    settings = load_settings()
    store = FeedbackStore(settings.paths.feedback_db, StoreLimits(writes_per_minute=10_000))
    for i in range(10):
        answer(store, i, "anon:someone")  # many answers, none trusted
    assert main(["watch", "--once", "--min-new", "3"]) == 0 and runs == []
    ids = [answer(store, 20 + i, "user:ann", verified=True) for i in range(3)]
    assert main(["watch", "--once", "--min-new", "3"]) == 0 and len(runs) == 1
    # The last run saw them: nothing new until three more trusted answers arrive.
    write_json_atomic(HomePaths(tmp_path).retrain_state,
                      state_payload(RunRecord(Outcome.REFUSED.value, last_answer_id=ids[-1]), "t"))
    answer(store, 40, "user:ann", verified=True)
    assert main(["watch", "--once", "--min-new", "3"]) == 0 and len(runs) == 1
    store.close()
