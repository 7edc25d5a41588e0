"""Training and the gate across a taxonomy change: rows and heads follow the taxonomy a retrain started with, a
split's old rows train as sets, and the gate compares on shared topics and judges a new topic on its own answers."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
import torch

import retrain.challenger as challenger_module
from core.data import Corpus, Example, split_by_hash, under_taxonomy
from core.evaluation.decision import Rule
from core.labels import LABELS
from core.registry.stages import Stage
from core.registry.versions import ModelRegistry
from core.serving.classifier import OnnxClassifier
from core.settings.policies import GateConfig, StoreLimits
from core.taxonomy import Taxonomy, starting
from core.topic_maps import NewTopicScore, comparison, in_taxonomy, new_topic_scores
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from feedback.training.snapshot import HOLDOUT_SALT
from retrain.classifier.model import fit_head
from retrain.gate.rules import EvalSet, decide
from retrain.inputs import RetrainSetup
from retrain.run import retrain
from retrain.training.loop import TrainResult, row_losses
from testkit.models import tiny_model, tiny_settings

AG = starting(LABELS)


# --- rows in the taxonomy's index space ---------------------------------------------------------------------------
def test_base_rows_follow_a_merge_and_a_split_and_the_four_topics_are_untouched() -> None:
    corpus = Corpus([Example("w", 0), Example("s", 1), Example("b", 2), Example("t", 3)], [Example("v", 3)])
    assert under_taxonomy(corpus, AG) is corpus
    changed = AG.merge("World", "Business").split("Sci/Tech", "Science")
    read = under_taxonomy(corpus, changed)
    assert read.labels == ("Sports", "Business", "Sci/Tech", "Science")
    by_text = {e.text: e for e in read.train}
    assert (by_text["w"].label, by_text["w"].allowed) == (1, ())  # World counts as Business now
    assert (by_text["b"].label, by_text["b"].allowed) == (1, ())
    assert (by_text["t"].label, by_text["t"].allowed) == (2, (2, 3))  # "Sci/Tech or Science", labelled the parent
    assert read.validation[0].allowed == (2, 3)


# --- the head ------------------------------------------------------------------------------------------------------
def _last(model: Any) -> tuple[torch.Tensor, torch.Tensor]:
    layer = model.head[-1]
    return layer.weight.detach().clone(), layer.bias.detach().clone()


def test_after_add_the_head_has_five_outputs_the_new_one_neutral_and_below_the_rest() -> None:
    model = tiny_model()
    weight, bias = _last(model)
    fit_head(model, AG.add("Health"))
    new_weight, new_bias = _last(model)
    assert model.labels == (*LABELS, "Health") and model.num_labels == 5 and new_weight.shape[0] == 5
    assert torch.equal(new_weight[:4], weight) and torch.equal(new_bias[:4], bias)
    assert torch.allclose(new_weight[4], weight.mean(dim=0)) and new_bias[4] < bias.min()
    ids = torch.randint(1000, 2000, (3, 12))
    assert model(ids, torch.ones_like(ids)).shape == (3, 5)


def test_after_merge_the_head_has_three_outputs_and_the_target_keeps_its_row() -> None:
    model = tiny_model()
    weight, bias = _last(model)
    fit_head(model, AG.merge("World", "Business"))
    new_weight, new_bias = _last(model)
    assert model.labels == ("Sports", "Business", "Sci/Tech") and new_weight.shape[0] == 3
    assert torch.equal(new_weight, weight[1:]) and torch.equal(new_bias, bias[1:])


def test_after_split_the_head_has_five_outputs_and_the_child_starts_as_its_parent() -> None:
    model = tiny_model()
    weight, bias = _last(model)
    fit_head(model, AG.split("Sci/Tech", "Science"))
    new_weight, new_bias = _last(model)
    assert model.labels == (*LABELS, "Science")
    assert torch.equal(new_weight[4], weight[3]) and new_bias[4] == bias[3]


# --- the loss ------------------------------------------------------------------------------------------------------
def test_a_set_row_loses_minus_log_of_the_sets_probability_an_exact_row_its_cross_entropy() -> None:
    logits = torch.log(torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.1, 0.2, 0.3, 0.4]], requires_grad=True))
    targets = torch.tensor([[0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0]])
    sets = torch.tensor([[False] * 4, [False, True, True, False]])
    losses = row_losses(logits, targets, sets)
    assert losses[0].item() == pytest.approx(-math.log(0.4))  # exact: its own target
    assert losses[1].item() == pytest.approx(-math.log(0.2 + 0.3))  # the set {1, 2}: -log(p1 + p2)
    losses.sum().backward()  # finite: the exact row's unused set branch leaks no -inf into the gradient
    assert row_losses(logits, targets).tolist() == pytest.approx([-math.log(0.4)] * 2)


def test_the_champions_probabilities_carry_into_the_taxonomy() -> None:
    probs = np.array([[0.1, 0.2, 0.3, 0.4]])
    merged = in_taxonomy(probs, LABELS, 1, AG.merge("World", "Business"))
    assert merged.tolist()[0] == pytest.approx([0.2, 0.4, 0.4])  # World + Business summed
    split = in_taxonomy(probs, LABELS, 1, AG.split("Sci/Tech", "Science").add("Health"))
    assert split.tolist()[0] == pytest.approx([0.1, 0.2, 0.3, 0.2, 0.2, 0.0])  # the parent's shared by the set


# --- the gate ------------------------------------------------------------------------------------------------------
def test_a_champion_lacking_a_topic_is_compared_on_the_shared_ones() -> None:
    taxonomy = AG.merge("World", "Business").add("Health")
    classes = comparison(LABELS, taxonomy)
    assert classes.keys == ("Sports", "Business", "Sci/Tech") and classes.new_topics == ("Health",)
    # The champion's World counts as Business; the challenger's Health on a shared row is "outside" (wrong there).
    assert classes.champion_classes([0, 1, 2, 3]).tolist() == [1, 0, 1, 2]
    assert classes.challenger_classes([0, 1, 2, 3]).tolist() == [0, 1, 2, 3]
    assert classes.truths([0, 1, 2, 3]).tolist() == [0, 1, 2, -1]


def test_answers_naming_a_topic_the_champion_lacks_are_the_challengers_gain_and_base_rows_cannot_refute_it() -> None:
    from retrain.gate.judge import compared

    classes = comparison(LABELS, AG.add("Health"))
    labels = np.array([4, 4, 4, 2, 2])  # three Health answers, two Business ones
    champion = np.array([2, 2, 2, 2, 2])  # the champion reads all five as Business
    challenger = np.array([4, 4, 2, 4, 2])  # the challenger finds two Health answers, takes one Business for Health
    users = compared("feedback_holdout", classes, labels, [()] * 5, champion, challenger)
    assert users.y_true.tolist() == [4, 4, 4, 2, 2]  # class 4: a topic outside the champion's
    right = (users.challenger_pred == users.y_true).tolist(), (users.champion_pred == users.y_true).tolist()
    assert right == ([True, True, False, False, True], [False, False, False, True, True])
    # Base validation's labels predate Health: the row the challenger reads as Health is left out, not counted wrong.
    base = compared("base_validation", classes, np.array([2, 2, 1]), [()] * 3, np.array([2, 2, 1]),
                    np.array([4, 2, 1]))
    assert base.y_true.tolist() == [2, 1] and base.challenger_pred.tolist() == [2, 1]
    # A split's child found on its own answer is right; on a "B or C" row it counts as its parent (right too).
    _, split = _split_comparison()
    child = compared("traffic", split, np.array([4, 4, 3]), [(), (), (3, 4)], np.array([3, 3, 3]),
                     np.array([4, 3, 4]))
    assert (child.challenger_pred == child.y_true).tolist() == [True, False, True]
    assert (child.champion_pred == child.y_true).tolist() == [False, False, True]


def test_the_gate_promotes_a_taught_topic_on_its_answers_without_a_neighbour_regression_on_base_rows() -> None:
    from retrain.gate.judge import compared

    classes = comparison(LABELS, AG.add("Health"))
    rng = np.random.default_rng(3)
    y_base = np.arange(1600) % 4
    # The challenger reads 60 base Business rows as Health (4x the recall margin's worth of Business rows).
    challenger_base = y_base.copy()
    challenger_base[np.flatnonzero(y_base == 2)[:60]] = 4
    base = compared("base_validation", classes, y_base, [()] * 1600, y_base.copy(), challenger_base)
    y_users = np.array([4] * 40 + [0, 1, 2, 3] * 40)
    champion_users = np.where(y_users == 4, 2, y_users)
    challenger_users = y_users.copy()
    challenger_users[rng.choice(40, 5, replace=False)] = 2  # 35 of 40 Health answers found
    holdout = compared("feedback_holdout", classes, y_users, [()] * 200, champion_users, challenger_users)
    scores = new_topic_scores(AG.add("Health"), ("Health",), y_users.tolist(), [()] * 200, challenger_users.tolist())
    result = decide([base, holdout], GateConfig(), classes.keys, scores)
    assert result.promote, result.reasons
    # Counted wrong on base rows (as before this rule), the same challenger loses Business recall there.
    counted = EvalSet("base_validation", y_base, y_base.copy(), np.where(challenger_base == 4, 4, challenger_base))
    assert not decide([counted, holdout], GateConfig(), classes.keys, scores).promote


def _split_comparison() -> tuple[Taxonomy, Any]:
    taxonomy = AG.split("Sci/Tech", "Science")
    return taxonomy, comparison(LABELS, taxonomy)


def test_after_a_split_the_challengers_child_counts_as_its_parent_on_shared_rows() -> None:
    _, classes = _split_comparison()
    assert classes.new_topics == ("Science",) and classes.challenger_classes([4]).tolist() == [3]
    # An old "Sci/Tech or Science" row is compared as Sci/Tech whichever topic of the set its label names.
    assert classes.truths([4, 3, 4], [(3, 4), (3, 4), ()]).tolist() == [3, 3, -1]


def _base(n: int = 400) -> EvalSet:
    y = np.arange(n) % 4
    return EvalSet("base_validation", y, y.copy(), y.copy())


def test_the_gate_refuses_a_new_topic_with_too_few_held_out_answers_and_says_so() -> None:
    few = NewTopicScore("Health", "Health", 8, found=8, predicted=8, right=8)
    result = decide([_base()], GateConfig(), LABELS, [few])
    rule = result.rule(Rule.NEW_TOPIC, "Health")
    assert rule is not None and not rule.passed and not result.promote
    assert "The new topic Health has 8 held-out answers; it needs 10." in result.reasons


def test_a_new_topic_with_enough_answers_is_judged_on_recall_and_precision_in_plain_words() -> None:
    good = NewTopicScore("Health", "Health", 41, found=34, predicted=40, right=35)
    weak = NewTopicScore("Climate", "Climate", 41, found=23, predicted=26, right=23)
    result = decide([_base()], GateConfig(), LABELS, [good, weak])
    passed, failed = result.rule(Rule.NEW_TOPIC, "Health"), result.rule(Rule.NEW_TOPIC, "Climate")
    assert passed is not None and passed.passed and failed is not None and not failed.passed
    from core.evaluation.decision import describe

    assert describe(passed) == ("The new topic Health: 41 held-out answers, recall 0.83 (at least 0.70), "
                                "precision 0.88 (at least 0.75) at 95% confidence.")
    # 23 of 41 found: 0.56, shown to be at least 0.42 only.
    assert result.reasons[-1] == ("The new topic Climate: 41 held-out answers, recall 0.56 (at least 0.42), "
                                  "precision 0.88 (at least 0.73) at 95% confidence; recall must be shown to be at "
                                  "least 0.50.")


def test_after_a_merge_macro_f1_is_over_the_compared_topics_and_outside_predictions_are_wrong() -> None:
    y = np.arange(300) % 3
    challenger = y.copy()
    challenger[:30] = 3  # a topic the champion lacks, on rows of shared topics
    result = decide([EvalSet("base_validation", y, y.copy(), challenger)], GateConfig(),
                    ("Sports", "Business", "Sci/Tech"))
    assert result.champion_score == 1.0 and result.challenger_score < 1.0
    assert result.rule(Rule.BASE_ACCURACY) is not None and result.rule(Rule.BASE_ACCURACY).challenger == 0.9
    assert not result.promote


def test_new_topic_scores_count_exact_answers_for_recall_and_allowed_sets_for_precision() -> None:
    taxonomy, _ = _split_comparison()
    labels = [4, 4, 4, 3, 3, 0]  # three exact Science answers, one exact Sci/Tech, one old "Sci/Tech or Science"
    allowed: list[tuple[int, ...]] = [(), (), (), (), (3, 4), ()]
    predicted = [4, 4, 3, 4, 4, 0]
    [score] = new_topic_scores(taxonomy, ["Science"], labels, allowed, predicted)
    assert (score.n, score.recall, score.precision) == (3, pytest.approx(2 / 3), pytest.approx(3 / 4))


# --- a whole retrain across a change (the optimizer's steps left out: the rows and head are what is checked) -------
@pytest.fixture
def no_steps(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Replace the training loop: record what it was given and leave the warm-started, re-headed model as it is."""
    calls: list[dict[str, Any]] = []

    def train(model: Any, tokenizer: Any, texts: Any, labels: Any, config: Any, **kw: Any) -> TrainResult:
        calls.append({"model_labels": model.labels, "texts": list(texts), "labels": list(labels),
                      "head": model.head[-1].weight.detach().clone(), "config": config, **kw})
        return TrainResult()

    monkeypatch.setattr(challenger_module, "train", train)
    return calls


