"""The fine-tuning loop on a tiny model: batching, seeding, learning, the time budget (on a fake clock), targets."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from transformers import AutoTokenizer

from core.data import load_seed
from core.reading import Reading
from core.settings.policies import TrainConfig
from retrain.classifier.model import NewsClassifier, resolve_base_model
from retrain.classifier.tokens import predict_logits
from retrain.training.loop import make_batches, plan_steps, train
from retrain.training.targets import soft_targets
from testkit.models import tiny_model


@pytest.fixture(scope="module")
def tokenizer():  # type: ignore[no-untyped-def]
    return AutoTokenizer.from_pretrained(resolve_base_model(""))


def test_length_buckets_cover_every_row_once_and_pad_less() -> None:
    rng = np.random.default_rng(0)
    lengths = rng.integers(5, 190, size=1000).tolist()
    bucketed = make_batches(lengths, 32, np.random.default_rng(1), bucket=True)
    plain = make_batches(lengths, 32, np.random.default_rng(1), bucket=False)
    assert sorted(np.concatenate(bucketed).tolist()) == list(range(1000))

    def padding(batches: list[np.ndarray]) -> int:
        return sum(max(lengths[i] for i in b) * len(b) - sum(lengths[i] for i in b) for b in batches)

    assert padding(bucketed) < 0.2 * padding(plain)


def test_invalid_recipe_is_refused() -> None:
    with pytest.raises(ValueError):
        TrainConfig(lr_encoder=0)
    with pytest.raises(ValueError):
        TrainConfig(epochs=0)


def test_training_is_seeded(tokenizer) -> None:  # type: ignore[no-untyped-def]
    seed = load_seed()
    texts, labels = [e.text for e in seed.train], [e.label for e in seed.train]
    # No step floor: one epoch's steps show the seed as well as the recipe's 200-step floor would.
    config = TrainConfig(epochs=1, lr_encoder=3e-3, lr_head=3e-3, max_length=64, seed=3, min_steps=0)
    a, b = tiny_model(seed=5), tiny_model(seed=5)
    train(a, tokenizer, texts, labels, config)
    train(b, tokenizer, texts, labels, config)
    assert np.allclose(predict_logits(a, tokenizer, texts[:8], Reading(64)), predict_logits(b, tokenizer, texts[:8], Reading(64)))


def test_training_learns(tokenizer) -> None:  # type: ignore[no-untyped-def]
    seed = load_seed()
    texts, labels = [e.text for e in seed.train], [e.label for e in seed.train]
    config = TrainConfig(epochs=6, lr_encoder=3e-3, lr_head=3e-3, max_length=64, seed=3, eval_rows=64)
    result = train(tiny_model(seed=5), tokenizer, texts, labels, config, val_texts=texts[:64], val_labels=labels[:64])
    assert result.history and result.history[-1]["train_loss"] < 1.2  # ln(4) = 1.386 is chance
    assert result.history[-1]["val_accuracy"] > 0.5


class StepClock:
    """Fake seconds for `train(clock=...)`: training step n (one forward pass) takes `seconds(n)`, whatever
    the machine's real speed, so budget tests give the same answer on an idle machine and a loaded one."""

    def __init__(self, model: NewsClassifier, seconds: Callable[[int], float]) -> None:
        self.now, self.steps, self.seconds = 0.0, 0, seconds
        model.register_forward_hook(self._tick)

    def _tick(self, *_: object) -> None:
        self.steps += 1
        self.now += self.seconds(self.steps)

    def __call__(self) -> float:
        return self.now


