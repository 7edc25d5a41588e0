from __future__ import annotations

import json

import numpy as np
import pytest

from core.labels import LABELS
from core.policies import GateConfig
from retrain.gate import EvalSet, combined_score, decide, mcnemar_exact

PER_CLASS = 100


def balanced_truth(per_class: int = PER_CLASS) -> np.ndarray:
    return np.repeat(np.arange(len(LABELS)), per_class)


def wrong_at(y_true: np.ndarray, positions: np.ndarray | list[int]) -> np.ndarray:
    """A copy of y_true with the given positions mislabelled as the next class."""
    pred = y_true.copy()
    pred[positions] = (pred[positions] + 1) % len(LABELS)
    return pred


def rows_of_class(label: int, count: int, per_class: int = PER_CLASS) -> list[int]:
    return list(range(label * per_class, label * per_class + count))


def base(y_true: np.ndarray, champion: np.ndarray, challenger: np.ndarray) -> EvalSet:
    return EvalSet("base_validation", y_true, champion, challenger)


def test_clearly_better_challenger_is_promoted() -> None:
    y = balanced_truth()
    champion = wrong_at(y, [i for label in range(4) for i in rows_of_class(label, 10)])
    decision = decide([base(y, champion, y.copy())], GateConfig())
    assert decision.promote
    assert decision.reasons == []
    assert decision.delta > 0.05
    assert decision.discordant == {"challenger_only_right": 40, "champion_only_right": 0}
    assert decision.p_value < 1e-6
    assert all(drop < 0 for drop in decision.recall_drops.values())


def test_gain_below_margin_is_refused_for_that_reason_alone() -> None:
    y = balanced_truth()
    champion = wrong_at(y, [i for label in range(4) for i in rows_of_class(label, 3)])
    decision = decide([base(y, champion, y.copy())], GateConfig(margin=0.05))
    assert not decision.promote
    assert len(decision.reasons) == 1
    assert decision.reasons[0].startswith(f"macro-F1 gain {decision.delta:.4f} is below the required margin 0.0500")


def test_small_gain_on_few_discordant_pairs_is_not_significant() -> None:
    y = balanced_truth()
    # Three fixes against one new error, the new error in the same class as one fix so no recall drops.
    champion = wrong_at(y, [0, 100, 200])
    challenger = wrong_at(y, [1])
    decision = decide([base(y, champion, challenger)], GateConfig())
    assert decision.delta >= 0.002
    assert decision.discordant == {"challenger_only_right": 3, "champion_only_right": 1}
    assert decision.p_value == pytest.approx(0.625)
    assert len(decision.reasons) == 1
    assert "McNemar p-value 0.625 is not below alpha 0.05" in decision.reasons[0]


def test_significant_loss_is_refused_even_when_macro_f1_rises() -> None:
    # Imbalanced set: the challenger rescues a 20-row class the champion never gets right (macro-F1 up)
    # but breaks 40 rows of the 1,000-row class (accuracy down, and significantly so).
    y = np.concatenate([np.zeros(1000, dtype=int), np.repeat([1, 2, 3], 20)])
    champion = y.copy()
    champion[y == 3] = 0
    challenger = y.copy()
    challenger[:40] = 1
    decision = decide([base(y, champion, challenger)], GateConfig(recall_tolerance=0.05, base_tolerance=0.05))
    assert decision.delta > 0.1
    assert decision.discordant == {"challenger_only_right": 20, "champion_only_right": 40}
    assert decision.p_value < 0.05
    assert len(decision.reasons) == 1
    assert "significantly worse" in decision.reasons[0]


def test_recall_drop_of_one_label_is_refused_and_named() -> None:
    y = balanced_truth()
    champion = wrong_at(y, [i for label in range(3) for i in rows_of_class(label, 20)])
    challenger = wrong_at(y, rows_of_class(3, 10))
    decision = decide([base(y, champion, challenger)], GateConfig())
    assert decision.delta > 0.05
    assert decision.p_value < 0.05
    assert decision.recall_drops["Sci/Tech"] == pytest.approx(0.10)
    assert decision.recall_p_values["Sci/Tech"] == pytest.approx(2 * 0.5**10 * 4)  # 10 vs 0, four labels
    assert decision.reasons == [
        "Sci/Tech recall on base_validation fell from 1.0000 to 0.9000 (drop 0.1000 exceeds the tolerance 0.0100; "
        "McNemar p = 0.007812 on its rows)"
    ]


def test_recall_drop_within_churn_is_not_a_regression() -> None:
    # Sci/Tech loses 3 rows and gains 1 (net -2 points of recall): above the tolerance, but indistinguishable
    # from the churn of any retrain, so it alone does not refuse a challenger that is clearly better overall.
    y = balanced_truth()
    champion = wrong_at(y, [i for label in range(3) for i in rows_of_class(label, 20)] + [399])
    challenger = wrong_at(y, rows_of_class(3, 3))
    decision = decide([base(y, champion, challenger)], GateConfig(base_tolerance=0.01))
    assert decision.recall_drops["Sci/Tech"] == pytest.approx(0.02)
    assert decision.recall_p_values["Sci/Tech"] == 1.0
    assert decision.promote, decision.reasons