def _with_feedback(home: Path, change: Any = None) -> Any:
    settings = tiny_settings(home, retrain_base_rows=0)
    store = FeedbackStore(settings.paths.feedback_db, StoreLimits(writes_per_minute=10_000))
    from core.data import load_seed

    for i, ex in enumerate(load_seed().train[:30]):  # trusted feedback, or the run stops before training
        store.answers.record(AnswerInput(text=ex.text, user_label=LABELS[ex.label], annotator=f"tester-{i % 3}", kind="correct"))
    if change is not None:
        store.topics.commit(change(store.topics.current(LABELS)), planned_on=1)
    store.close()
    return settings


def _challenger_labels(home: Path, version: str) -> tuple[str, ...]:
    path = ModelRegistry(home / "models").get(version).path
    return OnnxClassifier(path).labels


def test_a_retrain_after_add_grows_the_head_logs_the_topics_and_refuses_with_too_few_answers(
        tiny_home_copy: Path, no_steps: list[dict[str, Any]]) -> None:
    settings = _with_feedback(tiny_home_copy, lambda t: t.add("Health", "health and medicine"))
    health = [f"Clinic {i} reports a rise in flu cases as the vaccine campaign begins" for i in range(24)]
    store = FeedbackStore(settings.paths.feedback_db, StoreLimits(writes_per_minute=10_000))
    for i, text in enumerate(health):
        store.answers.record(AnswerInput(text=text, user_label="Health", annotator=f"tester-{i % 3}", kind="correct"))
    store.close()
    held_out = len(split_by_hash([Example(t, 0) for t in health], 0.25, salt=HOLDOUT_SALT)[1])
    assert 0 < held_out < GateConfig().min_new_topic_answers

    result = retrain(RetrainSetup.from_settings(settings), track=True)
    [call] = no_steps
    assert call["model_labels"] == (*LABELS, "Health") and np.shape(call["targets"])[1] == 5
    assert call["labels"].count(4) == (24 - held_out) * 3  # Health answers train (each feedback row 3 times)
    assert _challenger_labels(tiny_home_copy, result.challenger) == (*LABELS, "Health")
    assert result.decision == "refused"
    assert (f"The new topic Health has {held_out} held-out answers; it needs {GateConfig().min_new_topic_answers}."
            in result.reasons)
    assert ModelRegistry(tiny_home_copy / "models").champion().version == result.champion_before  # keeps serving
    import mlflow

    client = mlflow.tracking.MlflowClient(settings.tracking_uri)
    params = client.get_run(result.mlflow_run_id).data.params
    assert params["taxonomy_version"] == "2" and params["imprinted_topics"] == "Health"
    # Teaching a topic: the policy's teaching epochs and rates, not the retrain's gentle ones.
    policy = RetrainSetup.from_settings(settings).policy
    assert params["teaching"] == "True" and call["config"].epochs == policy.teach_epochs
    assert (call["config"].lr_head, call["config"].lr_encoder) == (policy.teach_lr_head, policy.teach_lr_encoder)
    # Imprinted from its answers: not the neutral start, the mean of the other rows (retrain.classifier.model.fit_head).
    assert not torch.allclose(call["head"][4], call["head"][:4].mean(dim=0), atol=1e-3)
    local = client.download_artifacts(result.mlflow_run_id, "topics.json", str(tiny_home_copy))
    topics = json.loads(Path(local).read_text())
    assert topics["version"] == 2 and topics["topics"][-1] == {"key": "Health", "name": "Health",
                                                              "description": "health and medicine"}
    from core.data import load_seed
    from retrain.export.starter import package_starter

    challenger = ModelRegistry(tiny_home_copy / "models").get(result.challenger)
    package_starter(challenger, tiny_home_copy / "card", load_seed().validation, description="seed", data={}, command="")
    card = (tiny_home_copy / "card" / "MODEL_CARD.md").read_text()
    assert "its own topics (World, Sports, Business, Sci/Tech, Health)" in card
    assert "| Health | Health | health and medicine |" in card and "Taxonomy version 2" in card


