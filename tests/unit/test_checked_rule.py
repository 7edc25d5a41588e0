"""The "checked" trust rule is written twice, for two jobs: in Python over scored answers
(`feedback.trust.checks.passed_checks`, what the people panel and the trust report read) and in SQL over live rows
(`feedback.trust.credible.credible`, what the review order reads). Both must pick the same people on the same rows."""

from __future__ import annotations

import random

import pytest
import sqlalchemy as sa

from core.labels import LABELS
from core.settings.policies import StoreLimits, TrustPolicy
from feedback.database.tables import answers
from feedback.labelling.answers import AnswerInput
from feedback.trust.checks import passed_checks
from feedback.trust.credible import credible

CHECKS = {f"known-answer check number {i} about a topic": LABELS[i % len(LABELS)] for i in range(12)}


@pytest.mark.parametrize("make_store", ["sqlite", "postgresql"], indirect=True)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_python_and_sql_checked_rules_pick_the_same_people(make_store, tmp_path, seed: int) -> None:  # type: ignore[no-untyped-def]
    store = make_store(tmp_path / "feedback.db", StoreLimits(writes_per_minute=10_000))
    store.pool.add(list(CHECKS), source="checks", labels=list(CHECKS.values()))
    rng = random.Random(seed)
    # People of every kind: careful, sloppy, model-copiers, few answers; the model right or wrong on each check.
    for person in range(24):
        skill = rng.choice([0.0, 0.4, 0.6, 0.8, 1.0])
        copier = rng.random() < 0.25
        for text in rng.sample(list(CHECKS), rng.randint(0, len(CHECKS))):
            known = CHECKS[text]
            model = known if rng.random() < 0.6 else rng.choice([lab for lab in LABELS if lab != known])
            if copier:
                label = model
            else:
                label = known if rng.random() < skill else rng.choice([lab for lab in LABELS if lab != known])
            store.answers.record(AnswerInput(text=text, user_label=label, annotator=f"anon:p{person}",
                         kind="confirm" if label == model else "correct",
                         predicted_label=model))
    policy = TrustPolicy(min_checks=4, min_check_accuracy=0.7)
    in_python = passed_checks(store.crowd.check_scores(), min_checks=policy.min_checks,
                              min_accuracy=policy.min_check_accuracy)
    with store.database.read() as conn:
        in_sql = set(conn.execute(sa.select(answers.c.annotator).where(credible(policy)).distinct()).scalars())
    assert in_python == in_sql
    assert 0 < len(in_python) < 24  # the rows tell people apart, or the comparison shows nothing
