from __future__ import annotations

import numpy as np
import pytest
from transformers import AutoTokenizer

from core.data import load_seed
from retrain.model import resolve_base_model, tiny_model
from retrain.train import TrainConfig, make_batches, predict_logits, soft_targets, train


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


def test_training_is_seeded_and_learns(tokenizer) -> None:  # type: ignore[no-untyped-def]
    seed = load_seed()
    texts, labels = [e.text for e in seed.train], [e.label for e in seed.train]
    config = TrainConfig(epochs=6, lr_encoder=3e-3, lr_head=3e-3, max_length=64, seed=3, eval_rows=64)
    a, b = tiny_model(seed=5), tiny_model(seed=5)
    result = train(a, tokenizer, texts, labels, config, val_texts=texts[:64], val_labels=labels[:64])
    train(b, tokenizer, texts, labels, config)
    assert np.allclose(predict_logits(a, tokenizer, texts[:8], 64), predict_logits(b, tokenizer, texts[:8], 64))
    assert result.history and result.history[-1]["train_loss"] < 1.2  # ln(4) = 1.386 is chance
    assert result.history[-1]["val_accuracy"] > 0.5


def test_time_budget_ends_training_early(tokenizer) -> None:  # type: ignore[no-untyped-def]
    seed = load_seed()
    texts, labels = [e.text for e in seed.train] * 20, [e.label for e in seed.train] * 20
    config = TrainConfig(epochs=1, max_length=64, max_minutes=3 / 60)
    result = train(tiny_model(), tokenizer, texts, labels, config)
    assert result.stopped_by_budget
    assert result.steps < len(texts) // 32
    assert result.seconds < 3 + 2  # one step and the final bookkeeping may run past the budget


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
    assert (predict_logits(model, tokenizer, texts, 64).argmax(axis=1) == 1).mean() > 0.95
    with pytest.raises(ValueError):
        train(tiny_model(), tokenizer, texts, labels, config, targets=targets[:-1])