def _traffic_pool(settings: Any, tmp_path: Path, health_answers: int = 24) -> list[str]:
    """Health answers and a pool whose traffic set the queue's first look draws; returns the traffic set's texts."""
    store = FeedbackStore(settings.paths.feedback_db, StoreLimits(writes_per_minute=10_000))
    for i in range(health_answers):
        store.answers.record(AnswerInput(text=f"Clinic {i} reports a rise in flu cases as the vaccine campaign begins",
                     user_label="Health", annotator=f"tester-{i % 3}", kind="correct"))
    pool = [f"Hospital {i} trial of a new heart drug" if i % 2 else f"Striker {i} scores twice in the derby"
            for i in range(80)]
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pool.csv").write_text("text\n" + "\n".join(pool) + "\n")
    store.pool.import_file(tmp_path / "pool.csv")
    store.pool.next_item("anna", settings.queue)
    with store.database.read() as db:
        traffic = list(db.execute(sa.text("SELECT text FROM pool WHERE traffic = 1")).scalars())
    store.close()
    return traffic


def test_a_retrain_teaching_an_added_topic_trains_on_unlabelled_traffic_read_by_the_answers(
        tiny_home_copy: Path, tmp_path: Path, no_steps: list[dict[str, Any]]) -> None:
    settings = _with_feedback(tiny_home_copy, lambda t: t.add("Health", "health and medicine"))
    traffic = _traffic_pool(settings, tmp_path)
    assert len(traffic) >= 5
    retrain(RetrainSetup.from_settings(settings), track=False)
    [call] = no_steps
    texts, targets = call["texts"], np.asarray(call["targets"])
    assert sorted(texts[-len(traffic):]) == sorted(traffic) and not set(traffic) & set(texts[:-len(traffic)])
    read = targets[-len(traffic):]
    # Each read toward a distribution a linear model gave it (not the set of every topic: no row trains as a set).
    assert call["sets"] is None and np.allclose(read.sum(axis=1), 1.0, atol=1e-5)
    assert not np.allclose(read, 1 / 5)


