"""The promotion decision as data: one record per rule the gate (or the run) checked, with the numbers it
compared. The gate builds these (`retrain.gate`), the run stores them (`core.registry.stages.RunRecord`), and pages
render their own words from the fields; `describe` is the one plain-English rendering for logs, the CLI and
the registry's history.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from core.evaluation.paired import Power


class EvalSetName(StrEnum):
    """The evaluation sets a challenger is scored on."""

    BASE = "base_validation"  # held-out rows of the base data set
    HOLDOUT = "feedback_holdout"  # a hash-chosen quarter of the trusted uncertainty-queue labels
    TRAFFIC = "traffic"  # trusted labels on pool items drawn uniformly at random (never trained on)
    GOLDEN = "golden"  # the newsroom's own labelled evaluation file (feedback.evaluation.golden): never trained on
    POOLED = "pooled"  # every row of every set, as one paired test
    OWN = "own"  # the newsroom's own held-out articles together: golden set, traffic set, feedback holdout


USERS_SETS = (EvalSetName.TRAFFIC, EvalSetName.HOLDOUT)  # what users send, as opposed to the base data
# The newsroom's own labelled articles, in its current topics: once there are enough, the gate's main evidence.
OWN_SETS = (EvalSetName.GOLDEN, EvalSetName.TRAFFIC, EvalSetName.HOLDOUT)


class GateMode(StrEnum):
    """Whose articles a decision rests on."""

    BASE = "base"  # too few of the newsroom's own: the base data's rules (significance, non-inferiority)
    OWN = "own"  # the newsroom's own held-out articles; the base data only guards against forgetting


class Rule(StrEnum):
    """Every check a retrain's decision rests on. The run's own checks come first and last."""

    CHAMPION = "champion"  # run: there is a champion to compare against
    FEEDBACK = "feedback"  # run: there is trusted feedback to train on
    MARGIN = "margin"  # the combined macro-F1 gain reaches the margin
    DISCORDANT = "discordant"  # the models disagree on enough rows to judge at all
    GAIN = "gain"  # significantly better on some evidence test (one-sided exact McNemar, Bonferroni)
    NOT_WORSE = "not_worse"  # not significantly worse on a users' set (one-sided exact McNemar)
    BASE_ACCURACY = "base_accuracy"  # base-validation accuracy non-inferior (margin, one-sided, score test)
    LABEL_RECALL = "label_recall"  # one label's base-validation recall non-inferior (same test)
    NEW_TOPIC = "new_topic"  # a topic the champion lacks: enough held-out answers, recall and precision
    OWN_GAIN = "own_gain"  # the newsroom's own articles: the new model is right on more of them, by the margin
    OWN_NOT_WORSE = "own_not_worse"  # ... and a loss of own_margin or more on them is ruled out
    TOPIC_NOT_WORSE = "topic_not_worse"  # ... and no topic of them is read significantly worse (exact McNemar)
    FORGETTING = "forgetting"  # base data whose topics kept their meaning: no significant loss of forget_margin
    CHAMPION_UNCHANGED = "champion_unchanged"  # run: no other promotion or rollback happened meanwhile


@dataclass(frozen=True)
class PairedTest:
    """One exact McNemar test of the GAIN rule, on one set (or all rows pooled)."""

    subject: str  # an EvalSetName value
    n: int
    challenger_only: int  # rows the challenger alone got right
    champion_only: int
    p_value: float  # one-sided ("the challenger is better"), times the number of tests (Bonferroni), at most 1


@dataclass(frozen=True)
class RuleResult:
    """One rule's verdict and the numbers behind it. Fields a rule does not use stay None (or 0/empty).

    Per rule: MARGIN compares macro-F1 scores (`champion`, `challenger`) with `threshold` = the required
    gain. DISCORDANT: `challenger_only + champion_only` against `threshold` = the minimum. GAIN: `p_value` =
    the smallest adjusted p among `tests` the challenger leads, `threshold` = alpha. NOT_WORSE: one users'
    set (`subject`), one-sided p that the challenger is worse, `threshold` = alpha. BASE_ACCURACY and
    LABEL_RECALL: accuracy or one label's recall, `threshold` = the non-inferiority margin, `p_value` the
    test's, `bound` the one-sided lower confidence bound on challenger - champion at `confidence`.
    CHAMPION_UNCHANGED: `subject` = the champion the run started from, `note` = the one found at the end.
    NEW_TOPIC: `subject` = the topic's name, `n` = its held-out answers, `threshold` = the answers it needs,
    `recall` and `precision` the challenger's on it, `recall_bound` and `precision_bound` their lower bounds at
    `confidence`, against `min_recall` and `min_precision`.
    FEEDBACK: the trusted texts by part (`FeedbackParts`): `n` = to train on, `holdout` and `traffic` = kept to
    judge with, `left_out` = on base-validation texts, which training never uses (they would inflate the
    base-validation score the gate judges).
    """

    rule: Rule
    passed: bool
    subject: str = ""  # the set or label the rule looked at
    n: int = 0  # rows compared
    champion: float | None = None
    challenger: float | None = None
    threshold: float | None = None
    p_value: float | None = None
    bound: float | None = None
    confidence: float | None = None
    challenger_only: int = 0
    champion_only: int = 0
    tests: tuple[PairedTest, ...] = ()
    note: str = ""
    left_out: int = 0  # rows a rule set aside before counting `n` (see FEEDBACK)
    holdout: int = 0  # FEEDBACK: trusted texts held out to judge with
    traffic: int = 0  # FEEDBACK: trusted texts of the traffic set (judged on, never trained on)
    recall: float | None = None  # NEW_TOPIC
    precision: float | None = None
    min_recall: float | None = None
    min_precision: float | None = None
    recall_bound: float | None = None  # NEW_TOPIC: one-sided lower bounds at `confidence`
    precision_bound: float | None = None

    @property
    def difference(self) -> float | None:
        """challenger - champion, when the rule compared two scores."""
        if self.champion is None or self.challenger is None:
            return None
        return self.challenger - self.champion

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"rule": self.rule.value}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RuleResult:
        values = dict(data)
        values["rule"] = Rule(values["rule"])
        values["tests"] = tuple(PairedTest(**t) for t in values.get("tests") or ())
        return cls(**values)


@dataclass(frozen=True)
class FeedbackParts:
    """What a retrain does with the trusted texts (`feedback.trust.rules`): the traffic set's are judged on only, the
    rest split by text hash into train and holdout (`feedback.training.snapshot`), and of those to train on, the
    base validation set's texts are left out (only the run, which loads the base data, can tell them).

    The one count of "trusted" that the retrain preview, the admin tiles, the run's log and its decision state, so
    a trusted text that judges rather than trains is never counted as one to train on, nor left uncounted."""

    train: int  # trained on
    holdout: int  # held out to judge the new model with
    traffic: int  # the traffic set's: judged on, never trained on
    left_out: int = 0  # would train, but are base-validation texts (the gate judges on them)

    @property
    def trusted(self) -> int:
        return self.train + self.holdout + self.traffic + self.left_out

    @classmethod
    def of(cls, rule: RuleResult) -> FeedbackParts:
        """The parts a FEEDBACK rule recorded."""
        return cls(rule.n, rule.holdout, rule.traffic, rule.left_out)

    def words(self) -> str:
        """"3 trusted texts: 0 to train on, 2 held out for the gate, 1 in the traffic set" (empty parts unsaid, but
        the part to train on always said)."""
        parts = [f"{self.train:,} to train on"]
        parts += [f"{self.holdout:,} held out for the gate"] if self.holdout else []
        parts += [f"{self.traffic:,} in the traffic set (judged on, never trained on)"] if self.traffic else []
        parts += [f"{self.left_out:,} left out as base-validation articles"] if self.left_out else []
        return f"{self.trusted:,} trusted text{'' if self.trusted == 1 else 's'}: {', '.join(parts)}"


@dataclass(frozen=True)
class SetScores:
    """Both models' scores on one evaluation set, and its weight in the combined score."""

    name: str  # an EvalSetName value
    n: int
    weight: float
    champion_macro_f1: float | None  # None for an empty set
    challenger_macro_f1: float | None
    champion_accuracy: float | None
    challenger_accuracy: float | None


