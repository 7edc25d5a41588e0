"""The gate once the newsroom's own held-out articles are enough to decide (GateConfig.own_rows): they decide, pooled;
the base data only guards the topics that kept their meaning against forgetting."""

from __future__ import annotations

import numpy as np
import pytest

from core.evaluation.decision import GateMode, GateResult, Rule, describe
from core.settings.policies import GateConfig
from core.taxonomy import starting
from core.topic_maps import comparison, meaning_kept
from retrain.gate.rules import EvalSet, decide

TOPICS = ("Politics", "Sports", "Business", "Sci/Tech")  # "Politics" was AG News's "World", renamed
RENAMED = 0
PER_TOPIC = 220  # base validation rows a topic, as AG News's 1,636 have about


def truth(per_topic: int) -> np.ndarray:
    return np.repeat(np.arange(len(TOPICS)), per_topic)


def wrong_at(y: np.ndarray, positions: list[int] | range) -> np.ndarray:
    pred = y.copy()
    pred[list(positions)] = (pred[list(positions)] + 1) % len(TOPICS)
    return pred


def in_topic(topic: int, count: int, per_topic: int, start: int = 0) -> list[int]:
    return list(range(topic * per_topic + start, topic * per_topic + start + count))


def own_sets(champion_wrong: list[int], challenger_wrong: list[int], per_topic: int = 50) -> list[EvalSet]:
    """A golden set, traffic and held-out answers: 200 + 100 + 45 own articles, as a newsroom has with a golden set
    of 200 after a few hundred answers; wrong rows given over their concatenation."""
    y = truth(per_topic)
    sizes = {"golden": 200, "traffic": 100, "feedback_holdout": 45}
    ys = np.concatenate([truth(per_topic)] * 2)[: sum(sizes.values())]
    champion, challenger = wrong_at(ys, champion_wrong), wrong_at(ys, challenger_wrong)
    sets, start = [], 0
    for name, n in sizes.items():
        sets.append(EvalSet(name, ys[start:start + n], champion[start:start + n], challenger[start:start + n]))
        start += n
    assert y.size == 200
    return sets


def base_set(challenger_wrong: list[int] | range = ()) -> EvalSet:
    y = truth(PER_TOPIC)
    return EvalSet("base_validation", y, y.copy(), wrong_at(y, challenger_wrong))


def decided(sets: list[EvalSet], config: GateConfig = GateConfig(), kept: list[int] | None = None) -> GateResult:  # noqa: B008
    return decide(sets, config, TOPICS, kept=[1, 2, 3] if kept is None else kept)


def test_a_better_challenger_on_the_newsrooms_own_articles_is_promoted_whatever_its_renamed_topic_does_on_base() -> None:
    # Four points better on 345 own articles; on base validation it reads AG News's "World" rows 8 points worse, the
    # topic this newsroom renamed to Politics: those base labels no longer say what Politics is.
    sets = own_sets(champion_wrong=list(range(0, 345, 20)) + list(range(3, 345, 25)), challenger_wrong=list(range(0, 345, 100)))
    result = decided([base_set(in_topic(RENAMED, 18, PER_TOPIC)), *sets])
    assert result.mode == GateMode.OWN and result.promote, result.reasons
    gain = result.rule(Rule.OWN_GAIN)
    assert gain is not None and gain.n == 345 and gain.challenger_only > gain.champion_only
    assert result.rule(Rule.FORGETTING, "Politics") is None  # renamed: not judged on labels that predate it
    assert result.power is not None and result.power.n == 345 and result.power.measured
    assert result.challenger_score > result.champion_score


def test_a_challenger_worse_on_the_newsrooms_own_articles_is_refused() -> None:
    sets = own_sets(champion_wrong=list(range(0, 345, 40)), challenger_wrong=list(range(0, 345, 20)))
    result = decided([base_set(), *sets])
    assert not result.promote and (Rule.OWN_GAIN, "own") in [(r.rule, r.subject) for r in result.failed]
    assert "On your own articles the new model is not better" in " ".join(result.reasons)