def test_without_read_traffic_or_an_added_topic_no_unlabelled_text_is_trained_on(
        tiny_home_copy: Path, tmp_path: Path, no_steps: list[dict[str, Any]]) -> None:
    plain = shutil.copytree(tiny_home_copy, tmp_path / "plain")
    settings = _with_feedback(tiny_home_copy, lambda t: t.add("Health", "health and medicine"))
    traffic = _traffic_pool(settings, tmp_path)
    retrain(RetrainSetup.from_settings(tiny_settings(tiny_home_copy, retrain_base_rows=0, retrain_read_traffic=False)),
            track=False)
    unchanged = _with_feedback(plain)  # the four topics: no topic only answers teach
    assert _traffic_pool(unchanged, tmp_path / "plain-pool", health_answers=0) == traffic  # the draw is by text
    retrain(RetrainSetup.from_settings(unchanged), track=False)
    assert len(no_steps) == 2 and all(not set(traffic) & set(call["texts"]) for call in no_steps)


def test_a_retrain_after_split_trains_the_old_rows_as_sets(tiny_home_copy: Path,
                                                            no_steps: list[dict[str, Any]]) -> None:
    settings = _with_feedback(tiny_home_copy, lambda t: t.split("Sci/Tech", "Science"))
    result = retrain(RetrainSetup.from_settings(settings), track=False)
    [call] = no_steps
    assert call["model_labels"] == (*LABELS, "Science")
    sets, labels = call["sets"], call["labels"]
    sci = [i for i, label in enumerate(labels) if label == 3]
    assert sci and all(sets[i].tolist() == [False, False, False, True, True] for i in sci)
    assert not sets[[i for i, label in enumerate(labels) if label != 3]].any()  # every other row is exact
    assert _challenger_labels(tiny_home_copy, result.challenger) == (*LABELS, "Science")
    # The split parent's base labels predate the child: the base rules hold the topics that kept their meaning only.
    assert result.gate is not None and result.gate.rule(Rule.LABEL_RECALL, "Sci/Tech") is None
    assert result.gate.rule(Rule.LABEL_RECALL, "World") is not None