@dataclass(frozen=True)
class GateResult:
    """The gate's verdict: promote only when every rule passed."""

    promote: bool
    rules: tuple[RuleResult, ...]
    sets: tuple[SetScores, ...] = ()
    # The base mode's combined macro-F1 (see retrain.gate.rules.combined_score); the own mode's accuracy on own articles.
    champion_score: float = 0.0
    challenger_score: float = 0.0
    p_value: float = 1.0  # the GAIN rule's p; the own mode's one-sided exact McNemar p on its own articles
    mode: str = GateMode.BASE.value  # a GateMode value: whose articles the decision rests on
    power: Power | None = None  # what the deciding articles could see (the own mode's; the base mode's users' sets)

    @property
    def delta(self) -> float:
        return self.challenger_score - self.champion_score

    @property
    def failed(self) -> tuple[RuleResult, ...]:
        return tuple(r for r in self.rules if not r.passed)

    @property
    def reasons(self) -> list[str]:
        """Every failed rule in plain English (empty when promoted)."""
        return [describe(r) for r in self.failed]

    def rule(self, rule: Rule, subject: str = "") -> RuleResult | None:
        return next((r for r in self.rules if r.rule == rule and (not subject or r.subject == subject)), None)

    def scores(self, name: str) -> SetScores | None:
        return next((s for s in self.sets if s.name == name), None)

    def summary(self) -> dict[str, Any]:
        """The numbers a person weighs a decision by, small enough for the registry's history: whose articles
        decided, both models' scores and accuracy per set, what the articles could see, and every failed rule in
        words."""
        return {
            "mode": self.mode,
            "champion_score": round(self.champion_score, 4),
            "challenger_score": round(self.challenger_score, 4),
            "p_value": round(self.p_value, 4),
            "sets": {s.name: {"n": s.n, "champion_accuracy": s.champion_accuracy,
                              "challenger_accuracy": s.challenger_accuracy} for s in self.sets},
            "power": describe_power(self.power) if self.power else "",
            "refused_because": self.reasons,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "promote": self.promote,
            "rules": [r.to_dict() for r in self.rules],
            "sets": [asdict(s) for s in self.sets],
            "champion_score": self.champion_score,
            "challenger_score": self.challenger_score,
            "delta": self.delta,
            "p_value": self.p_value,
            "mode": self.mode,
            "power": asdict(self.power) if self.power else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GateResult:
        return cls(
            promote=bool(data["promote"]),
            rules=tuple(RuleResult.from_dict(r) for r in data["rules"]),
            sets=tuple(SetScores(**s) for s in data.get("sets") or ()),
            champion_score=float(data.get("champion_score", 0.0)),
            challenger_score=float(data.get("challenger_score", 0.0)),
            p_value=float(data.get("p_value", 1.0)),
            mode=str(data.get("mode") or GateMode.BASE.value),
            power=Power(**data["power"]) if data.get("power") else None,
        )


SET_WORDS = {
    EvalSetName.BASE: "the base validation data",
    EvalSetName.HOLDOUT: "the held-out feedback",
    EvalSetName.TRAFFIC: "the traffic set (articles drawn at random from the pool)",
    EvalSetName.GOLDEN: "the golden set (your labelled evaluation file)",
    EvalSetName.POOLED: "all evaluation articles together",
    EvalSetName.OWN: "your own held-out articles (golden set, traffic set and held-out answers)",
}


def pct(x: float | None) -> str:
    """A share (0..1) as a percentage with two decimals."""
    return "?" if x is None else f"{x * 100:.2f}%"


def points(x: float | None) -> str:
    """A difference of shares (0..1) in percentage points, signed."""
    return "?" if x is None else f"{x * 100:+.2f} points"


def p_text(p: float | None) -> str:
    return "?" if p is None else f"{p:.2g}"


def _set(subject: str) -> str:
    try:
        return SET_WORDS[EvalSetName(subject)]
    except ValueError:
        return subject


def describe(r: RuleResult) -> str:
    """One rule's verdict in a maintainer's words, from its fields alone: the one phrasing of each rule, which the
    command line, MLflow and the admin view all show (empty for a passed rule with nothing to say)."""
    words = _VERDICTS.get(r.rule)
    return words(r) if words is not None else f"{r.rule.value}: {'passed' if r.passed else 'failed'}."


def _alone(r: RuleResult) -> str:
    return f"the new model alone was right on {r.challenger_only:,}, the current one alone on {r.champion_only:,}"


def _champion(r: RuleResult) -> str:
    return "There was no model in service to compare against: train one first (`newsloop bootstrap`)." if not r.passed else ""


def _feedback(r: RuleResult) -> str:
    if r.passed:
        return ""
    parts = FeedbackParts.of(r)
    if not parts.trusted:
        return "There is no trusted feedback to learn from yet."
    # Trusted texts exist but none may train: name where each went, so "trusted" is never read as "trainable".
    return f"Nothing to train on, so no new model was trained or judged ({parts.words()})."


def _margin(r: RuleResult) -> str:
    verdict = "It scored" if r.passed else "The new model was not clearly better: it scored"
    return (f"{verdict} {pct(r.challenger)} against {pct(r.champion)} (macro-F1, base data blended with users' "
            f"articles); it needed a gain of {points(r.threshold)}.")


def _discordant(r: RuleResult) -> str:
    return (f"The two models disagreed on only {r.challenger_only + r.champion_only:,} articles; at least "
            f"{r.threshold or 0:.0f} are needed to judge.")


def _gain(r: RuleResult) -> str:
    best = min(r.tests, key=lambda t: t.p_value, default=None)
    where = (f" On {_set(best.subject)} ({best.n:,} articles) the new model alone was right on "
             f"{best.challenger_only:,}, the current one alone on {best.champion_only:,}.") if best else ""
    if r.passed:
        return f"It is significantly better (p = {p_text(r.p_value)}, below {r.threshold:g}).{where}"
    return (f"The gain could be chance (p = {p_text(r.p_value)}; it must be below {r.threshold:g}, "
            f"one-sided, adjusted for {len(r.tests)} tests).{where}")


def _not_worse(r: RuleResult) -> str:
    if r.passed:
        return ""
    return (f"The new model is clearly worse on {_set(r.subject)}: accuracy {pct(r.champion)} → "
            f"{pct(r.challenger)}; {_alone(r)} of {r.n:,} articles (p = {p_text(r.p_value)}).")


def _base_loss(r: RuleResult) -> str:
    what = "Accuracy on the base validation data" if r.rule == Rule.BASE_ACCURACY else (
        f"How many {r.subject} articles it finds (recall, base validation)")
    verdict = "is ruled out" if r.passed else "cannot be ruled out"
    return (f"{what}: {pct(r.champion)} → {pct(r.challenger)} ({points(r.difference)}, {r.n:,} articles). "
            f"A loss of {points(r.threshold).lstrip('+')} or more {verdict} (lower bound {points(r.bound)} at "
            f"{pct(r.confidence)} confidence).")


def _new_topic(r: RuleResult) -> str:
    # A topic the current model lacks has no champion to beat: it is judged on its own held-out answers.
    if r.n < (r.threshold or 0):
        return f"The new topic {r.subject} has {r.n:,} held-out answers; it needs {r.threshold or 0:.0f}."
    words = (f"The new topic {r.subject}: {r.n:,} held-out answers, recall {r.recall or 0:.2f} (at least "
             f"{r.recall_bound or 0:.2f}), precision {r.precision or 0:.2f} (at least {r.precision_bound or 0:.2f})"
             f" at {r.confidence or 0:.0%} confidence")
    short = [f"{what} must be shown to be at least {need:.2f}"
             for what, got, need in (("recall", r.recall_bound, r.min_recall),
                                     ("precision", r.precision_bound, r.min_precision))
             if need is not None and (got or 0) < need - 1e-9]
    return f"{words}." if r.passed else f"{words}; {' and '.join(short)}."


def _own_gain(r: RuleResult) -> str:
    counts = (f"{pct(r.challenger)} against {pct(r.champion)} of your {r.n:,} held-out articles; {_alone(r)}")
    if r.passed:
        return f"On your own articles the new model is better: right on {counts}."
    return (f"On your own articles the new model is not better: right on {counts}; it needed a gain of at least "
            f"{points(r.threshold).lstrip('+')}.")


def _own_loss(r: RuleResult) -> str:
    verdict = "is ruled out" if r.passed else "cannot be ruled out"
    return (f"On your own {r.n:,} articles, a loss of {points(r.threshold).lstrip('+')} or more {verdict} (the "
            f"change is {points(r.difference)}, at worst {points(r.bound)} at {pct(r.confidence)} confidence).")


def _topic_not_worse(r: RuleResult) -> str:
    if r.passed:
        return ""
    return (f"It finds your {r.subject} articles clearly less often: {pct(r.champion)} → {pct(r.challenger)} of "
            f"{r.n:,} ({_alone(r)}; a fall this large is not chance, p = {p_text(r.p_value)}).")


def _forgetting(r: RuleResult) -> str:
    if r.passed:
        return ""
    what = ("Accuracy on the base data's topics that kept their meaning" if r.subject == "base validation"
            else f"How many base-data {r.subject} articles it finds")
    return (f"It forgot: {what} fell from {pct(r.champion)} to {pct(r.challenger)} ({r.n:,} articles), more "
            f"than the {points(r.threshold).lstrip('+')} allowed, and the fall is not chance "
            f"(p = {p_text(r.p_value)}).")


def _champion_unchanged(r: RuleResult) -> str:
    if r.passed:
        return ""
    return f"Another model ({r.note or 'none'}) was put in service while it ran, so this one was not promoted."


# Each rule's phrasing (`describe`); a rule missing here is said as its name and whether it passed.
_VERDICTS: dict[Rule, Callable[[RuleResult], str]] = {
    Rule.CHAMPION: _champion, Rule.FEEDBACK: _feedback, Rule.MARGIN: _margin, Rule.DISCORDANT: _discordant,
    Rule.GAIN: _gain, Rule.NOT_WORSE: _not_worse, Rule.BASE_ACCURACY: _base_loss, Rule.LABEL_RECALL: _base_loss,
    Rule.NEW_TOPIC: _new_topic, Rule.OWN_GAIN: _own_gain, Rule.OWN_NOT_WORSE: _own_loss,
    Rule.TOPIC_NOT_WORSE: _topic_not_worse, Rule.FORGETTING: _forgetting, Rule.CHAMPION_UNCHANGED: _champion_unchanged,
}


def describe_power(power: Power) -> str:
    """What the newsroom's own held-out articles could show the gate, in a maintainer's words: the smallest gain they
    show, and how many more would show the target gain (`Power.target`, GateConfig.target_gain)."""
    whose = "held-out articles of your own"
    if not power.n or power.visible is None:
        return f"There are no {whose} yet: the gate cannot see any gain on them."
    seen = (f"With {power.n:,} {whose}, a gain under about {power.visible * 100:.1f} points is invisible to the gate"
            f" (it passes such a model less than {power.power:.0%} of the time)")
    target = f"{power.target * 100:g}-point"
    if power.visible <= power.target + 1e-9:
        return f"{seen}; a {target} gain is visible."
    if power.more_for_target is None:
        return f"{seen}; no practical number of articles would show a {target} gain."
    return f"{seen}; about {power.more_for_target:,} more would show a {target} gain."
