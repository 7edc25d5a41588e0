"""The champion/challenger promotion gate, a pure function of both models' predictions on the evaluation sets.

It returns one typed record per rule (`core.evaluation.decision`); the challenger is promoted when every rule passes.
Which rules decide depends on whose articles there are enough of (GateMode): the newsroom's own held-out articles
(`_decide_own`: OWN_GAIN, OWN_NOT_WORSE, TOPIC_NOT_WORSE, FORGETTING), or else the base rules (MARGIN, DISCORDANT,
GAIN, NOT_WORSE, BASE_ACCURACY, LABEL_RECALL); NEW_TOPIC in both. Each rule, and why: docs/concepts/gate.md,
docs/decisions/gate-tests.md and docs/decisions/own-evidence.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.evaluation.decision import (
    OWN_SETS,
    USERS_SETS,
    EvalSetName,
    GateMode,
    GateResult,
    PairedTest,
    Rule,
    RuleResult,
    SetScores,
)
from core.evaluation.metrics import classification_metrics
from core.evaluation.paired import Power, discordant, mcnemar_p, noninferiority, power_of
from core.labels import LABELS
from core.settings.policies import GateConfig
from core.topic_maps import NewTopicScore

BASE_SET = EvalSetName.BASE.value
HOLDOUT_SET = EvalSetName.HOLDOUT.value
TRAFFIC_SET = EvalSetName.TRAFFIC.value
GOLDEN_SET = EvalSetName.GOLDEN.value
POOLED = EvalSetName.POOLED.value
KNOWN_SETS = (BASE_SET, HOLDOUT_SET, TRAFFIC_SET, GOLDEN_SET)
# Discordance measured on fewer rows than this is too noisy to size anything by: the setting's assumption is used.
MIN_MEASURED_ROWS = 30
MODELS = ("champion", "challenger")

# A users' set earns its full weight only at this many rows; below that its weight shrinks in proportion.
HOLDOUT_FULL_WEIGHT_ROWS = 200

# Scores are differences of floats: a gain of exactly the margin must not fail through rounding
# (0.92 - 0.91 > 0.01 in binary floating point).
_EPS = 1e-9


@dataclass(frozen=True)
class EvalSet:
    """Gold labels and both models' predictions on one evaluation set."""

    name: str  # one of KNOWN_SETS
    y_true: np.ndarray  # int labels 0..K-1, K the topics both models are compared on; a users' set may also hold K
    champion_pred: np.ndarray
    challenger_pred: np.ndarray  # may also be K: a topic the champion lacks (right only on a row of class K)


def combined_score(sets: list[EvalSet], which: str, holdout_weight: float, labels: Sequence[str] = LABELS) -> float:
    """Macro-F1 of `which` model ("champion" or "challenger") over base validation and the users' sets.

    Base validation alone if it is the only set. Otherwise the users' sets share `holdout_weight`: the
    golden set first (the newsroom's own labelled file), then the traffic set, w_t = what is left of
    holdout_weight * min(1, n_traffic / 200), then the feedback holdout likewise; base validation gets the rest. The scaling is
    there because a handful of rows is noisy: ten answers must not outweigh 1,600 validation rows, yet a
    large sample of what users send should count in full.
    """
    if which not in MODELS:
        raise ValueError(f"which must be one of {', '.join(MODELS)}, got {which!r}")
    if not 0.0 <= holdout_weight <= 1.0:
        raise ValueError(f"holdout_weight must be in [0, 1], got {holdout_weight}")
    by_name = _validated(sets, len(labels))
    return _combined(by_name, _weights(by_name, holdout_weight), which, labels)


