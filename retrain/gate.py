"""The champion/challenger promotion gate: margin, McNemar significance, base accuracy and per-label recall, as
pure functions."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy.stats import binomtest

from core.labels import LABELS, NUM_LABELS
from core.metrics import classification_metrics
from core.policies import GateConfig

BASE_SET = "base_validation"
HOLDOUT_SET = "feedback_holdout"
KNOWN_SETS = (BASE_SET, HOLDOUT_SET)
MODELS = ("champion", "challenger")
POOLED = "pooled"

# The holdout earns its full weight only at this many rows; below that its weight shrinks in proportion.
HOLDOUT_FULL_WEIGHT_ROWS = 200

# Scores and recalls are differences of floats: a gain of exactly the margin, or a drop of exactly the
# tolerance, must not flip the decision through rounding (0.92 - 0.91 > 0.01 in binary floating point).
_EPS = 1e-9


@dataclass(frozen=True)
class EvalSet:
    """Gold labels and both models' predictions on one evaluation set."""

    name: str  # "base_validation" or "feedback_holdout"
    y_true: np.ndarray  # int labels 0..3
    champion_pred: np.ndarray
    challenger_pred: np.ndarray


@dataclass(frozen=True)
class GateDecision:
    """The verdict and every number behind it, so a maintainer can read why."""

    promote: bool
    reasons: list[str]  # every reason for refusal (empty when promoted)
    champion_score: float
    challenger_score: float
    delta: float
    p_value: float  # smallest Bonferroni-adjusted McNemar p among the tests the challenger leads (else pooled)
    discordant: dict[str, int]  # pooled over every set: {"challenger_only_right": b, "champion_only_right": c}
    recall_drops: dict[str, float]  # per label: champion recall - challenger recall on base validation
    recall_p_values: dict[str, float]  # per label: exact McNemar p on its base rows, times the number of labels
    per_set: dict[str, dict]  # per set: n, weight, champion/challenger macro-F1 and accuracy

    def as_dict(self) -> dict:
        """Plain Python values only, for MLflow tags and the CLI's JSON."""
        return asdict(self)


def mcnemar_exact(champion_correct: np.ndarray, challenger_correct: np.ndarray) -> tuple[float, int, int]:
    """Two-sided exact McNemar test on the discordant pairs; returns (p, b, c).

    b = challenger right and champion wrong, c = the reverse; p = binomtest(b, b + c, 0.5, two-sided).
    With no discordant pairs the models are indistinguishable, so p = 1.0.
    """
    champion = np.asarray(champion_correct).astype(bool)
    challenger = np.asarray(challenger_correct).astype(bool)
    if champion.ndim != 1 or challenger.ndim != 1:
        raise ValueError("correct-vectors must be one-dimensional")
    if champion.shape != challenger.shape:
        raise ValueError(f"correct-vectors differ in length: {champion.size} vs {challenger.size}")
    b = int(np.count_nonzero(challenger & ~champion))
    c = int(np.count_nonzero(champion & ~challenger))
    if b + c == 0:
        return 1.0, b, c
    return float(binomtest(b, b + c, 0.5, alternative="two-sided").pvalue), b, c


def combined_score(sets: list[EvalSet], which: str, holdout_weight: float) -> float:
    """Macro-F1 of `which` model ("champion" or "challenger") over base validation and the feedback holdout.

    Base validation alone if it is the only set; otherwise (1 - w) * F1_base + w * F1_holdout with
    w = holdout_weight * min(1, n_holdout / 200). The scaling is there because a handful of feedback rows
    is noisy: ten corrections must not outweigh 1,600 validation rows, yet a large holdout, which reflects
    what users actually send, should count in full.
    """
    if which not in MODELS:
        raise ValueError(f"which must be one of {', '.join(MODELS)}, got {which!r}")
    if not 0.0 <= holdout_weight <= 1.0:
        raise ValueError(f"holdout_weight must be in [0, 1], got {holdout_weight}")
    by_name = _validated(sets)
    return _combined(by_name, _weights(by_name, holdout_weight), which)


