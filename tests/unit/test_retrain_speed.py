"""What keeps a retrain short: frozen lower layers (the embeddings and the first k transformer layers stay fixed,
the rest train) and a single validation check at the end of its training loop."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoTokenizer

from core.data import load_seed
from core.settings.policies import TrainConfig
from retrain.classifier.model import freeze_lower_layers, resolve_base_model
from retrain.training.loop import _param_groups, train
from testkit.models import tiny_model


def snapshot(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: param.detach().clone() for name, param in model.named_parameters()}


def frozen_name(name: str, layers: int) -> bool:
    return name.startswith("encoder.embeddings.") or any(
        name.startswith(f"encoder.encoder.layer.{i}.") for i in range(layers)
    )


def test_a_training_step_leaves_frozen_layers_unchanged_and_changes_the_others() -> None:
    seed = load_seed()
    texts, labels = [e.text for e in seed.train][:64], [e.label for e in seed.train][:64]
    tokenizer = AutoTokenizer.from_pretrained(resolve_base_model(""))
    model = tiny_model(seed=3)  # 2 transformer layers
    before = snapshot(model)
    config = TrainConfig(epochs=1, batch_size=32, lr_encoder=1e-2, lr_head=1e-2, max_length=32, freeze_layers=1,
                         warmup_ratio=0.0, min_steps=0, max_tokens=0)
    result = train(model, tokenizer, texts, labels, config)
    assert result.steps == 2
    after = snapshot(model)
    frozen = [name for name in before if frozen_name(name, 1)]
    trained = [name for name in before if not frozen_name(name, 1) and not name.startswith("encoder.pooler.")]
    assert frozen and trained
    assert all(torch.equal(before[name], after[name]) for name in frozen)
    changed = [name for name in trained if not torch.equal(before[name], after[name])]
    # Every trained weight moved: the head and the upper layer, down to its attention (the first block that
    # gradients reach).
    assert changed == trained
    assert any(name.startswith("encoder.encoder.layer.1.attention.") for name in changed)


def test_frozen_parameters_are_left_out_of_the_optimizer() -> None:
    model = tiny_model()
    count = freeze_lower_layers(model, 1)
    frozen = {id(p) for name, p in model.named_parameters() if frozen_name(name, 1)}
    assert count == sum(p.numel() for name, p in model.named_parameters() if frozen_name(name, 1)) > 0
    grouped = {id(p) for group in _param_groups(model, TrainConfig()) for p in group["params"]}
    assert grouped and not grouped & frozen
    head = {id(p) for p in model.head.parameters()}
    assert head <= grouped


def test_freezing_nothing_or_more_layers_than_there_are() -> None:
    model = tiny_model()
    assert freeze_lower_layers(model, 0) == 0
    assert all(p.requires_grad for p in model.parameters())
    # The tiny model has 2 layers: freezing 2 or more would leave nothing below the head to adapt.
    assert freeze_lower_layers(model, 2) == freeze_lower_layers(model, 3) == 0
    assert all(p.requires_grad for p in model.parameters())
    with pytest.raises(ValueError):
        TrainConfig(freeze_layers=-1)


def test_a_retrain_validates_once_at_the_end_of_training() -> None:
    from core.settings.config import load_settings

    seed = load_seed()
    texts, labels = [e.text for e in seed.train][:96], [e.label for e in seed.train][:96]
    tokenizer = AutoTokenizer.from_pretrained(resolve_base_model(""))
    recipe = load_settings(max_length=32).retrain_train_config(max_minutes=0.0, batch_size=16)
    assert recipe.eval_checks == 1 and recipe.freeze_layers >= 1
    result = train(tiny_model(), tokenizer, texts, labels, recipe, val_texts=texts[:32], val_labels=labels[:32])
    assert result.steps == 6
    assert [point["step"] for point in result.history] == [6]
    bootstrap = load_settings(max_length=32, epochs=1, min_steps=0, max_tokens=0).train_config(max_minutes=0.0,
                                                                                             batch_size=16)
    result = train(tiny_model(), tokenizer, texts, labels, bootstrap, val_texts=texts[:32], val_labels=labels[:32])
    assert [point["step"] for point in result.history] == [1, 2, 3, 4, 5, 6]  # 6 // 4 = every step
    with pytest.raises(ValueError):
        TrainConfig(eval_checks=0)
