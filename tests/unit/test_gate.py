"""The promotion gate: one typed record per rule, the numbers it compared, and the verdicts on the boundaries."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.evaluation.decision import GateResult, Rule
from core.evaluation.paired import noninferiority
from core.labels import LABELS
from core.settings.policies import GateConfig
from retrain.gate.rules import EvalSet, combined_score, decide

PER_CLASS = 100


# The base data's rules alone: more own held-out articles than any test here has (GateConfig.own_rows); the own
# mode's rules are tested in tests/unit/test_gate_own.py.
BASE_ONLY = 1_000_000


def balanced_truth(per_class: int = PER_CLASS) -> np.ndarray:
    return np.repeat(np.arange(len(LABELS)), per_class)


def wrong_at(y_true: np.ndarray, positions: np.ndarray | list[int]) -> np.ndarray:
    """A copy of y_true with the given positions mislabelled as the next class."""
    pred = y_true.copy()
    pred[positions] = (pred[positions] + 1) % len(LABELS)
    return pred


def rows_of_class(label: int, count: int, per_class: int = PER_CLASS, start: int = 0) -> list[int]:
    return list(range(label * per_class + start, label * per_class + start + count))


def base(y_true: np.ndarray, champion: np.ndarray, challenger: np.ndarray) -> EvalSet:
    return EvalSet("base_validation", y_true, champion, challenger)


def failed(result: GateResult) -> list[tuple[Rule, str]]:
    return [(r.rule, r.subject) for r in result.failed]


def test_clearly_better_challenger_is_promoted_and_every_rule_says_why() -> None:
    y = balanced_truth()
    champion = wrong_at(y, [i for label in range(4) for i in rows_of_class(label, 10)])
    result = decide([base(y, champion, y.copy())], GateConfig(own_rows=BASE_ONLY))
    assert result.promote and result.failed == () and result.reasons == []
    assert [r.rule for r in result.rules] == [Rule.MARGIN, Rule.DISCORDANT, Rule.GAIN, Rule.BASE_ACCURACY,
                                              *[Rule.LABEL_RECALL] * 4]
    gain = result.rule(Rule.GAIN)
    assert (gain.challenger_only, gain.champion_only, gain.n) == (40, 0, 400)
    assert gain.p_value == pytest.approx(0.5**40) and gain.threshold == 0.05
    accuracy = result.rule(Rule.BASE_ACCURACY)
    assert (accuracy.champion, accuracy.challenger, accuracy.threshold) == (0.9, 1.0, 0.01)
    assert accuracy.difference == pytest.approx(0.1) and accuracy.bound > 0
    assert result.rule(Rule.LABEL_RECALL, "Sports").champion == pytest.approx(0.9)
    assert result.delta > 0.05


def test_gain_below_margin_is_refused_for_that_reason_alone() -> None:
    y = balanced_truth()
    champion = wrong_at(y, [i for label in range(4) for i in rows_of_class(label, 3)])
    result = decide([base(y, champion, y.copy())], GateConfig(own_rows=BASE_ONLY, margin=0.05))
    assert failed(result) == [(Rule.MARGIN, "")]
    margin = result.rule(Rule.MARGIN)
    assert margin.threshold == 0.05 and margin.difference == pytest.approx(result.delta)
    assert result.reasons[0].startswith("The new model was not clearly better: it scored")
    assert result.reasons[0].endswith("it needed a gain of +5.00 points.")


def test_small_gain_on_few_discordant_pairs_is_not_significant() -> None:
    y = balanced_truth(per_class=400)
    champion = wrong_at(y, [0, 400, 800])
    challenger = wrong_at(y, [1])
    result = decide([base(y, champion, challenger)], GateConfig(own_rows=BASE_ONLY, margin=0.0))
    assert failed(result) == [(Rule.GAIN, "")]
    gain = result.rule(Rule.GAIN)
    assert (gain.challenger_only, gain.champion_only) == (3, 1)
    assert gain.p_value == pytest.approx(5 / 16)  # P(B >= 3 | 4 discordant, 1/2): one-sided exact
    assert result.reasons[0].startswith("The gain could be chance (p = 0.31; it must be below 0.05, one-sided")


def test_identical_models_are_refused_for_lack_of_discordant_pairs() -> None:
    y = balanced_truth()
    result = decide([base(y, y.copy(), y.copy())], GateConfig(own_rows=BASE_ONLY, margin=0.0))
    assert failed(result) == [(Rule.DISCORDANT, "base_validation"), (Rule.GAIN, "")]
    assert result.rule(Rule.DISCORDANT).threshold == 1 and result.p_value == 1.0


def test_a_clear_loss_on_base_is_refused_even_when_macro_f1_rises() -> None:
    # Imbalanced set: the challenger rescues a 20-row class the champion never gets right (macro-F1 up)
    # but breaks 40 rows of the 1,000-row class (accuracy down 1.9 points).
    y = np.concatenate([np.zeros(1000, dtype=int), np.repeat([1, 2, 3], 20)])
    champion = y.copy()
    champion[y == 3] = 0
    challenger = y.copy()
    challenger[:40] = 1
    result = decide([base(y, champion, challenger)], GateConfig(own_rows=BASE_ONLY, recall_margin=0.05))
    assert result.delta > 0.1
    assert (Rule.BASE_ACCURACY, "base_validation") in failed(result)
    assert (Rule.LABEL_RECALL, "World") in failed(result)
    accuracy = result.rule(Rule.BASE_ACCURACY)
    assert (accuracy.challenger_only, accuracy.champion_only, accuracy.n) == (20, 40, 1060)
    assert accuracy.difference == pytest.approx(-20 / 1060)


@pytest.mark.parametrize(("lost", "passes"), [(6, True), (7, False)])
def test_label_recall_non_inferiority_on_the_boundary(lost: int, passes: bool) -> None:
    # 400 Sci/Tech rows; the challenger loses `lost` of them and wins clearly elsewhere. With no row gained back,
    # 6 lost (1.5 points) still rules out a 3-point drop at 95%, 7 lost (1.75 points) no longer does.
    y = balanced_truth(per_class=400)
    champion = wrong_at(y, [i for label in range(3) for i in rows_of_class(label, 40, per_class=400)])
    challenger = wrong_at(y, rows_of_class(3, lost, per_class=400))
    result = decide([base(y, champion, challenger)], GateConfig(own_rows=BASE_ONLY))
    recall = result.rule(Rule.LABEL_RECALL, "Sci/Tech")
    assert (recall.n, recall.challenger_only, recall.champion_only) == (400, 0, lost)
    assert recall.difference == pytest.approx(-lost / 400) and recall.threshold == 0.03
    assert recall.passed is passes and result.promote is passes
    assert (recall.bound > -0.03) is passes  # the bound shown is the one decided on
    assert recall.bound == pytest.approx(noninferiority(400, 0, lost, 0.03, 0.05).lower_bound)


@pytest.mark.parametrize(("lost", "passes"), [(12, True), (13, False)])
def test_base_accuracy_non_inferiority_on_the_boundary(lost: int, passes: bool) -> None:
    # 2,000 rows. Users' set: a clear gain. Base: `lost` rows lost across labels, none gained: 12 (0.60 points)
    # is shown to be within the 1-point margin, 13 (0.65 points) is not; neither is a significant loss under
    # the old rule, and both would have been refused by its zero tolerance.
    y = balanced_truth(per_class=500)
    challenger = wrong_at(y, [label * 500 + i for i in range(lost) for label in [i % 4]])
    holdout_y = balanced_truth(per_class=25)
    holdout = EvalSet("feedback_holdout", holdout_y, wrong_at(holdout_y, list(range(40))), holdout_y.copy())
    result = decide([base(y, y.copy(), challenger), holdout], GateConfig(own_rows=BASE_ONLY))
    accuracy = result.rule(Rule.BASE_ACCURACY)
    assert (accuracy.n, accuracy.champion_only, accuracy.difference) == (2000, lost, pytest.approx(-lost / 2000))
    assert accuracy.passed is passes and (accuracy.bound > -0.01) is passes
    assert result.promote is passes, result.reasons


def test_a_drop_the_old_zero_tolerance_refused_is_now_accepted() -> None:
    # Issue 27: a challenger that lost 4 of 1,636 base examples net (10 lost, 6 gained) was refused.
    y = balanced_truth(per_class=409)
    lost = [label * 409 + i for label in range(4) for i in range(2, 5)][:10]
    champion = wrong_at(y, [label * 409 + i for label in range(4) for i in range(5, 7)][:6])
    challenger = wrong_at(y, lost)
    holdout_y = balanced_truth(per_class=40)
    holdout = EvalSet("feedback_holdout", holdout_y, wrong_at(holdout_y, list(range(0, 160, 4))), holdout_y.copy())
    result = decide([base(y, champion, challenger), holdout], GateConfig(own_rows=BASE_ONLY))
    accuracy = result.rule(Rule.BASE_ACCURACY)
    assert (accuracy.challenger_only, accuracy.champion_only) == (6, 10)
    assert accuracy.passed and result.promote, result.reasons


def test_traffic_gain_promotes_and_is_the_evidence() -> None:
    y = balanced_truth(per_class=400)
    traffic_y = balanced_truth(per_class=50)
    champion = wrong_at(traffic_y, list(range(0, 200, 10)))  # 20 errors the challenger fixes
    challenger = wrong_at(traffic_y, [1, 2])  # and 2 new ones
    sets = [base(y, y.copy(), y.copy()), EvalSet("traffic", traffic_y, champion, challenger)]
    result = decide(sets, GateConfig(own_rows=BASE_ONLY))
    assert result.promote, result.reasons
    gain = result.rule(Rule.GAIN)
    by_set = {t.subject: t for t in gain.tests}
    assert set(by_set) == {"pooled", "base_validation", "traffic"}
    assert (by_set["traffic"].challenger_only, by_set["traffic"].champion_only, by_set["traffic"].n) == (20, 2, 200)
    assert gain.p_value == by_set["traffic"].p_value < 0.05
    assert result.scores("traffic").weight == pytest.approx(0.5) and result.scores("base_validation").weight == 0.5
    assert result.rule(Rule.NOT_WORSE, "traffic").passed


def test_significantly_worse_on_traffic_is_refused() -> None:
    y = balanced_truth()
    traffic_y = balanced_truth(per_class=50)
    fixes = [i for label in range(4) for i in rows_of_class(label, 10)]
    sets = [base(y, wrong_at(y, fixes), y.copy()),
            EvalSet("traffic", traffic_y, traffic_y.copy(), wrong_at(traffic_y, list(range(0, 200, 20))))]
    result = decide(sets, GateConfig(own_rows=BASE_ONLY, margin=0.0))
    worse = result.rule(Rule.NOT_WORSE, "traffic")
    assert not worse.passed and (worse.challenger_only, worse.champion_only) == (0, 10)
    assert worse.p_value == pytest.approx(0.5**10)


def test_a_gain_concentrated_in_the_holdout_is_not_drowned_by_base_noise() -> None:
    # Base validation: the challenger fixes 20 rows and breaks 20 others in the same classes (pure churn).
    # Feedback holdout: it fixes 9 of the champion's 9 mistakes. Pooled, 29 vs 20 is not significant.
    y = balanced_truth(per_class=400)
    fixes = [i for label in range(4) for i in rows_of_class(label, 5, per_class=400)]
    breaks = [i + 50 for i in fixes]
    holdout_y = balanced_truth(per_class=10)
    sets = [
        base(y, wrong_at(y, fixes), wrong_at(y, breaks)),
        EvalSet("feedback_holdout", holdout_y, wrong_at(holdout_y, list(range(0, 36, 4))), holdout_y.copy()),
    ]
    result = decide(sets, GateConfig(own_rows=BASE_ONLY))
    by_set = {t.subject: t for t in result.rule(Rule.GAIN).tests}
    assert (by_set["pooled"].challenger_only, by_set["pooled"].champion_only) == (29, 20)
    assert result.p_value == pytest.approx(0.5**9 * 3)  # 9 vs 0, exact one-sided, times three tests
    assert result.promote, result.reasons


def perfect_base_and_useless_users_set(n: int, name: str = "feedback_holdout") -> list[EvalSet]:
    """Champion scores macro-F1 1.0 on base and 0.0 on the users' set, so its combined score is 1 - w_eff."""
    y = balanced_truth()
    users_y = np.arange(n) % len(LABELS)
    return [base(y, y.copy(), y.copy()), EvalSet(name, users_y, wrong_at(users_y, np.arange(n)), users_y.copy())]