def test_after_a_split_with_answers_of_both_topics_the_old_rows_train_toward_one_of_them(
        tiny_home_copy: Path, no_steps: list[dict[str, Any]]) -> None:
    settings = _with_feedback(tiny_home_copy, lambda t: t.split("Sci/Tech", "Science"))
    store = FeedbackStore(settings.paths.feedback_db, StoreLimits(writes_per_minute=10_000))
    science = [f"Astronomers {i} find a planet orbiting a distant star with the new telescope" for i in range(16)]
    tech = [f"Chipmaker {i} ships a faster laptop processor and new software" for i in range(16)]
    for i, (a, b) in enumerate(zip(science, tech, strict=True)):
        store.answers.record(AnswerInput(text=a, user_label="Science", annotator=f"tester-{i % 3}", kind="correct"))
        store.answers.record(AnswerInput(text=b, user_label="Sci/Tech", annotator=f"tester-{i % 3}", kind="correct"))
    store.close()
    retrain(RetrainSetup.from_settings(settings), track=False)
    [call] = no_steps
    labels, targets = call["labels"], np.asarray(call["targets"])
    old = [i for i, label in enumerate(labels) if label == 3 and call["texts"][i] not in tech]
    assert old and call["sets"] is None  # every old Sci/Tech row now has a target, none trains toward the set
    assert np.allclose(targets[old][:, [3, 4]].sum(axis=1), 1.0, atol=1e-5)