def decide(sets: list[EvalSet], config: GateConfig, labels: Sequence[str] = LABELS,
           new_topics: Sequence[NewTopicScore] = (), kept: Sequence[int] | None = None) -> GateResult:
    """Every rule's record; promote only when all pass (see the module's docstring). `labels` names the compared
    topics (the classes of `sets`); `new_topics`: the challenger's scores on each topic the champion lacks; `kept`:
    the classes whose base labels still mean what they meant (not renamed, not split; default all), the only base
    rows either mode's base rules read (the own mode's forgetting guard, the base mode's accuracy and recall)."""
    by_name = _validated(sets, len(labels))
    own = _own(by_name)
    kept = range(len(labels)) if kept is None else kept
    if sum(s.y_true.size for s in own) >= config.own_rows:
        return _decide_own(by_name, own, config, labels, new_topics, kept)
    weights = _weights(by_name, config.holdout_weight)
    champion_score = _combined(by_name, weights, "champion", labels)
    challenger_score = _combined(by_name, weights, "challenger", labels)
    rules = [
        RuleResult(Rule.MARGIN, challenger_score - champion_score >= config.margin - _EPS,
                   champion=champion_score, challenger=challenger_score, threshold=config.margin),
    ]
    tests = significance_tests(by_name)
    pooled = tests[POOLED] if POOLED in tests else tests[BASE_SET]
    pairs = pooled.challenger_only + pooled.champion_only
    rules.append(RuleResult(Rule.DISCORDANT, pairs >= config.min_discordant, subject=pooled.subject, n=pooled.n,
                            threshold=float(config.min_discordant), challenger_only=pooled.challenger_only,
                            champion_only=pooled.champion_only))
    gain_p = min(t.p_value for t in tests.values())
    rules.append(RuleResult(Rule.GAIN, gain_p < config.alpha, n=pooled.n, threshold=config.alpha, p_value=gain_p,
                            challenger_only=pooled.challenger_only, champion_only=pooled.champion_only,
                            tests=tuple(tests.values())))
    rules.extend(_not_worse(by_name, config.alpha))
    # A renamed or split topic's base labels predate what it means now: only the topics that kept their meaning are
    # held to their base rows (as in the own mode); the users' sets judge the rest in the current topics.
    base = by_name[BASE_SET]
    meant = np.isin(base.y_true, list(kept))
    if meant.any():
        rules.append(_noninferior(Rule.BASE_ACCURACY, BASE_SET, (base.champion_pred == base.y_true)[meant],
                                  (base.challenger_pred == base.y_true)[meant], config.base_margin,
                                  config.noninferiority_alpha))
    for index in kept:
        label, rows = labels[index], base.y_true == index
        if not rows.any():  # a topic the base data lacks (one a former challenger learned): nothing to compare
            continue
        rules.append(_noninferior(Rule.LABEL_RECALL, label, base.champion_pred[rows] == index,
                                  base.challenger_pred[rows] == index, config.recall_margin,
                                  config.noninferiority_alpha))
    rules.extend(new_topic_rule(score, config) for score in new_topics)
    return _verdict(rules, by_name, weights, labels, scores=(champion_score, challenger_score), p_value=gain_p,
                    mode=GateMode.BASE, power=evidence_power(_own(by_name), config))


def _decide_own(by_name: dict[str, EvalSet], own: list[EvalSet], config: GateConfig, labels: Sequence[str],
                new_topics: Sequence[NewTopicScore], kept: Sequence[int]) -> GateResult:
    """The own mode: the newsroom's own held-out articles (`own`, pooled) decide; base validation only guards the
    topics that kept their meaning against forgetting."""
    y_true = np.concatenate([s.y_true for s in own])
    champion_right = np.concatenate([s.champion_pred for s in own]) == y_true
    challenger_right = np.concatenate([s.challenger_pred for s in own]) == y_true
    n, b, c = discordant(champion_right, challenger_right)
    champion, challenger = float(champion_right.mean()), float(challenger_right.mean())
    gain_p = mcnemar_p(b, c, "greater")
    rules = [
        RuleResult(Rule.OWN_GAIN, b > c and (b - c) / n >= config.margin - _EPS, subject=EvalSetName.OWN.value, n=n,
                   champion=champion, challenger=challenger, threshold=config.margin, p_value=gain_p,
                   challenger_only=b, champion_only=c),
        _noninferior(Rule.OWN_NOT_WORSE, EvalSetName.OWN.value, champion_right, challenger_right, config.own_margin,
                     config.alpha),
        *_topics_not_worse(y_true, champion_right, challenger_right, labels, config.alpha),
        *_forgetting(by_name[BASE_SET], labels, kept, config),
        *(new_topic_rule(score, config) for score in new_topics),
    ]
    weights = {name: (1.0 if any(s.name == name for s in own) else 0.0) for name in by_name}
    return _verdict(rules, by_name, weights, labels, scores=(champion, challenger), p_value=gain_p,
                    mode=GateMode.OWN, power=evidence_power(own, config))