def test_a_challenger_that_forgets_a_base_topic_badly_is_refused_even_when_better_on_the_newsrooms_articles() -> None:
    sets = own_sets(champion_wrong=list(range(0, 345, 15)), challenger_wrong=[])
    forgot = in_topic(1, 22, PER_TOPIC)  # Sports, unchanged: 10 points of its 220 base rows lost
    result = decided([base_set(forgot), *sets])
    assert not result.promote
    assert [(r.rule, r.subject) for r in result.failed] == [(Rule.FORGETTING, "Sports")]
    assert "It forgot: How many base-data Sports articles it finds fell from 100.00% to 90.00%" in result.reasons[0]
    # A loss under the margin is no forgetting: a few points of churn on an unchanged topic pass.
    assert decided([base_set(in_topic(1, 6, PER_TOPIC)), *sets]).promote


def test_a_topic_read_much_worse_in_the_newsrooms_own_articles_is_refused() -> None:
    # Better overall (12 rows gained), but ten Business articles lost.
    y = np.concatenate([truth(50)] * 2)[:345]
    business = [i for i in range(345) if y[i] == 2][:10]
    others = [i for i in range(345) if y[i] != 2][:22]
    sets = own_sets(champion_wrong=others, challenger_wrong=business)
    result = decided([base_set(), *sets])
    assert (Rule.TOPIC_NOT_WORSE, "Business") in [(r.rule, r.subject) for r in result.failed]


def test_too_few_own_articles_leave_the_decision_to_the_base_rules() -> None:
    y = truth(10)
    traffic = EvalSet("traffic", y, y.copy(), y.copy())
    result = decided([base_set(), traffic], GateConfig(own_rows=41))
    assert result.mode == GateMode.BASE and result.rule(Rule.OWN_GAIN) is None
    assert result.rule(Rule.LABEL_RECALL, "Sports") is not None  # the base rules judge the topics that kept meaning
    assert result.rule(Rule.LABEL_RECALL, "Politics") is None  # renamed: its base labels predate it
    assert result.power is not None and result.power.n == 40 and not result.power.measured


def test_the_base_rules_leave_out_a_renamed_or_split_topics_base_rows_but_hold_the_rest() -> None:
    # Too few own articles: the base rules decide. The challenger reads the renamed topic's old base rows 9 points
    # worse (they predate what Politics means now) and is otherwise the same: neither accuracy nor recall holds it.
    y = truth(10)
    traffic = EvalSet("traffic", y, wrong_at(y, [0, 11]), y.copy())
    config = GateConfig(own_rows=41)
    renamed = decided([base_set(in_topic(RENAMED, 20, PER_TOPIC)), traffic], config)
    assert renamed.rule(Rule.BASE_ACCURACY) is not None and renamed.rule(Rule.BASE_ACCURACY).passed
    assert renamed.rule(Rule.LABEL_RECALL, "Politics") is None
    # The same loss on a topic that kept its meaning is held against it, in accuracy and in the topic's recall.
    sports = decided([base_set(in_topic(1, 20, PER_TOPIC)), traffic], config)
    assert {(r.rule, r.subject) for r in sports.failed} >= {(Rule.BASE_ACCURACY, "base_validation"),
                                                           (Rule.LABEL_RECALL, "Sports")}


def test_thin_own_evidence_cannot_rule_out_a_loss() -> None:
    # 100 own articles, one more right: a 2-point loss cannot be ruled out on so few.
    y = truth(25)
    golden = EvalSet("golden", y, wrong_at(y, [0, 30, 60]), wrong_at(y, [1, 31]))
    result = decided([base_set(), golden])
    assert result.mode == GateMode.OWN and not result.promote
    assert [r.rule for r in result.failed] == [Rule.OWN_NOT_WORSE]
    assert "a loss of 2.00 points or more cannot be ruled out" in describe(result.failed[0])


@pytest.mark.parametrize(("change", "kept"), [("rename", False), ("split", False), ("merge", True), ("add", True)])
def test_which_topics_kept_their_meaning(change: str, kept: bool) -> None:
    taxonomy = starting(["World", "Sports", "Business", "Sci/Tech"])
    taxonomy = {"rename": lambda t: t.rename("World", "Politics"), "split": lambda t: t.split("World", "Europe"),
                "merge": lambda t: t.merge("Business", "World"), "add": lambda t: t.add("Health")}[change](taxonomy)
    assert meaning_kept(taxonomy, "World") is kept
    assert meaning_kept(taxonomy, "Sports")  # untouched
    classes = comparison(taxonomy.keys, taxonomy)
    assert [k for k in classes.keys if meaning_kept(taxonomy, k)] == [k for k in classes.keys if k != "World" or kept]