def decide(sets: list[EvalSet], config: GateConfig) -> GateDecision:
    """Promote only if the challenger clears the margin, wins significantly, is no worse on base validation
    and drops no label's recall there."""
    by_name = _validated(sets)
    weights = _weights(by_name, config.holdout_weight)
    reasons: list[str] = []

    champion_score = _combined(by_name, weights, "champion")
    challenger_score = _combined(by_name, weights, "challenger")
    delta = challenger_score - champion_score
    if delta < config.margin - _EPS:
        reasons.append(
            f"macro-F1 gain {delta:.4f} is below the required margin {config.margin:.4f} "
            f"(champion {champion_score:.4f}, challenger {challenger_score:.4f})"
        )

    tests = significance_tests(by_name)
    _, b, c = tests[POOLED]
    p_value = _best_p(tests)
    reasons.extend(_significance_reasons(tests, config))

    base = by_name[BASE_SET]
    # A win on what users sent must not be paid for with the data everyone else sends.
    champion_acc, challenger_acc = (float(np.mean(_pred(base, which) == base.y_true)) for which in MODELS)
    if champion_acc - challenger_acc > config.base_tolerance + _EPS:
        reasons.append(
            f"accuracy on {BASE_SET} fell from {champion_acc:.4f} to {challenger_acc:.4f} "
            f"(drop {champion_acc - challenger_acc:.4f} exceeds the tolerance {config.base_tolerance:.4f})"
        )
    champion_recall = _recalls(base, "champion")
    challenger_recall = _recalls(base, "challenger")
    recall_drops = {label: champion_recall[label] - challenger_recall[label] for label in LABELS}
    recall_p = label_tests(base)
    for label, drop in recall_drops.items():
        # A regression must be both large enough to matter and more than churn: with ~400 rows a label,
        # a retrain that changes nothing systematic still moves a recall by a point either way.
        if drop > config.recall_tolerance + _EPS and recall_p[label] < config.alpha:
            reasons.append(
                f"{label} recall on {BASE_SET} fell from {champion_recall[label]:.4f} to "
                f"{challenger_recall[label]:.4f} (drop {drop:.4f} exceeds the tolerance {config.recall_tolerance:.4f}; "
                f"McNemar p = {recall_p[label]:.4g} on its rows)"
            )

    return GateDecision(
        promote=not reasons,
        reasons=reasons,
        champion_score=champion_score,
        challenger_score=challenger_score,
        delta=float(delta),
        p_value=p_value,
        discordant={"challenger_only_right": b, "champion_only_right": c},
        recall_drops=recall_drops,
        recall_p_values=recall_p,
        per_set={name: _set_summary(s, weights[name]) | _test_summary(tests.get(name)) for name, s in by_name.items()},
    )


def significance_tests(by_name: dict[str, EvalSet]) -> dict[str, tuple[float, int, int]]:
    """Exact McNemar (p, b, c) on all examples pooled and on each non-empty set alone, p Bonferroni-adjusted.

    Pooling is strongest when a gain is spread over both sets; a set alone is strongest when the gain sits
    in one of them, typically the feedback holdout (what users corrected), which the pooled test would
    drown in base-validation noise. Testing all of them and multiplying each p by the number of tests keeps
    the chance of promoting a challenger that is no better at most alpha.
    """
    non_empty = {name: s for name, s in by_name.items() if s.y_true.size}
    groups = {name: [s] for name, s in non_empty.items()}
    if len(groups) > 1:
        groups = {POOLED: list(non_empty.values())} | groups  # each example is one paired trial
    tests = {}
    for name, sets in groups.items():
        y_true = np.concatenate([s.y_true for s in sets])
        champion_correct = np.concatenate([s.champion_pred for s in sets]) == y_true
        challenger_correct = np.concatenate([s.challenger_pred for s in sets]) == y_true
        p, b, c = mcnemar_exact(champion_correct, challenger_correct)
        tests[name] = (min(1.0, p * len(groups)), b, c)
    if POOLED not in tests:
        tests[POOLED] = tests[BASE_SET]
    return tests


def label_tests(base: EvalSet) -> dict[str, float]:
    """Per label, exact McNemar p (Bonferroni over labels) on the base rows of that label: is its recall
    change more than churn?"""
    out = {}
    for index, label in enumerate(LABELS):
        rows = base.y_true == index
        p, _, _ = mcnemar_exact(base.champion_pred[rows] == index, base.challenger_pred[rows] == index)
        out[label] = min(1.0, p * len(LABELS))
    return out


def _best_p(tests: dict[str, tuple[float, int, int]]) -> float:
    """The strongest evidence for the challenger: the smallest adjusted p among tests it leads; if it leads
    none, the pooled test's p (then evidence of a difference, in the champion's favour)."""
    return min((p for p, b, c in tests.values() if b > c), default=tests[POOLED][0])


def _describe(tests: dict[str, tuple[float, int, int]]) -> str:
    return "; ".join(
        f"{name}: challenger alone right on {b}, champion alone right on {c}, p = {p:.4g}"
        for name, (p, b, c) in tests.items()
    )