def _verdict(rules: list[RuleResult], by_name: dict[str, EvalSet], weights: dict[str, float], labels: Sequence[str],
             *, scores: tuple[float, float], p_value: float, mode: GateMode, power: Power) -> GateResult:
    """Promote only when every rule passed; each set's scores, at its weight in the decision; `scores`: the
    champion's and the challenger's headline score."""
    return GateResult(
        promote=all(r.passed for r in rules),
        rules=tuple(rules),
        sets=tuple(_set_scores(s, weights[name], labels) for name, s in by_name.items()),
        champion_score=scores[0],
        challenger_score=scores[1],
        p_value=p_value,
        mode=mode.value,
        power=power,
    )


def _own(by_name: dict[str, EvalSet]) -> list[EvalSet]:
    return [by_name[name] for name in OWN_SETS if name in by_name and by_name[name].y_true.size]


def _topics_not_worse(y_true: np.ndarray, champion_right: np.ndarray, challenger_right: np.ndarray,
                      labels: Sequence[str], alpha: float) -> list[RuleResult]:
    """Per topic of the own articles: is the new model significantly worse at finding it (one-sided exact McNemar,
    Bonferroni over the topics tested)? Only a large loss can show on a topic's few dozen articles."""
    present = [k for k in range(len(labels)) if (y_true == k).any()]
    rules = []
    for k in present:
        rows = y_true == k
        n, b, c = discordant(champion_right[rows], challenger_right[rows])
        p = min(1.0, mcnemar_p(b, c, "less") * len(present))
        rules.append(RuleResult(Rule.TOPIC_NOT_WORSE, p >= alpha, subject=labels[k], n=n,
                                champion=float(champion_right[rows].mean()),
                                challenger=float(challenger_right[rows].mean()), threshold=alpha, p_value=p,
                                challenger_only=b, champion_only=c))
    return rules


def _forgetting(base: EvalSet, labels: Sequence[str], kept: Sequence[int], config: GateConfig) -> list[RuleResult]:
    """The base rows of topics that kept their meaning: refused only when the new model reads them (all together,
    or one topic's) at least `forget_margin` worse and the loss is not chance (one-sided exact McNemar at alpha)."""
    rows = np.isin(base.y_true, list(kept))
    checks = [("base validation", rows)] + [(labels[k], base.y_true == k) for k in kept]
    rules = []
    for subject, where in checks:
        if not where.any():
            continue
        truth = base.y_true[where]
        champion_right, challenger_right = base.champion_pred[where] == truth, base.challenger_pred[where] == truth
        n, b, c = discordant(champion_right, challenger_right)
        loss = (c - b) / n
        p = mcnemar_p(b, c, "less")
        rules.append(RuleResult(Rule.FORGETTING, not (loss >= config.forget_margin - _EPS and p < config.alpha),
                                subject=subject, n=n, champion=float(champion_right.mean()),
                                challenger=float(challenger_right.mean()), threshold=config.forget_margin,
                                p_value=p, challenger_only=b, champion_only=c))
    return rules


def evidence_power(sets: Sequence[EvalSet], config: GateConfig) -> Power:
    """What the own mode's rules could see on `sets` (the newsroom's own articles, pooled): the discordance measured
    on them when they have enough rows, else the setting's assumption."""
    n = sum(s.y_true.size for s in sets)
    pairs = sum(int(np.count_nonzero((s.champion_pred == s.y_true) != (s.challenger_pred == s.y_true))) for s in sets)
    measured = n >= MIN_MEASURED_ROWS and pairs > 0
    discordance = pairs / n if measured else config.discordance
    return power_of(n, discordance, measured, config.alpha, config.power, config.own_margin, config.target_gain)


