"""Poisoning: a coordinated burst of flipped labels must not move the real champion; honest fixes must.

Needs a home with a real trained champion and the shared AG News data:
`NEWSLOOP_QUALITY_HOME=<home> python -m pytest -m quality tests/model/test_poisoning.py`. Each test retrains
(a few minutes on 2 cores). The honest test needs a champion that never saw the loop's slice: `.ci/run`
bootstraps it on `python bench/loop.py --write-data DIR`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from bench.sim.data import SLICE_KEYWORDS, keyword_pattern, load_sources, plan_slice
from core.data import Example, load_corpus
from core.evaluation.decision import Rule
from core.labels import LABELS
from core.registry.versions import ModelRegistry
from core.serving.classifier import OnnxClassifier
from core.settings.config import load_settings
from core.settings.policies import StoreLimits
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from retrain.inputs import RetrainSetup
from retrain.run import retrain
from testkit.data import SHARED_AG_NEWS

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
        store.answers.record(AnswerInput(text=text, user_label=label, annotator=who, kind="correct" if label != pred.label else "confirm",
                     predicted_label=pred.label, probabilities=pred.probabilities, model_version=pred.model_version))


def test_flipped_sports_burst_does_not_reach_the_champion(home: Path) -> None:
    settings = settings_for(home)
    before_version = ModelRegistry(settings.paths.models_dir).champion().version
    before = validation_accuracy(home)
    corpus = load_corpus(str(SHARED_AG_NEWS), 0.1, use_extra=True)
    sports = [e.text for e in corpus.train if e.label == LABELS.index("Sports")][:300]
    store = FeedbackStore(
        settings.paths.feedback_db,
        StoreLimits(writes_per_minute=10_000, suspicious_confidence=settings.answers.suspicious_confidence),
    )
    champion = OnnxClassifier(ModelRegistry(settings.paths.models_dir).champion().path)
    record_with_predictions(store, champion, sports, ["Business"] * 300, [f"mob-{i % 3}" for i in range(300)])
    flagged = store.answers.count(status="suspicious")
    print(f"flipped burst: {flagged} of 300 answers flagged suspicious")
    assert flagged >= 150  # the champion confidently contradicts most of them; the gate handles the rest

    result = retrain(RetrainSetup.from_settings(settings), track=False)
    print(f"flipped burst: {result.decision} in {result.seconds} s: {result.reasons}")
    # What must hold whatever the gate decides: serving quality does not fall, and Sports is not taught away.
    # (A barely trained champion can be legitimately replaced by a retrain on its replayed base rows.)
    assert (before - validation_accuracy(home)) * 100 <= 0.5
    if result.decision == "promoted":  # then a loss of the margin in Sports recall was ruled out
        sports = result.gate.rule(Rule.LABEL_RECALL, "Sports")
        assert sports.passed and sports.bound > -settings.gate.recall_margin
    else:
        assert result.decision == "refused"
        assert ModelRegistry(settings.paths.models_dir).champion().version == before_version


# Not in .ci/run: the gate may rightly refuse this retrain. The challenger learns the slice, but "energy is
# Business" can cost Sci/Tech a significant 4 points of recall, and no class may regress; it did so in 1
# of 4 clean-clone CI runs, depending on the 4-minute champion. `bench/loop.py` measures this over rounds.
@pytest.mark.slow
def test_honest_corrections_on_a_topic_the_champion_never_saw_get_through(home: Path) -> None:
    # The loop's shifted slice (Business news about oil and energy prices): .ci/run trains the quality
    # champion on `bench/loop.py --write-data` output, which leaves the slice and the stream out.
    plan = plan_slice(load_sources(str(SHARED_AG_NEWS)), keyword_pattern(SLICE_KEYWORDS), test_fraction=0.3,
                      other_share=0.5, val_fraction=0.1, seed=13)
    settings = settings_for(home)
    champion = OnnxClassifier(ModelRegistry(settings.paths.models_dir).champion().path)
    slice_before = accuracy(champion, plan.slice_test)
    if slice_before > 0.9:
        message = f"the champion already knows the slice ({slice_before:.3f}): train it on `bench/loop.py --write-data`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    articles = plan.stream[:300]
    store = FeedbackStore(
        settings.paths.feedback_db,
        StoreLimits(writes_per_minute=10_000, suspicious_confidence=settings.answers.suspicious_confidence),
    )
    record_with_predictions(store, champion, [e.text for e in articles], [LABELS[e.label] for e in articles],
                            [f"honest-{i % 5}" for i in range(len(articles))])
    print(f"honest answers: {store.answers.count(status='suspicious')} of {len(articles)} flagged suspicious")
    before = validation_accuracy(home)
    result = retrain(RetrainSetup.from_settings(settings), track=False)
    print(f"honest retrain: {result.decision} in {result.seconds} s, rows {result.rows}, gate {result.gate}")
    assert result.decision == "promoted", result.reasons
    after = OnnxClassifier(ModelRegistry(settings.paths.models_dir).champion().path)
    slice_after = accuracy(after, plan.slice_test)
    print(f"slice accuracy {slice_before:.3f} -> {slice_after:.3f}; validation {before:.4f} -> {validation_accuracy(home):.4f}")
    assert slice_after > slice_before
    assert (before - validation_accuracy(home)) * 100 <= 0.5


def accuracy(classifier: OnnxClassifier, examples: list[Example]) -> float:
    probs = classifier.predict_proba([e.text for e in examples])
    return float((probs.argmax(axis=1) == np.array([e.label for e in examples])).mean())