def _significance_reasons(tests: dict[str, tuple[float, int, int]], config: GateConfig) -> list[str]:
    # At most one reason, the most telling: "worse" is checked before "not significant" because a significant
    # loss is the case a maintainer most needs to see named. p-values are Bonferroni-adjusted.
    _, b, c = tests[POOLED]
    pairs = f"challenger alone right on {b}, champion alone right on {c}"
    if b + c < config.min_discordant:
        return [
            f"only {b + c} discordant examples ({pairs}); the significance test needs at least {config.min_discordant}"
        ]
    worse = [(name, p) for name, (p, b_, c_) in tests.items() if c_ > b_ and p < config.alpha]
    if worse:
        name, p = worse[0]
        return [f"challenger is significantly worse on {name} ({_describe({name: tests[name]})}; McNemar)"]
    best = _best_p(tests)
    if not any(b_ > c_ for _, b_, c_ in tests.values()):
        return [f"challenger is not better on the discordant examples ({pairs}; McNemar p = {tests[POOLED][0]:.4g})"]
    if best >= config.alpha:
        return [f"McNemar p-value {best:.4g} is not below alpha {config.alpha:g} ({_describe(tests)})"]
    return []


def _validated(sets: list[EvalSet]) -> dict[str, EvalSet]:
    """Check every set and index them by name; ValueError says what is wrong."""
    by_name: dict[str, EvalSet] = {}
    for s in sets:
        if s.name not in KNOWN_SETS:
            raise ValueError(f"unknown evaluation set {s.name!r}; expected one of {', '.join(KNOWN_SETS)}")
        if s.name in by_name:
            raise ValueError(f"evaluation set {s.name!r} given more than once")
        arrays = {"y_true": s.y_true, "champion_pred": s.champion_pred, "challenger_pred": s.challenger_pred}
        for field, values in arrays.items():
            _check_labels(s.name, field, np.asarray(values))
        lengths = {field: np.asarray(values).size for field, values in arrays.items()}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"{s.name}: arrays differ in length: {lengths}")
        by_name[s.name] = EvalSet(s.name, *(np.asarray(values) for values in arrays.values()))
    if BASE_SET not in by_name:
        raise ValueError(f"the {BASE_SET!r} set is required")
    if by_name[BASE_SET].y_true.size == 0:
        raise ValueError(f"the {BASE_SET!r} set is empty")
    return by_name


def _check_labels(set_name: str, field: str, values: np.ndarray) -> None:
    if values.ndim != 1:
        raise ValueError(f"{set_name}.{field} must be one-dimensional, got shape {values.shape}")
    if values.size == 0:
        return
    if not np.issubdtype(values.dtype, np.integer):
        raise ValueError(f"{set_name}.{field} must hold integer labels, got dtype {values.dtype}")
    if values.min() < 0 or values.max() >= NUM_LABELS:
        raise ValueError(
            f"{set_name}.{field} has labels outside 0..{NUM_LABELS - 1} "
            f"(min {int(values.min())}, max {int(values.max())})"
        )


def _weights(by_name: dict[str, EvalSet], holdout_weight: float) -> dict[str, float]:
    holdout = by_name.get(HOLDOUT_SET)
    n_holdout = 0 if holdout is None else holdout.y_true.size
    w = holdout_weight * min(1.0, n_holdout / HOLDOUT_FULL_WEIGHT_ROWS)
    return {BASE_SET: 1.0 - w} | ({HOLDOUT_SET: w} if holdout is not None else {})


def _combined(by_name: dict[str, EvalSet], weights: dict[str, float], which: str) -> float:
    # A zero-weight set is skipped rather than scored: it may be empty, which sklearn refuses.
    return float(sum(w * _macro_f1(by_name[name], which) for name, w in weights.items() if w > 0))


def _pred(s: EvalSet, which: str) -> np.ndarray:
    return s.champion_pred if which == "champion" else s.challenger_pred


def _macro_f1(s: EvalSet, which: str) -> float:
    return classification_metrics(s.y_true, _pred(s, which))["macro_f1"]


def _recalls(s: EvalSet, which: str) -> dict[str, float]:
    per_label = classification_metrics(s.y_true, _pred(s, which))["per_label"]
    return {label: per_label[label]["recall"] for label in LABELS}


def _test_summary(test: tuple[float, int, int] | None) -> dict:
    if test is None:
        return {}
    p, b, c = test
    return {"p_value": p, "challenger_only_right": b, "champion_only_right": c}


def _set_summary(s: EvalSet, weight: float) -> dict:
    summary: dict = {"n": int(s.y_true.size), "weight": float(weight)}
    for which in MODELS:
        # sklearn refuses empty inputs; an empty holdout simply has no scores (and zero weight).
        metrics = classification_metrics(s.y_true, _pred(s, which)) if s.y_true.size else None
        summary[f"{which}_macro_f1"] = metrics["macro_f1"] if metrics else None
        summary[f"{which}_accuracy"] = metrics["accuracy"] if metrics else None
    return summary