def test_recall_drop_exactly_at_tolerance_is_allowed() -> None:
    y = balanced_truth()
    champion = wrong_at(y, [i for label in range(3) for i in rows_of_class(label, 20)])
    challenger = wrong_at(y, rows_of_class(3, 1))
    decision = decide([base(y, champion, challenger)], GateConfig())
    assert decision.recall_drops["Sci/Tech"] == pytest.approx(0.01)
    assert decision.promote, decision.reasons


def test_worse_challenger_collects_every_reason() -> None:
    y = balanced_truth()
    challenger = wrong_at(y, rows_of_class(0, 10) + rows_of_class(2, 10))
    decision = decide([base(y, y.copy(), challenger)], GateConfig())
    assert not decision.promote
    assert len(decision.reasons) == 5
    assert "below the required margin" in decision.reasons[0]
    assert "significantly worse" in decision.reasons[1]
    assert decision.reasons[2].startswith("accuracy on base_validation fell from 1.0000 to 0.9500")
    assert decision.reasons[3].startswith("World recall")
    assert decision.reasons[4].startswith("Business recall")


def test_holdout_win_does_not_buy_a_loss_on_base_validation() -> None:
    # The challenger fixes 60 of 100 holdout rows (a clear, significant win) but loses 2 base rows.
    y = balanced_truth()
    challenger = wrong_at(y, [0, 100])
    holdout_y = balanced_truth(per_class=25)
    holdout = EvalSet("feedback_holdout", holdout_y, wrong_at(holdout_y, list(range(60))), holdout_y.copy())
    sets = [base(y, y.copy(), challenger), holdout]
    strict = decide(sets, GateConfig(recall_tolerance=0.05))
    assert strict.delta > 0.05 and strict.p_value < 1e-6
    assert strict.reasons == [
        "accuracy on base_validation fell from 1.0000 to 0.9950 (drop 0.0050 exceeds the tolerance 0.0000)"
    ]
    assert decide(sets, GateConfig(recall_tolerance=0.05, base_tolerance=0.005)).promote
    with pytest.raises(ValueError):
        GateConfig(base_tolerance=-0.1)


def test_identical_models_are_refused_for_lack_of_discordant_pairs() -> None:
    y = balanced_truth()
    decision = decide([base(y, y.copy(), y.copy())], GateConfig(margin=0.0))
    assert decision.p_value == 1.0
    assert decision.reasons == [
        "only 0 discordant examples (challenger alone right on 0, champion alone right on 0); "
        "the significance test needs at least 1"
    ]


def test_significance_pools_examples_from_every_set() -> None:
    y = balanced_truth()
    champion = wrong_at(y, [0, 100, 200, 300, 301])
    holdout_y = balanced_truth(per_class=50)
    holdout_champion = wrong_at(holdout_y, [0, 50, 100, 150, 151])
    sets = [
        base(y, champion, y.copy()),
        EvalSet("feedback_holdout", holdout_y, holdout_champion, holdout_y.copy()),
    ]
    decision = decide(sets, GateConfig())
    assert decision.promote
    assert decision.discordant == {"challenger_only_right": 10, "champion_only_right": 0}
    # Five fixes in each set are not significant alone (p = 0.0625 each, 0.1875 adjusted); pooled they are.
    assert decision.p_value == pytest.approx(0.001953125 * 3)
    assert decision.per_set["base_validation"]["p_value"] == pytest.approx(0.0625 * 3)
    assert decision.per_set["feedback_holdout"]["n"] == 200
    assert decision.per_set["feedback_holdout"]["champion_accuracy"] == pytest.approx(0.975)
    assert decision.per_set["base_validation"]["challenger_macro_f1"] == 1.0


@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [(10, 0, 0.001953125), (0, 10, 0.001953125), (5, 5, 1.0), (0, 0, 1.0), (3, 1, 0.625)],
)
def test_mcnemar_exact_known_values(b: int, c: int, expected: float) -> None:
    concordant = 7
    champion = np.array([False] * b + [True] * c + [True] * concordant)
    challenger = np.array([True] * b + [False] * c + [True] * concordant)
    p, got_b, got_c = mcnemar_exact(champion, challenger)
    assert (got_b, got_c) == (b, c)
    assert p == pytest.approx(expected)


def test_mcnemar_exact_rejects_unequal_lengths() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        mcnemar_exact(np.ones(3, dtype=bool), np.ones(4, dtype=bool))


def perfect_base_and_useless_holdout(n_holdout: int) -> list[EvalSet]:
    """Champion scores macro-F1 1.0 on base and 0.0 on the holdout, so its combined score is 1 - w_eff."""
    y = balanced_truth()
    holdout_y = np.arange(n_holdout) % len(LABELS)
    return [
        base(y, y.copy(), y.copy()),
        EvalSet("feedback_holdout", holdout_y, wrong_at(holdout_y, np.arange(n_holdout)), holdout_y.copy()),
    ]