def significance_tests(by_name: dict[str, EvalSet]) -> dict[str, PairedTest]:
    """One-sided exact McNemar ("the challenger is better") on all rows pooled and on each non-empty set,
    each p times the number of tests (Bonferroni).

    Pooling is strongest when a gain is spread over the sets; a set alone is strongest when the gain sits
    in one of them, typically what users sent, which the pooled test would drown in base-validation noise.
    Testing all of them and adjusting keeps the chance of promoting a challenger that is no better at
    most alpha.
    """
    non_empty = {name: s for name, s in by_name.items() if s.y_true.size}
    groups = {name: [s] for name, s in non_empty.items()}
    if len(groups) > 1:
        groups = {POOLED: list(non_empty.values())} | groups  # each row is one paired trial
    tests = {}
    for name, members in groups.items():
        y_true = np.concatenate([s.y_true for s in members])
        n, b, c = discordant(np.concatenate([s.champion_pred for s in members]) == y_true,
                             np.concatenate([s.challenger_pred for s in members]) == y_true)
        tests[name] = PairedTest(name, n, b, c, min(1.0, mcnemar_p(b, c, "greater") * len(groups)))
    return tests


def _not_worse(by_name: dict[str, EvalSet], alpha: float) -> list[RuleResult]:
    """Per non-empty users' set: is the challenger significantly worse there (one-sided, Bonferroni)?"""
    users = [by_name[name] for name in USERS_SETS if name in by_name and by_name[name].y_true.size]
    rules = []
    for s in users:
        n, b, c = discordant(s.champion_pred == s.y_true, s.challenger_pred == s.y_true)
        p = min(1.0, mcnemar_p(b, c, "less") * len(users))
        rules.append(RuleResult(Rule.NOT_WORSE, p >= alpha, subject=s.name, n=n, champion=_mean(s, "champion"),
                                challenger=_mean(s, "challenger"), threshold=alpha, p_value=p, challenger_only=b,
                                champion_only=c))
    return rules


def new_topic_rule(score: NewTopicScore, config: GateConfig) -> RuleResult:
    """A topic the champion lacks passes with enough held-out answers and recall and precision shown (their lower
    bounds at `alpha`) to reach the minimums."""
    recall_bound = lower_bound(score.found, score.n, config.alpha)
    precision_bound = lower_bound(score.right, score.predicted, config.alpha)
    passed = (score.n >= config.min_new_topic_answers and recall_bound >= config.min_new_topic_recall - _EPS
              and precision_bound >= config.min_new_topic_precision - _EPS)
    return RuleResult(Rule.NEW_TOPIC, passed, subject=score.name, n=score.n,
                      threshold=float(config.min_new_topic_answers), recall=score.recall, precision=score.precision,
                      min_recall=config.min_new_topic_recall, min_precision=config.min_new_topic_precision,
                      recall_bound=recall_bound, precision_bound=precision_bound, confidence=1.0 - config.alpha)


def lower_bound(successes: int, trials: int, alpha: float) -> float:
    """The exact (Clopper-Pearson) one-sided lower confidence bound, at 1 - alpha, on a proportion seen as
    `successes` of `trials`; 0 with none."""
    from scipy.stats import beta

    return float(beta.ppf(alpha, successes, trials - successes + 1)) if successes else 0.0


def _noninferior(rule: Rule, subject: str, champion_correct: np.ndarray, challenger_correct: np.ndarray,
                 margin: float, alpha: float) -> RuleResult:
    n, b, c = discordant(champion_correct, challenger_correct)
    test = noninferiority(n, b, c, margin, alpha)
    return RuleResult(
        rule, test.passed, subject=subject, n=n,
        champion=float(np.mean(champion_correct)) if n else None,
        challenger=float(np.mean(challenger_correct)) if n else None,
        threshold=margin, p_value=test.p_value, bound=test.lower_bound if n else None, confidence=1.0 - alpha,
        challenger_only=b, champion_only=c,
    )


