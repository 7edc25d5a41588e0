"""A tiny model for tests and benches: its settings (new-page bounds lifted for loopback) and a trained champion."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from core.labels import LABELS
from core.settings.config import Settings, load_settings

if TYPE_CHECKING:
    from retrain.classifier.model import NewsClassifier

# Every browser a test simulates comes from one loopback address, many a second: the new-page bounds (meant
# for a crowd of strangers) are lifted, except where a test sets them (tests/e2e/test_abuse.py: the defaults).
MANY_PAGES = {"new_sessions_per_minute": 1_000_000, "new_sessions_per_second": 1_000_000}
MANY_PAGES_ENV = {f"NEWSLOOP_{name.upper()}": str(value) for name, value in MANY_PAGES.items()}  # an app process's


def tiny_settings(home: Path, **overrides: object) -> Settings:
    # The encoder alone, for one epoch of 32 (the pace the mechanics tests were written for): a random 2-layer model
    # beside a TF-IDF half would be the TF-IDF model, and the mechanics tests read the encoder's (near uniform)
    # confidences; the recipe's length, rates and hybrid have their own tests (tests/unit/test_lexical.py,
    # test_train.py, test_repeatable.py).
    values: dict[str, object] = {"home": home, "data": "seed", "max_length": 64, "bootstrap_max_minutes": 0.0,
                                 "lexical": False, "min_steps": 0, "max_tokens": 0, "epochs": 1.0, "batch_size": 32,
                                 "lr_encoder": 8e-5, **MANY_PAGES}
    return load_settings(**(values | overrides))


def build_tiny_champion(home: Path, seed: int = 0, track: bool = False, **overrides: object) -> Settings:
    """Train a 2-layer random BERT on the seed set (or the `data` override's topics) for a few steps and make it
    champion (seconds)."""
    from transformers import AutoTokenizer

    from core.data import source_labels
    from retrain.bootstrap import bootstrap
    from retrain.classifier.model import resolve_base_model
    from retrain.inputs import BootstrapSetup

    settings = tiny_settings(home, **overrides)
    tokenizer = AutoTokenizer.from_pretrained(resolve_base_model(""))
    model = tiny_model(seed=seed, labels=source_labels(settings.data.source, settings.data.use_extra))
    bootstrap(BootstrapSetup.from_settings(settings), model_and_tokenizer=(model, tokenizer), track=track)
    return settings


def tiny_model(vocab_size: int = 30522, seed: int = 0, labels: Sequence[str] = LABELS) -> NewsClassifier:
    """A small random BERT classifier for tests of mechanics; its vocabulary fits the base tokenizer."""
    import torch
    from transformers import BertConfig, BertModel

    from retrain.classifier.model import NewsClassifier

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=256,
    )
    return NewsClassifier(BertModel(config, add_pooling_layer=False), labels, dropout=0.1)