def test_combined_score_is_base_macro_f1_when_base_is_the_only_set() -> None:
    y = balanced_truth()
    champion = wrong_at(y, rows_of_class(1, 30))
    assert combined_score([base(y, champion, y.copy())], "champion", 0.5) == pytest.approx(
        decide([base(y, champion, y.copy())], GateConfig()).per_set["base_validation"]["champion_macro_f1"]
    )
    assert combined_score([base(y, champion, y.copy())], "challenger", 0.5) == 1.0


@pytest.mark.parametrize(
    ("n_holdout", "holdout_weight", "expected"),
    [(200, 0.5, 0.5), (400, 0.5, 0.5), (100, 0.5, 0.75), (20, 0.5, 0.95), (200, 0.2, 0.8), (200, 0.0, 1.0)],
)
def test_combined_score_weights_holdout_and_scales_down_small_ones(
    n_holdout: int, holdout_weight: float, expected: float
) -> None:
    sets = perfect_base_and_useless_holdout(n_holdout)
    assert combined_score(sets, "champion", holdout_weight) == pytest.approx(expected)
    assert combined_score(sets, "challenger", holdout_weight) == pytest.approx(1.0)


def test_empty_holdout_counts_for_nothing() -> None:
    y = balanced_truth()
    empty = np.array([], dtype=int)
    sets = [base(y, y.copy(), y.copy()), EvalSet("feedback_holdout", empty, empty, empty)]
    assert combined_score(sets, "champion", 0.5) == 1.0
    decision = decide(sets, GateConfig())
    assert decision.per_set["feedback_holdout"] == {
        "n": 0,
        "weight": 0.0,
        "champion_macro_f1": None,
        "champion_accuracy": None,
        "challenger_macro_f1": None,
        "challenger_accuracy": None,
    }


def test_decision_as_dict_is_json_serialisable() -> None:
    # Roles swapped: the challenger is the one that gets the holdout wrong, so there are reasons to serialise.
    sets = [EvalSet(s.name, s.y_true, s.challenger_pred, s.champion_pred) for s in perfect_base_and_useless_holdout(40)]
    decision = decide(sets, GateConfig())
    assert not decision.promote
    restored = json.loads(json.dumps(decision.as_dict(), allow_nan=False))
    assert restored["promote"] is False
    assert restored["reasons"] == decision.reasons
    assert restored["discordant"] == decision.discordant
    assert set(restored["recall_drops"]) == set(LABELS)
    assert set(restored["per_set"]) == {"base_validation", "feedback_holdout"}
    assert restored["per_set"]["feedback_holdout"]["weight"] == pytest.approx(0.1)


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
        decide(sets, GateConfig())


@pytest.mark.parametrize(
    "overrides",
    [{"margin": -0.1}, {"alpha": 0.0}, {"recall_tolerance": 1.5}, {"holdout_weight": 1.2}, {"min_discordant": -1}],
)
def test_invalid_config_raises_value_error(overrides: dict) -> None:
    with pytest.raises(ValueError, match=next(iter(overrides))):
        GateConfig(**overrides)


def test_combined_score_rejects_unknown_model() -> None:
    y = balanced_truth()
    with pytest.raises(ValueError, match="which must be one of"):
        combined_score([base(y, y, y)], "baseline", 0.5)


def test_a_gain_concentrated_in_the_holdout_is_not_drowned_by_base_noise() -> None:
    # Base validation: the challenger fixes 20 rows and breaks 20 others in the same classes (pure churn).
    # Feedback holdout: it fixes 9 of the champion's 9 mistakes. Pooled, 29 vs 20 is not significant.
    y = balanced_truth()
    fixes = [i for label in range(4) for i in rows_of_class(label, 5)]
    breaks = [i + 50 for i in fixes]
    holdout_y = balanced_truth(per_class=10)
    sets = [
        base(y, wrong_at(y, fixes), wrong_at(y, breaks)),
        EvalSet("feedback_holdout", holdout_y, wrong_at(holdout_y, list(range(0, 36, 4))), holdout_y.copy()),
    ]
    decision = decide(sets, GateConfig())
    assert decision.discordant == {"challenger_only_right": 29, "champion_only_right": 20}
    assert decision.per_set["feedback_holdout"]["challenger_only_right"] == 9
    assert decision.p_value == pytest.approx(2 * 0.5**9 * 3)  # 9 vs 0, exact two-sided, times three tests
    assert decision.promote, decision.reasons


def test_holdout_gain_with_a_base_loss_is_refused() -> None:
    y = balanced_truth()
    holdout_y = balanced_truth(per_class=10)
    sets = [
        base(y, y.copy(), wrong_at(y, [0, 100, 200, 300])),
        EvalSet("feedback_holdout", holdout_y, wrong_at(holdout_y, list(range(0, 36, 4))), holdout_y.copy()),
    ]
    decision = decide(sets, GateConfig())
    assert not decision.promote
    assert decision.reasons == [
        "accuracy on base_validation fell from 1.0000 to 0.9900 (drop 0.0100 exceeds the tolerance 0.0000)"
    ]
