from __future__ import annotations

import numpy as np
import pytest
from transformers import AutoTokenizer

from core.data import load_seed
from retrain.model import resolve_base_model, tiny_model
from retrain.train import TrainConfig, make_batches, predict_logits, train


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