@pytest.mark.parametrize(
    ("n_holdout", "holdout_weight", "expected"),
    [(200, 0.5, 0.5), (400, 0.5, 0.5), (100, 0.5, 0.75), (20, 0.5, 0.95), (200, 0.2, 0.8), (200, 0.0, 1.0)],
)
def test_combined_score_weights_users_sets_and_scales_down_small_ones(
    n_holdout: int, holdout_weight: float, expected: float
) -> None:
    for name in ("feedback_holdout", "traffic"):
        sets = perfect_base_and_useless_users_set(n_holdout, name)
        assert combined_score(sets, "champion", holdout_weight) == pytest.approx(expected)
        assert combined_score(sets, "challenger", holdout_weight) == pytest.approx(1.0)


def test_traffic_claims_its_weight_before_the_holdout() -> None:
    holdout = perfect_base_and_useless_users_set(200)
    traffic = perfect_base_and_useless_users_set(100, "traffic")[1]
    result = decide([*holdout, traffic], GateConfig(own_rows=BASE_ONLY))
    weights = {s.name: s.weight for s in result.sets}
    assert weights == pytest.approx({"base_validation": 0.5, "traffic": 0.25, "feedback_holdout": 0.25})


def test_empty_users_set_counts_for_nothing() -> None:
    y = balanced_truth()
    empty = np.array([], dtype=int)
    sets = [base(y, y.copy(), y.copy()), EvalSet("feedback_holdout", empty, empty, empty)]
    assert combined_score(sets, "champion", 0.5) == 1.0
    holdout = decide(sets, GateConfig(own_rows=BASE_ONLY)).scores("feedback_holdout")
    assert (holdout.n, holdout.weight, holdout.champion_accuracy, holdout.challenger_macro_f1) == (0, 0.0, None, None)