def budgeted_run(tokenizer, seconds: Callable[[int], float], budget_s: float, **config: object):  # type: ignore[no-untyped-def]
    seed = load_seed()
    texts, labels = [e.text for e in seed.train], [e.label for e in seed.train]
    lrs: dict[int, float] = {}
    model = tiny_model()
    clock = StepClock(model, seconds)
    # The plan in epochs alone (no step floor, no token bound), as these budgets were worked out for.
    plain = {"max_length": 64, "max_minutes": budget_s / 60, "batch_size": 32, "epochs": 1.0, "min_steps": 0,
             "max_tokens": 0}
    recipe = TrainConfig(**(plain | config))  # type: ignore[arg-type]
    result = train(model, tokenizer, texts, labels, recipe, clock=clock,
                   on_metrics=lambda metrics, step: lrs.__setitem__(step, metrics["lr_encoder"]))
    return result, lrs, -(-len(texts) // recipe.batch_size) * recipe.epochs


def test_time_budget_ends_training_early(tokenizer) -> None:  # type: ignore[no-untyped-def]
    # 20 epochs of 7 batches (203 seed rows, 32 a batch) = 140 steps planned; at 0.25 s a step, 3 s afford 12.
    result, _, planned = budgeted_run(tokenizer, lambda step: 0.25, 3.0, epochs=20)
    assert planned == 140 and result.stopped_by_budget
    assert 8 <= result.steps <= 12
    assert result.seconds <= 3.0


def test_time_budget_replans_both_ways_as_the_speed_changes(tokenizer) -> None:  # type: ignore[no-untyped-def]
    # Slow steps first (a loaded machine): the plan shrinks. Then fast ones: it grows back to the full run.
    result, lrs, planned = budgeted_run(tokenizer, lambda step: 1.0 if step <= 16 else 0.01, 25.0, batch_size=8)
    assert result.steps == planned == 26 and not result.stopped_by_budget
    assert result.seconds < 25.0
    _, plain_lrs, _ = budgeted_run(tokenizer, lambda step: 0.0, 0.0, batch_size=8)
    # The linear decay followed the shortened plan (24 steps) until the fast steps restored the full one, so
    # at steps 10 and 20 it had decayed further than without a budget.
    assert lrs[10] < plain_lrs[10] and lrs[20] < plain_lrs[20]


def test_running_out_of_time_ends_training_at_once(tokenizer) -> None:  # type: ignore[no-untyped-def]
    # The machine stalls for 100 s on step 5: no speed-based plan foresaw that, so training stops right there.
    result, _, planned = budgeted_run(tokenizer, lambda step: 100.0 if step == 5 else 0.01, 30.0, batch_size=8)
    assert result.stopped_by_budget and result.steps == 5 < planned


def test_soft_targets_without_a_teacher_are_label_smoothed_cross_entropy() -> None:
    import torch

    labels = [0, 3, 1, 2, 2]
    logits = torch.randn(5, 4, generator=torch.Generator().manual_seed(0))
    targets = torch.from_numpy(soft_targets(labels, 4, 0.1))
    ours = -(targets * torch.log_softmax(logits, dim=-1)).sum(dim=-1)
    reference = torch.nn.CrossEntropyLoss(label_smoothing=0.1, reduction="none")(logits, torch.tensor(labels))
    assert torch.allclose(ours, reference, atol=1e-6)
    assert np.allclose(targets.numpy().sum(axis=1), 1.0)


def test_soft_targets_blend_in_the_teacher() -> None:
    teacher = np.array([[0.7, 0.1, 0.1, 0.1], [0.0, 0.0, 0.5, 0.5]], dtype=np.float32)
    blended = soft_targets([1, 3], 4, 0.0, teacher, 0.5)
    assert np.allclose(blended, [[0.35, 0.55, 0.05, 0.05], [0.0, 0.0, 0.25, 0.75]])
    assert np.allclose(soft_targets([1, 3], 4, 0.0, teacher, 1.0), teacher)
    with pytest.raises(ValueError):
        soft_targets([1], 4, 0.0, teacher, 0.5)  # one label, two teacher rows
    with pytest.raises(ValueError):
        soft_targets([1, 3], 4, 0.0, teacher, 1.5)


def test_training_follows_soft_targets_over_labels(tokenizer) -> None:  # type: ignore[no-untyped-def]
    # The targets say "Sports" for every row whatever the labels say: the model must learn the targets.
    seed = load_seed()
    texts, labels = [e.text for e in seed.train], [e.label for e in seed.train]
    targets = soft_targets([1] * len(texts), 4, 0.0)
    config = TrainConfig(epochs=3, lr_encoder=3e-3, lr_head=3e-3, max_length=64, seed=3)
    model = tiny_model(seed=5)
    train(model, tokenizer, texts, labels, config, targets=targets)
    assert (predict_logits(model, tokenizer, texts, Reading(64)).argmax(axis=1) == 1).mean() > 0.95
    with pytest.raises(ValueError):
        train(tiny_model(), tokenizer, texts, labels, config, targets=targets[:-1])


def test_bootstrap_rows_cover_each_input_form_with_its_own_cap() -> None:
    from core.data import Example, InputForm
    from retrain.actions import parse_forms
    from retrain.bootstrap import training_rows

    train = [Example(f"Title {i} Body {i}", i % 4, f"Title {i}", f"Body {i}") for i in range(10)]
    train.append(Example("Text only row", 0))  # a label,text row: no headline of its own
    forms = parse_forms("full,title:3,body")
    assert forms == ((InputForm.FULL, 0), (InputForm.TITLE, 3), (InputForm.BODY, 0))
    rows, counts = training_rows(train, forms, max_rows=5, seed=1)
    assert counts == {"full": 5, "title": 3, "body": 5}
    assert sum(r.text.startswith("Title") and "Body" not in r.text for r in rows) == 3
    assert len(rows) == 13


def test_unknown_input_form_is_refused_with_the_known_ones() -> None:
    from retrain.actions import parse_forms

    with pytest.raises(ValueError, match="full, title, body"):
        parse_forms("full,headline")


def test_assemble_leaves_out_and_counts_feedback_on_base_validation_texts() -> None:
    from core.data import Corpus, Example
    from retrain.training.targets import assemble

    validation = [Example("a validation story about the cup final", 1)]
    corpus = Corpus(train=[Example(f"base story {i}", i % 4) for i in range(5)], validation=validation)
    feedback = [Example("a validation story about the cup final", 1), Example("a new story about chips", 3)]
    rows = assemble(corpus, feedback, [], base_rows=0, seed=0)
    assert [e.text for e in rows.feedback] == ["a new story about chips"] and rows.on_validation == 1


def test_feedback_repeats_train_each_feedback_row_k_times_and_count_it_once() -> None:
    from core.data import Corpus, Example
    from retrain.training.targets import assemble

    corpus = Corpus(train=[Example(f"base story {i}", i % 4) for i in range(5)], validation=[])
    feedback = [Example("chips story", 3), Example("cup final", 1)]
    rows = assemble(corpus, feedback, [], base_rows=0, seed=0, feedback_repeats=3)
    assert rows.counts["feedback_train"] == 2 and rows.counts["base_train"] == 5
    assert rows.texts.count("chips story") == 3 and rows.texts.count("base story 0") == 1
    assert len(rows.texts) == len(rows.labels) == len(rows.weights(2.0)) == 5 + 6
    assert rows.weights(2.0)[-6:] == [2.0] * 6 and rows.labels[-6:] == [3, 1] * 3


def test_feedback_repeats_is_a_setting_with_a_checked_range() -> None:
    from core.settings.config import load_settings
    from core.settings.policies import RetrainPolicy

    assert load_settings(retrain_feedback_repeats=4).retrain_policy().feedback_repeats == 4
    with pytest.raises(ValueError, match="feedback_repeats"):
        RetrainPolicy(feedback_repeats=0)


def test_the_step_plan_follows_the_data() -> None:
    recipe = TrainConfig().with_(epochs=3.0, batch_size=16, min_steps=200, max_tokens=600_000)
    assert plan_steps([50] * 250, recipe) == 200  # 250 rows: 48 steps for 3 epochs, read for 200
    assert plan_steps([50] * 2000, recipe) == 375  # 2,000 short rows: 3 epochs
    assert plan_steps([256] * 2000, recipe) == 146  # 2,000 long ones: what 600,000 tokens allow
    assert plan_steps([256] * 100, recipe.with_(max_tokens=0)) == 200
    assert plan_steps([50] * 250, recipe.with_(min_steps=0)) == 48
