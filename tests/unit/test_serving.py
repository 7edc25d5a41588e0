"""The ONNX serving class and the champion service, on a tiny trained champion."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from core.labels import LABELS
from core.registry.versions import ModelRegistry
from core.serving.classifier import ChampionService, NoChampionError, OnnxClassifier
from core.settings.config import PROJECT_ROOT
from core.storage.paths import FP32_FILE, INT8_FILE

TEXTS = [
    "The central bank left interest rates unchanged on Thursday.",
    "Champions League: holders knocked out on penalties",
    "Scientists find water ice near the moon's south pole, a discovery that could help future crews.",
    "UN envoy meets rebel leaders",
    "x",
]


def champion_classifier(home: Path) -> OnnxClassifier:
    champion = ModelRegistry(home / "models").champion()
    assert champion is not None
    return OnnxClassifier(champion.path, version=champion.version)


@pytest.mark.parametrize(("onnx_file", "tolerance"), [(FP32_FILE, 1e-5), (INT8_FILE, 2e-2)])
def test_batch_and_single_predictions_agree(tiny_champion_home: Path, onnx_file: str, tolerance: float) -> None:
    champion = ModelRegistry(tiny_champion_home / "models").champion()
    clf = OnnxClassifier(champion.path, onnx_file=onnx_file)
    batch = clf.predict_proba(TEXTS)
    singles = np.vstack([clf.predict_proba([t]) for t in TEXTS])
    assert batch.shape == (len(TEXTS), len(LABELS))
    assert np.allclose(batch.sum(axis=1), 1.0, atol=1e-5)
    # fp32 must match exactly; int8 quantizes activations per batch, so it may move slightly.
    assert np.abs(batch - singles).max() < tolerance


def test_prediction_has_every_label_and_the_version(tiny_champion_home: Path) -> None:
    clf = champion_classifier(tiny_champion_home)
    [pred] = clf.predict([TEXTS[0]])
    assert set(pred.probabilities) == set(LABELS)
    assert pred.label == max(pred.probabilities, key=pred.probabilities.get)
    assert pred.model_version == "v0001"
    assert not pred.truncated


def test_probabilities_in_label_order_follow_core_labels_whatever_the_models_order(tiny_champion_home: Path) -> None:
    clf = champion_classifier(tiny_champion_home)
    plain = clf.predict_proba(TEXTS)
    assert clf.labels == LABELS and np.allclose(clf.proba_in_label_order(TEXTS), plain)
    clf.labels = tuple(reversed(LABELS))  # as if exported with its labels in another order
    reordered = clf.proba_in_label_order(TEXTS)
    assert np.allclose(reordered, plain[:, ::-1])
    assert [LABELS[i] for i in reordered.argmax(axis=1)] == [p.label for p in clf.predict(TEXTS)]


def test_text_longer_than_the_model_reads_is_flagged(tiny_champion_home: Path) -> None:
    clf = champion_classifier(tiny_champion_home)
    [pred] = clf.predict(["word " * 500])
    assert pred.truncated


def test_concurrent_callers_get_the_same_answers(tiny_champion_home: Path) -> None:
    clf = champion_classifier(tiny_champion_home)
    expected = clf.predict_proba(TEXTS)
    errors: list[str] = []

    def worker() -> None:
        for _ in range(10):
            if np.abs(clf.predict_proba(TEXTS) - expected).max() > 1e-4:
                errors.append("mismatch")

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_serving_path_does_not_import_torch() -> None:
    code = "import sys, app, core.serving.classifier; assert 'torch' not in sys.modules, 'torch imported'; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


def test_service_without_champion_says_so(tmp_path: Path) -> None:
    service = ChampionService(ModelRegistry(tmp_path / "models"))
    with pytest.raises(NoChampionError, match="bootstrap"):
        service.predict(["anything"])


def test_service_swaps_to_a_new_champion_and_back(tiny_home_copy: Path) -> None:
    registry = ModelRegistry(tiny_home_copy / "models")
    service = ChampionService(registry)
    old_model = service.model
    assert service.version == "v0001"
    staging = registry.new_staging()
    shutil.copytree(registry.get("v0001").path, staging, dirs_exist_ok=True)
    registry.promote(registry.commit(staging, dict(registry.get("v0001").meta)).version)
    assert service.refresh() is True
    assert service.version == "v0002"
    # A request that took the old model before the swap still completes on it.
    assert old_model.predict(["still works"])[0].model_version == "v0001"
    registry.rollback()
    assert service.refresh() is True and service.version == "v0001"
    assert service.refresh() is False  # nothing changed: no reload


def test_service_keeps_serving_when_the_new_champion_is_broken(tiny_home_copy: Path) -> None:
    registry = ModelRegistry(tiny_home_copy / "models")
    service = ChampionService(registry)
    assert service.version == "v0001" or service.model
    staging = registry.new_staging()
    (staging / "model.onnx").write_bytes(b"not an onnx file")
    registry.promote(registry.commit(staging, {"serve_file": "model.onnx"}).version)
    assert service.refresh() is False
    assert service.version == "v0001"
    assert "failed to load v0002" in (service.last_error or "")


def test_each_text_is_calibrated_with_the_temperature_of_the_form_it_reads_as(
    tiny_champion_home: Path, tmp_path: Path
) -> None:
    import json

    from core.input_forms import guess_form
    from core.serving.classifier import softmax

    model_dir = tmp_path / "model"
    champion = ModelRegistry(tiny_champion_home / "models").champion()
    assert champion is not None
    shutil.copytree(champion.path, model_dir)
    meta = json.loads((model_dir / "meta.json").read_text()) | {"temperature": 1.0, "temperatures": {"title": 0.05}}
    (model_dir / "meta.json").write_text(json.dumps(meta))
    headline = "Stocks rally as oil prices slide"
    article = ("Oil Slides as Stocks Rally LONDON (Reuters) - Shares rose on Monday as the price of oil fell for a third day, "
               "and traders said the central bank would hold rates steady. Markets in Asia followed.")
    assert (guess_form(headline).value, guess_form(article).value) == ("title", "full")
    clf = OnnxClassifier(model_dir)
    logits = clf.logits([headline, article])

    probs = clf.predict_proba([headline, article])

    assert np.allclose(probs[0], softmax(logits[:1] / 0.05)[0], atol=1e-5)
    assert np.allclose(probs[1], softmax(logits[1:])[0], atol=1e-5)
    assert np.abs(probs[0] - softmax(logits[:1])[0]).max() > 0.01  # the headline's differs from the raw softmax
    shown = clf.predict([headline, article])
    assert [shown[0].probabilities[name] for name in clf.labels] == pytest.approx(probs[0].tolist(), abs=1e-5)
    clf.temperature = 1.0  # one temperature for every form again: the raw softmax
    assert np.allclose(clf.predict_proba([headline]), softmax(clf.logits([headline])), atol=1e-5)