def test_result_survives_json_and_back() -> None:
    sets = [EvalSet(s.name, s.y_true, s.challenger_pred, s.champion_pred) for s in perfect_base_and_useless_users_set(40)]
    result = decide(sets, GateConfig(own_rows=BASE_ONLY))
    assert not result.promote
    restored = GateResult.from_dict(json.loads(json.dumps(result.to_dict(), allow_nan=False)))
    assert restored == result
    assert restored.reasons == result.reasons and restored.rule(Rule.NOT_WORSE, "feedback_holdout").p_value < 0.05


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (
            [EvalSet("feedback_holdout", np.array([0]), np.array([0]), np.array([0]))],
            "'base_validation' set is required",
        ),
        ([base(np.array([0, 1]), np.array([0]), np.array([0, 1]))], "differ in length"),
        ([base(np.array([0, 4]), np.array([0, 1]), np.array([0, 1]))], r"labels outside 0\.\.3"),
        ([base(np.array([0, 1]), np.array([0, -1]), np.array([0, 1]))], r"labels outside 0\.\.3"),
        ([base(np.array([0.0, 1.0]), np.array([0, 1]), np.array([0, 1]))], "integer labels"),
        ([base(np.zeros((2, 2), dtype=int), np.array([0, 1]), np.array([0, 1]))], "one-dimensional"),
        ([base(np.array([], dtype=int), np.array([], dtype=int), np.array([], dtype=int))], "is empty"),
        ([EvalSet("test", np.array([0]), np.array([0]), np.array([0]))], "unknown evaluation set 'test'"),
        ([base(np.array([0]), np.array([0]), np.array([0]))] * 2, "more than once"),
    ],
)
def test_invalid_input_raises_value_error(sets: list[EvalSet], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        decide(sets, GateConfig(own_rows=BASE_ONLY))


@pytest.mark.parametrize(
    "overrides",
    [{"margin": -0.1}, {"alpha": 0.0}, {"recall_margin": 0.0}, {"base_margin": 1.5}, {"noninferiority_alpha": 1.0},
     {"holdout_weight": 1.2}, {"min_discordant": -1}, {"power": 1.0}],
)
def test_invalid_config_raises_value_error(overrides: dict) -> None:
    with pytest.raises(ValueError, match=next(iter(overrides))):
        GateConfig(**overrides)


def test_combined_score_rejects_unknown_model() -> None:
    y = balanced_truth()
    with pytest.raises(ValueError, match="which must be one of"):
        combined_score([base(y, y, y)], "baseline", 0.5)
