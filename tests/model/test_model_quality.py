"""Behaviour of the real trained champion: minimum functionality, invariance, direction, accuracy.

Run on a home with a real champion: `NEWSLOOP_QUALITY_HOME=<home> python -m pytest -m quality`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from core.data import load_corpus
from core.labels import LABELS
from core.registry.versions import ModelRegistry
from core.samples import AG_NEWS_EXAMPLES as EXAMPLES
from core.serving.classifier import OnnxClassifier
from testkit.data import SHARED_AG_NEWS

pytestmark = pytest.mark.quality
HOME = os.environ.get("NEWSLOOP_QUALITY_HOME", "")


@pytest.fixture(scope="module")
def champion() -> OnnxClassifier:
    if not HOME:
        pytest.skip("set NEWSLOOP_QUALITY_HOME to a home with a trained champion")
    version = ModelRegistry(Path(HOME) / "models").champion()
    if version is None:
        pytest.skip(f"no champion in {HOME}")
    return OnnxClassifier(version.path, version=version.version)


def test_minimum_functionality_on_clear_examples(champion: OnnxClassifier) -> None:
    assert [p.label for p in champion.predict(EXAMPLES)] == list(LABELS)


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("Parliament votes to approve the peace treaty with its neighbour", "World"),
        ("Goalkeeper saves two penalties as his team wins the cup final", "Sports"),
        ("Quarterly profit beats forecasts and the shares jump 8 percent", "Business"),
        ("Researchers release open source software that speeds up web browsers", "Sci/Tech"),
    ],
)
def test_headlines_of_each_topic(champion: OnnxClassifier, text: str, label: str) -> None:
    assert champion.predict([text])[0].label == label


def test_invariant_to_case_whitespace_and_corpus_artifacts(champion: OnnxClassifier) -> None:
    base = "Oil prices rose to $50 a barrel as supply worries grew, traders said."
    variants = [base.upper(), f"  {base}\n", base.replace("$", "\\$"), base.replace("'", " #39;")]
    probs = champion.predict_proba([base, *variants])
    assert np.abs(probs - probs[0]).max() < 0.02


def test_business_words_move_probability_towards_business(champion: OnnxClassifier) -> None:
    plain = "The company announced a new plan on Tuesday."
    business = plain + " Its shares rose after quarterly earnings beat analysts' forecasts."
    p_plain, p_business = champion.predict_proba([plain, business])
    assert p_business[LABELS.index("Business")] > p_plain[LABELS.index("Business")]


@pytest.mark.skipif(not (SHARED_AG_NEWS / "train.csv").is_file(), reason="shared AG News data not present")
def test_validation_accuracy_of_the_served_model(champion: OnnxClassifier) -> None:
    validation = load_corpus(str(SHARED_AG_NEWS), 0.1, use_extra=True).validation
    probs = champion.predict_proba([e.text for e in validation])
    accuracy = float((probs.argmax(axis=1) == np.array([e.label for e in validation])).mean())
    assert accuracy >= 0.90
