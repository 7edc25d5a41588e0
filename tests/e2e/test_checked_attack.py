"""Issue 22's `checked` attacker against a launched app over raw HTTP: 0 wrong labels trusted, an honest checked
annotator still trained on, and strangers' corrections kept out of everyone's queue until a maintainer accepts.

The app runs as on a Space (one trusted proxy hop: each visitor's address is the last X-Forwarded-For entry)
with NEWSLOOP_TRAIN_ON=checked and one agreeing label required. Every queue item is a check until the checks
run out (NEWSLOOP_CHECK_SHARE=1), so each annotator meets all twelve and nothing depends on luck. The tiny
model is right on nine of them: copying its label scores 75%, which passed checks before telling checks counted.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.labels import LABELS
from core.settings.policies import QueuePolicy
from feedback.store import FeedbackStore
from feedback.training.snapshot import read_trusted
from testkit.models import tiny_settings
from testkit.server import launched_app
from tests.e2e.raw_http import Visitor

pytestmark = pytest.mark.e2e

CHECKS = [f"Known-answer check {i}: the minister, the match and the market" for i in range(12)]
POOL = [f"Pool article {i} on tariffs, transfers and transistors" for i in range(40)]
PASTED = [f"Pasted story {i}: chips, cups and ceasefires" for i in range(6)]


def other(label: str) -> str:
    return LABELS[(LABELS.index(label) + 1) % 4]


@pytest.fixture
def checked_space(tiny_champion_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple]:
    home = tmp_path / "home"
    shutil.copytree(tiny_champion_home, home)
    monkeypatch.setenv("SPACE_ID", "newsloop/demo")
    settings = tiny_settings(home, train_on="checked", labels_required=1, check_share=1.0, min_checks=3,
                             traffic_share=0.0, classify_per_minute=1000, queue_per_minute=1000,
                             feedback_per_minute=1000, address_feedback_per_minute=1000)
    store = FeedbackStore.from_settings(settings)
    with launched_app(settings, store) as (url, service):
        model = {p_text: p for p_text, p in zip(CHECKS + POOL + PASTED, service.predict(CHECKS + POOL + PASTED),
                                                strict=True)}
        gold = {text: model[text].label if i < 9 else other(model[text].label) for i, text in enumerate(CHECKS)}
        store.pool.add(list(gold), source="checks", labels=list(gold.values()))
        store.pool.add(POOL, source="pool")
        truth = gold | {text: other(model[text].label) if i % 2 else model[text].label for i, text in enumerate(POOL)}
        truth |= {text: model[text].label for text in PASTED}  # the attacker gives these the least likely label
        yield url, settings, store, truth


def work_the_queue(visitor: Visitor, answers: int, choose) -> None:  # type: ignore[no-untyped-def]
    text, _, _, shown = visitor.call("queue_next")[0]
    for _ in range(answers):
        text, _, message, shown = visitor.call("queue_answer", choose(visitor, text), shown)[0]
        assert message.startswith("Saved as"), message


def model_label(visitor: Visitor, text: str) -> str:
    return visitor.call("classify", text)[0]["label"]  # what the attacker reads off the Classify tab


def test_checked_attacker_with_four_addresses_gets_no_wrong_label_trusted(checked_space: tuple) -> None:
    url, settings, store, truth = checked_space
    sybils = [Visitor(url, forwarded_for=f"198.51.100.{i}") for i in range(4)]
    for sybil in sybils:
        work_the_queue(sybil, 16, model_label)  # twelve checks, then four pool items, all the model's label
    for t, text in enumerate(PASTED):
        for sybil in (sybils[t % 4], sybils[(t + 1) % 4]):  # two addresses per text
            result, _, shown = sybil.call("classify", text)
            least_likely = min(result["confidences"], key=lambda c: c["confidence"])["label"]
            assert sybil.call("feedback", least_likely, shown, text)[0].startswith("Thanks, saved")
    honest = Visitor(url, forwarded_for="203.0.113.7")
    work_the_queue(honest, 24, lambda _, text: truth[text])

    rows = store.answers.rows()
    attackers = {row["annotator"] for row in rows if row["text"] in PASTED}  # each pasted at least one
    assert len(attackers) == 4
    [honest_id] = {row["annotator"] for row in rows} - attackers
    trusted = read_trusted(store, settings.trust_policy())
    wrong = [e.text for e in trusted if e.label != truth[e.text]]
    assert wrong == []
    assert {a for e in trusted for a in e.annotators} == {honest_id}
    assert len(trusted) == 12  # the honest annotator's twelve pool answers train

    # Their pasted texts wait, out of every queue, until a maintainer accepts one of the answers on them.
    held = {row["text"]: row["answer_id"] for row in store.pool.held()}
    assert set(held) == set(PASTED)
    served = everything_served(store, "anon:fresh")
    assert served and not served & set(PASTED)
    store.answers.set_status(held[PASTED[0]], "accepted")  # what the admin's review does
    assert PASTED[0] in everything_served(store, "anon:later") and PASTED[0] not in {
        row["text"] for row in store.pool.held()}


def everything_served(store: FeedbackStore, annotator: str) -> set[str]:
    """Every text the queue would serve `annotator`, skipping each in turn; however many labels a text has
    (the two attackers' agreeing labels would settle a pasted text, hiding whether it is held)."""
    served = set()
    while (item := store.pool.next_item(annotator, QueuePolicy(labels_required=10))) is not None:
        served.add(item["text"])
        store.pool.skip(annotator, item["id"])
    return served
