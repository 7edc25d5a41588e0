"""What the next retrain would have to work with, read from the live store: trusted feedback, how much of it is
new since the last run, the newsroom's own held-out articles the gate would judge on and what gain they could see,
and true-looking corrections waiting for review. `retrain watch`, the in-app schedule (which runs `watch --once`), the retrain preview and
`retrain status` all read it here, so "enough new feedback" means one thing everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.evaluation.decision import FeedbackParts, GateMode, describe_power
from core.evaluation.paired import Power, power_of
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
    evidence: Evidence  # the newsroom's own held-out articles the gate would judge on, and what they could see
    credible_waiting: int  # suspicious answers from signed-in or checked people, waiting for review
    label_fixes: int = 0  # a maintainer's live label fixes (relabels, exclusions) the retrain reads rows through

    @property
    def enough(self) -> bool:
        return self.new_trusted >= self.min_new

    @property
    def parts(self) -> FeedbackParts:
        """The trusted texts by part, as the run will log them and its decision state them (the base-validation
        texts among those to train on aside: only the run, which loads the base data, knows them)."""
        return FeedbackParts(train=self.train, holdout=self.holdout, traffic=self.evidence.traffic)


@dataclass(frozen=True)
class Evidence:
    """The newsroom's own held-out articles the next gate would judge on (labelled in its current topics), whether
    they are enough to decide (`GateConfig.own_rows`), and the gain they could see (`Power`)."""

    golden: int  # the golden set (feedback.evaluation.golden)
    traffic: int  # trusted answers on the traffic set
    holdout: int  # trusted answers held out
    own_rows: int  # the setting: own articles from which they decide
    power: Power

    @property
    def own(self) -> int:
        return self.golden + self.traffic + self.holdout

    @property
    def mode(self) -> str:
        return GateMode.OWN.value if self.own >= self.own_rows else GateMode.BASE.value

    def words(self) -> str:
        """Whose articles the next decision would rest on, and what gain they could see, in a maintainer's words."""
        parts = f"{self.golden:,} golden, {self.traffic:,} from the traffic set, {self.holdout:,} held-out answers"
        if self.mode == GateMode.OWN.value:
            head = f"Your own {self.own:,} held-out articles ({parts}) would decide."
        else:
            head = (f"Your own held-out articles number {self.own:,} ({parts}), fewer than the {self.own_rows:,} that "
                    "decide, so the base data's rules would judge. A golden set of "
                    f"{self.own_rows - self.own:,} more (`newsloop golden import`, or **Import a golden set** on the "
                    "admin page) would let yours decide.")
        return f"{head} {describe_power(self.power)}"


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
    rows = store.answers.rows()
    return new_trusted_answers(rows, select_trusted(rows, store.pool.gold_labels(), policy), _since(last_run))


def readiness(store: FeedbackStore, trust: TrustPolicy, policy: RetrainPolicy, gate: GateConfig,
              last_run: RunRecord | None) -> Readiness:
    """Everything the retrain preview and `retrain status` say about the feedback, in one pass over the answers."""
    taxonomy = store.topics.current()
    rows = store.answers.rows(taxonomy=taxonomy)
    trusted = select_trusted(rows, store.pool.gold_labels(taxonomy), trust)
    fixes = read_fixes(store)
    golden = store.golden.hashes()
    split = split_trusted(fixes.trusted(trusted), traffic_hashes(store), policy.holdout_fraction, taxonomy, golden)
    own = len(golden) + len(split.traffic) + len(split.holdout)
    discordance, measured = _discordance(last_run, gate)
    evidence = Evidence(len(golden), len(split.traffic), len(split.holdout), gate.own_rows,
                        power_of(own, discordance, measured, gate.alpha, gate.power, gate.own_margin, gate.target_gain))
    return Readiness(
        trusted=len(trusted),
        new_trusted=new_trusted_answers(rows, trusted, _since(last_run)),
        min_new=policy.min_feedback,
        train=len(split.train),
        holdout=len(split.holdout),
        evidence=evidence,
        credible_waiting=credible_waiting(store.database, trust),
        label_fixes=len(fixes),
    )


def _since(last_run: RunRecord | None) -> int:
    return last_run.last_answer_id if last_run is not None else 0


def _discordance(last_run: RunRecord | None, gate: GateConfig) -> tuple[float, bool]:
    """The share of held-out articles the last two models disagreed on, where the last run measured it; else the
    setting's assumption."""
    power = last_run.gate.power if last_run is not None and last_run.gate is not None else None
    return (power.discordance, True) if power is not None and power.measured else (gate.discordance, False)