def test_a_retrain_after_merge_has_three_outputs_and_is_judged_on_them(tiny_home_copy: Path,
                                                                        no_steps: list[dict[str, Any]]) -> None:
    settings = _with_feedback(tiny_home_copy, lambda t: t.merge("World", "Business"))
    result = retrain(RetrainSetup.from_settings(settings), track=False)
    [call] = no_steps
    assert call["model_labels"] == ("Sports", "Business", "Sci/Tech") and set(call["labels"]) == {0, 1, 2}
    assert _challenger_labels(tiny_home_copy, result.challenger) == ("Sports", "Business", "Sci/Tech")
    assert result.gate is not None
    assert {r.subject for r in result.gate.rules if r.rule == Rule.LABEL_RECALL} == {"Sports", "Business", "Sci/Tech"}
    assert call["config"].epochs == RetrainSetup.from_settings(settings).train.epochs  # nothing taught: the usual recipe


def test_a_change_made_while_a_retrain_runs_does_not_touch_it(tiny_home_copy: Path,
                                                              no_steps: list[dict[str, Any]]) -> None:
    settings = _with_feedback(tiny_home_copy)

    def meanwhile(stage: Stage) -> None:
        if stage == Stage.TRAINING:  # after the snapshot: another maintainer adds a topic
            store = FeedbackStore(settings.paths.feedback_db)
            store.topics.commit(store.topics.current(LABELS).add("Climate"), planned_on=1)
            store.close()

    result = retrain(RetrainSetup.from_settings(settings), track=False, on_stage=meanwhile)
    [call] = no_steps
    assert call["model_labels"] == LABELS
    assert _challenger_labels(tiny_home_copy, result.challenger) == LABELS
    assert result.gate is not None and result.gate.rule(Rule.NEW_TOPIC) is None  # judged as it started
    store = FeedbackStore(settings.paths.feedback_db)
    assert store.topics.current(LABELS).keys == (*LABELS, "Climate")  # the change itself was kept
    store.close()