def _validated(sets: list[EvalSet], num_labels: int = len(LABELS)) -> dict[str, EvalSet]:
    """Check every set and index them by name, base validation first; ValueError says what is wrong."""
    by_name: dict[str, EvalSet] = {}
    for s in sets:
        if s.name not in KNOWN_SETS:
            raise ValueError(f"unknown evaluation set {s.name!r}; expected one of {', '.join(KNOWN_SETS)}")
        if s.name in by_name:
            raise ValueError(f"evaluation set {s.name!r} given more than once")
        arrays = {"y_true": s.y_true, "champion_pred": s.champion_pred, "challenger_pred": s.challenger_pred}
        for field, values in arrays.items():
            # Class `num_labels` is a topic the champion lacks: the challenger may predict it, and a users' set may
            # hold answers naming it (base validation's labels predate it).
            extra = field == "challenger_pred" or (field == "y_true" and s.name != BASE_SET)
            _check_labels(s.name, field, np.asarray(values), num_labels + extra)
        lengths = {field: np.asarray(values).size for field, values in arrays.items()}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"{s.name}: arrays differ in length: {lengths}")
        by_name[s.name] = EvalSet(s.name, *(np.asarray(values) for values in arrays.values()))
    if BASE_SET not in by_name:
        raise ValueError(f"the {BASE_SET!r} set is required")
    if by_name[BASE_SET].y_true.size == 0:
        raise ValueError(f"the {BASE_SET!r} set is empty")
    return {name: by_name[name] for name in KNOWN_SETS if name in by_name}


def _check_labels(set_name: str, field: str, values: np.ndarray, num_labels: int) -> None:
    if values.ndim != 1:
        raise ValueError(f"{set_name}.{field} must be one-dimensional, got shape {values.shape}")
    if values.size == 0:
        return
    if not np.issubdtype(values.dtype, np.integer):
        raise ValueError(f"{set_name}.{field} must hold integer labels, got dtype {values.dtype}")
    if values.min() < 0 or values.max() >= num_labels:
        raise ValueError(
            f"{set_name}.{field} has labels outside 0..{num_labels - 1} "
            f"(min {int(values.min())}, max {int(values.max())})"
        )


def _weights(by_name: dict[str, EvalSet], holdout_weight: float) -> dict[str, float]:
    left, weights = holdout_weight, {}
    for name in (GOLDEN_SET, TRAFFIC_SET, HOLDOUT_SET):
        if name in by_name:
            weights[name] = left * min(1.0, by_name[name].y_true.size / HOLDOUT_FULL_WEIGHT_ROWS)
            left -= weights[name]
    return {BASE_SET: 1.0 - sum(weights.values())} | weights


def _combined(by_name: dict[str, EvalSet], weights: dict[str, float], which: str, labels: Sequence[str]) -> float:
    # A zero-weight set is skipped rather than scored: it may be empty, which sklearn refuses.
    return float(sum(w * _macro_f1(by_name[name], which, labels) for name, w in weights.items() if w > 0))


def _pred(s: EvalSet, which: str) -> np.ndarray:
    return s.champion_pred if which == "champion" else s.challenger_pred


def _mean(s: EvalSet, which: str) -> float:
    return float(np.mean(_pred(s, which) == s.y_true))


def _macro_f1(s: EvalSet, which: str, labels: Sequence[str]) -> float:
    # Over the compared topics only: "a topic the champion lacks" (class len(labels)) is no class of its own.
    return classification_metrics(s.y_true, _pred(s, which), labels)["macro_f1"]


def _set_scores(s: EvalSet, weight: float, labels: Sequence[str]) -> SetScores:
    # sklearn refuses empty inputs; an empty set simply has no scores (and zero weight).
    champion, challenger = (classification_metrics(s.y_true, _pred(s, which), labels) if s.y_true.size else None
                            for which in MODELS)
    return SetScores(
        s.name, int(s.y_true.size), float(weight),
        champion_macro_f1=champion["macro_f1"] if champion else None,
        challenger_macro_f1=challenger["macro_f1"] if challenger else None,
        champion_accuracy=champion["accuracy"] if champion else None,
        challenger_accuracy=challenger["accuracy"] if challenger else None,
    )
