"""Poisoning: a coordinated burst of flipped labels must not move the real champion; honest fixes must.

Needs a home with a real trained champion and the shared AG News data:
`NEWSLOOP_QUALITY_HOME=<home> python -m pytest -m quality tests/test_poisoning.py` (the honest-correction
test retrains, a few minutes on 2 cores, and is also marked slow).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from core.config import load_settings
from core.data import load_corpus
from core.labels import LABELS
from core.registry import ModelRegistry
from core.serving import OnnxClassifier
from feedback.store import FeedbackStore
from retrain.run import retrain
from tests.conftest import SHARED_AG_NEWS

pytestmark = pytest.mark.quality
HOME = os.environ.get("NEWSLOOP_QUALITY_HOME", "")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    if not HOME or ModelRegistry(Path(HOME) / "models").champion() is None:
        pytest.skip("set NEWSLOOP_QUALITY_HOME to a home with a trained champion")
    if not (SHARED_AG_NEWS / "train.csv").is_file():
        pytest.skip("shared AG News data not present")
    dest = tmp_path / "home"
    shutil.copytree(Path(HOME) / "models", dest / "models")
    return dest


def settings_for(home: Path):  # type: ignore[no-untyped-def]
    return load_settings(home=home, data=str(SHARED_AG_NEWS), retrain_max_minutes=3.0, retrain_base_rows=2000)


def validation_accuracy(home: Path) -> float:
    champion = ModelRegistry(home / "models").champion()
    validation = load_corpus(str(SHARED_AG_NEWS), 0.1, use_extra=True).validation
    probs = OnnxClassifier(champion.path).predict_proba([e.text for e in validation])
    return float((probs.argmax(axis=1) == np.array([e.label for e in validation])).mean())


def record_with_predictions(store: FeedbackStore, champion: OnnxClassifier, texts: list[str], labels: list[str],
                            annotators: list[str]) -> None:
    for pred, text, label, who in zip(champion.predict(texts), texts, labels, annotators, strict=True):
        store.record(text=text, user_label=label, annotator=who, kind="correct" if label != pred.label else "confirm",
                     predicted_label=pred.label, probabilities=pred.probabilities, model_version=pred.model_version)


def test_flipped_sports_burst_does_not_reach_the_champion(home: Path) -> None:
    settings = settings_for(home)
    before_version = ModelRegistry(settings.models_dir).champion().version
    before = validation_accuracy(home)
    corpus = load_corpus(str(SHARED_AG_NEWS), 0.1, use_extra=True)
    sports = [e.text for e in corpus.train if e.label == LABELS.index("Sports")][:300]
    store = FeedbackStore(
        settings.feedback_db, writes_per_minute=10_000, contradiction_confidence=settings.suspicious_confidence
    )
    champion = OnnxClassifier(ModelRegistry(settings.models_dir).champion().path)
    record_with_predictions(store, champion, sports, ["Business"] * 300, [f"mob-{i % 3}" for i in range(300)])
    flagged = store.count(status="suspicious")
    print(f"flipped burst: {flagged} of 300 answers flagged suspicious")
    assert flagged >= 150  # the champion confidently contradicts most of them; the gate handles the rest

    result = retrain(settings, track=False)
    print(f"flipped burst: {result.decision} in {result.seconds} s: {result.reasons}")
    # What must hold whatever the gate decides: serving quality does not fall, and Sports is not taught away.
    # (A barely trained champion can be legitimately replaced by a retrain on its replayed base rows.)
    assert (before - validation_accuracy(home)) * 100 <= 0.5
    if result.decision == "promoted":
        assert result.gate["recall_drops"]["Sports"] <= settings.gate_recall_tolerance + 1e-9
    else:
        assert result.decision == "refused"
        assert ModelRegistry(settings.models_dir).champion().version == before_version


@pytest.mark.slow
def test_honest_corrections_of_real_mistakes_get_through(home: Path) -> None:
    settings = settings_for(home)
    champion = OnnxClassifier(ModelRegistry(settings.models_dir).champion().path)
    corpus = load_corpus(str(SHARED_AG_NEWS), 0.1, use_extra=True)
    pool = corpus.train[:6000]
    preds = champion.predict_proba([e.text for e in pool]).argmax(axis=1)
    mistakes = [e for e, p in zip(pool, preds, strict=True) if p != e.label][:300]
    store = FeedbackStore(
        settings.feedback_db, writes_per_minute=10_000, contradiction_confidence=settings.suspicious_confidence
    )
    record_with_predictions(store, champion, [e.text for e in mistakes], [LABELS[e.label] for e in mistakes],
                            [f"honest-{i % 5}" for i in range(len(mistakes))])
    before = validation_accuracy(home)
    result = retrain(settings, track=False)
    print(f"honest retrain: {result.decision} in {result.seconds} s, rows {result.rows}, gate {result.gate}")
    assert result.decision == "promoted", result.reasons
    assert (before - validation_accuracy(home)) * 100 <= 0.5
