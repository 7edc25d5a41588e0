"""What the next retrain would have to work with, read from the live store: trusted feedback, how much of it is
new since the last run, the traffic set and how many more labels it needs, and true-looking corrections
waiting for review. `retrain watch`, the in-app schedule (which runs `watch --once`), the retrain preview and
`retrain status` all read it here, so "enough new feedback" means one thing everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.evaluation.decision import EvalSetName, FeedbackParts, Rule
from core.evaluation.paired import SampleSize, traffic_sample_size
from core.registry.stages import RunRecord
from core.settings.policies import GateConfig, RetrainPolicy, TrustPolicy
from feedback.store import FeedbackStore
from feedback.training.fixes import read_fixes
from feedback.training.snapshot import split_trusted, traffic_hashes
from feedback.trust.credible import credible_waiting
from feedback.trust.rules import TrustedExample, select_trusted
from feedback.validate import NOT_COUNTED


@dataclass(frozen=True)
class Readiness:
    """The feedback a retrain would see now."""

    trusted: int  # texts the trust rules pass (train + holdout + traffic)
    new_trusted: int  # trusted answers newer than the last run's newest answer
    min_new: int  # new trusted answers a scheduled retrain waits for
    train: int  # trusted texts it would train on
    holdout: int  # ... hold out to judge with
    traffic: SampleSize  # the traffic set: labels now, and labels needed to detect the target gain
    credible_waiting: int  # suspicious answers from signed-in or checked people, waiting for review
    label_fixes: int = 0  # a maintainer's live label fixes (relabels, exclusions) the retrain reads rows through

    @property
    def enough(self) -> bool:
        return self.new_trusted >= self.min_new

    @property
    def parts(self) -> FeedbackParts:
        """The trusted texts by part, as the run will log them and its decision state them (the base-validation
        texts among those to train on aside: only the run, which loads the base data, knows them)."""
        return FeedbackParts(train=self.train, holdout=self.holdout, traffic=self.traffic.have)


def new_trusted_answers(rows: Sequence[Mapping[str, Any]], trusted: Sequence[TrustedExample], since_id: int) -> int:
    """Trusted answers with an id above `since_id`: answers that are agreeing votes behind a text the trust rules
    pass (`feedback.trust.rules.select_trusted`). An untrusted burst, or answers waiting for review, count nothing."""
    voters = {(t.text_hash, t.label): set(t.annotators) for t in trusted}
    return sum(
        1 for row in rows
        if row["id"] > since_id and row["status"] not in NOT_COUNTED
        and row["annotator"] in voters.get((row["text_hash"], row["user_label"]), ())
    )


def count_new_trusted(store: FeedbackStore, policy: TrustPolicy, last_run: RunRecord | None) -> int:
    """Trusted answers since the last run (all of them when none has run): what `watch` compares with
    NEWSLOOP_RETRAIN_MIN_FEEDBACK."""
    rows = store.answers()
    return new_trusted_answers(rows, select_trusted(rows, store.gold_labels(), policy), _since(last_run))


def readiness(store: FeedbackStore, trust: TrustPolicy, policy: RetrainPolicy, gate: GateConfig,
              last_run: RunRecord | None) -> Readiness:
    """Everything the retrain preview and `retrain status` say about the feedback, in one pass over the answers."""
    taxonomy = store.taxonomy()
    rows = store.answers(taxonomy=taxonomy)
    trusted = select_trusted(rows, store.gold_labels(taxonomy), trust)
    fixes = read_fixes(store)
    split = split_trusted(fixes.trusted(trusted), traffic_hashes(store), policy.holdout_fraction, taxonomy)
    # The GAIN rule tests each non-empty set and, with more than one, all rows pooled (retrain.gate).
    sets = 1 + bool(split.holdout) + 1  # base validation, the holdout if any, the traffic set
    tests = sets + 1
    return Readiness(
        trusted=len(trusted),
        new_trusted=new_trusted_answers(rows, trusted, _since(last_run)),
        min_new=policy.min_feedback,
        train=len(split.train),
        holdout=len(split.holdout),
        traffic=traffic_sample_size(len(split.traffic), gate, tests, _measured(last_run)),
        credible_waiting=credible_waiting(store.database, trust),
        label_fixes=len(fixes),
    )


def _since(last_run: RunRecord | None) -> int:
    return last_run.last_answer_id if last_run is not None else 0


def _measured(last_run: RunRecord | None) -> tuple[int, int] | None:
    """(rows, discordant rows) of the last run's traffic test, if it had one."""
    gain = last_run.gate.rule(Rule.GAIN) if last_run is not None and last_run.gate is not None else None
    test = next((t for t in gain.tests if t.subject == EvalSetName.TRAFFIC), None) if gain else None
    return (test.n, test.challenger_only + test.champion_only) if test else None
