"""The hybrid's lexical half (core.serving.lexical, retrain.training.lexical): fitted on a run's rows, saved beside the ONNX
file and served without PyTorch, its weight chosen on validation."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy.special import log_softmax

from core.data import Example
from core.registry.versions import ModelRegistry
from core.serving.classifier import OnnxClassifier
from core.serving.lexical import LexicalModel
from retrain.export.publish import join_lexical
from retrain.training.lexical import DEFAULT_WEIGHT, MIN_CHOOSING_ROWS, choose_weight, fit_lexical

WORDS = {0: "minister election parliament vote treaty", 1: "goal striker league match coach",
         2: "shares profit earnings market bank", 3: "chip software research phone space"}


def texts(n: int, seed: int = 0) -> list[Example]:
    """Articles whose words say their topic, with noise words shared by all."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        label = i % 4
        words = list(rng.choice(WORDS[label].split(), 3)) + list(rng.choice(["the", "a", "of", "on", "today", "said"], 4))
        out.append(Example(" ".join(rng.permutation(words)), label))
    return out


def test_a_saved_model_serves_what_it_was_fitted_to(tmp_path: Path) -> None:
    rows = texts(80)
    model = fit_lexical([e.text for e in rows], [e.label for e in rows], 4, c=30.0, max_features=1000)
    probe = ["the striker scored a goal", "profit and shares fell", "new chip research"]
    model.with_weight(0.5).save(tmp_path)
    loaded = LexicalModel.load(tmp_path)
    assert loaded is not None and loaded.weight == 0.5 and loaded.vocabulary == model.vocabulary
    assert np.allclose(loaded.log_probs(probe), model.log_probs(probe), atol=1e-6)
    assert list(loaded.log_probs(probe).argmax(axis=1)) == [1, 2, 3]
    assert LexicalModel.load(tmp_path / "elsewhere") is None  # an encoder-only version has none


def test_a_topic_without_training_rows_neither_pulls_nor_pushes(tmp_path: Path) -> None:
    rows = [e for e in texts(80) if e.label != 3]  # a topic only the encoder knows of yet
    model = fit_lexical([e.text for e in rows], [e.label for e in rows], 4, c=30.0, max_features=1000)
    assert not model.coef[3].any() and model.intercept[3] == pytest.approx(model.intercept[:3].mean())


def test_the_weight_is_chosen_on_validation_and_defaults_on_too_few_rows() -> None:
    validation = texts(60, seed=1)
    rows = texts(80)
    lexical = fit_lexical([e.text for e in rows], [e.label for e in rows], 4, c=30.0, max_features=1000)
    y = [e.label for e in validation]
    lexical_lp = lexical.log_probs([e.text for e in validation])
    clueless = np.zeros((len(y), 4), dtype=np.float32)  # an encoder that knows nothing: the words must carry it
    assert choose_weight(clueless, lexical_lp, y) > 0
    knowing = np.eye(4, dtype=np.float32)[y] * 8.0  # an encoder always right and sure: nothing to add
    assert choose_weight(knowing, -lexical_lp, y) == 0.0  # words that mislead get no weight
    assert choose_weight(clueless[:MIN_CHOOSING_ROWS - 1], lexical_lp[:MIN_CHOOSING_ROWS - 1],
                         y[:MIN_CHOOSING_ROWS - 1]) == DEFAULT_WEIGHT


def test_a_hybrid_version_serves_the_blend_and_keeps_the_encoder_apart(tiny_champion_home: Path, tmp_path: Path) -> None:
    champion = ModelRegistry(tiny_champion_home / "models").champion()
    assert champion is not None
    model_dir = tmp_path / "hybrid"
    shutil.copytree(champion.path, model_dir)
    rows = texts(80)
    lexical = fit_lexical([e.text for e in rows], [e.label for e in rows], 4, c=30.0, max_features=1000)
    joined = join_lexical(model_dir, lexical, texts(60, seed=2))
    assert joined["weight"] > 0 and joined["chosen_on"] == 60  # a random tiny encoder: the words must carry it
    served = OnnxClassifier(model_dir)
    probe = ["the striker scored a goal", "profit and shares fell"]
    expected = log_softmax(served.encoder_logits(probe), axis=-1) + joined["weight"] * lexical.log_probs(probe)
    assert np.allclose(served.logits(probe), expected, atol=1e-5)
    assert [p.label for p in served.predict(probe)] == ["Sports", "Business"]