def test_a_promotion_says_how_the_new_topic_did_in_plain_words_and_survives_the_state_file() -> None:
    from core.registry.stages import RunRecord
    from web.admin.decision_words import decision_text

    gate = decide([_base()], GateConfig(), LABELS, [NewTopicScore("Health", "Health", 41, found=34, predicted=40, right=35)])
    record = RunRecord(decision="promoted", champion_before="v0001", challenger="v0002", champion_after="v0002",
                       gate=gate)
    restored = RunRecord.from_dict(json.loads(json.dumps(record.as_dict())))
    assert ("The new topic Health: 41 held-out answers, recall 0.83 (at least 0.70), precision 0.88 (at least "
            "0.75) at 95% confidence." in decision_text(restored))


def test_a_retrain_from_a_champion_that_reads_an_added_topic_holds_that_topics_prior_where_training_drifted_it(
        tiny_home_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _with_feedback(tiny_home_copy, lambda t: t.add("Health", "health and medicine"))
    _traffic_pool(settings, tmp_path, health_answers=40)
    registry = ModelRegistry(tiny_home_copy / "models")

    def drifting(drift: float) -> Any:
        def train(model: Any, *args: Any, **kw: Any) -> TrainResult:
            with torch.no_grad():  # what replaying base rows that never hold Health does to its prior
                model.head[-1].bias[model.labels.index("Health")] -= drift
            return TrainResult()
        return train

    monkeypatch.setattr(challenger_module, "train", drifting(0.0))
    first = retrain(RetrainSetup.from_settings(settings), track=False)
    registry.promote(first.challenger, "the champion now reads Health")
    champion = registry.champion()
    assert champion is not None and "Health" in champion.meta["labels"]

    monkeypatch.setattr(challenger_module, "train", drifting(2.0))
    second = retrain(RetrainSetup.from_settings(settings), track=True)
    import mlflow

    params = mlflow.tracking.MlflowClient(settings.tracking_uri).get_run(second.mlflow_run_id).data.params
    assert int(params["prior_held_texts"]) >= 50
    assert float(params["prior_held_shift_Health"]) == pytest.approx(2.0, abs=0.5)  # the drift undone
    assert "prior_traffic_answers" not in params  # Health is not new to this model: not matched to the answers again
    # Without the setting the drift stays.
    third = retrain(RetrainSetup.from_settings(tiny_settings(tiny_home_copy, retrain_base_rows=0,
                                                             retrain_match_taught_prior=False)), track=True)
    params = mlflow.tracking.MlflowClient(settings.tracking_uri).get_run(third.mlflow_run_id).data.params
    assert "prior_held_shift_Health" not in params
