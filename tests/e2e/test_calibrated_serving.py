"""Every probability the app reads is the calibrated one: a champion whose meta holds a temperature, served by
the real app; the REST API, the page's prediction stored with a correction (what the suspicious rule reads)
and the queue's uncertainty order all equal softmax(logits / T) from the same ONNX session, not softmax(logits)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import httpx
import numpy as np
import pytest

from core.labels import LABELS
from core.registry.versions import ModelRegistry
from core.serving.classifier import OnnxClassifier, softmax
from core.settings.policies import StoreLimits
from feedback.labelling.pool import margin_uncertainty
from feedback.store import FeedbackStore
from testkit.models import tiny_settings
from testkit.server import launched_app
from testkit.stack import wait_until
from tests.e2e.raw_http import Visitor

TEMPERATURE = 0.05  # sharpens the tiny model's near-uniform logits, so calibrated and raw differ plainly
TEXT = "The striker signed a new three-year contract with the club on Monday."
POOL = [f"Pool article {i} about markets, ministers and matches" for i in range(6)]


def test_the_api_the_stored_prediction_and_the_queue_order_read_calibrated_probabilities(
    tiny_champion_home: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    shutil.copytree(tiny_champion_home, home)
    champion = ModelRegistry(home / "models").champion()
    assert champion is not None
    meta_path = champion.path / "meta.json"
    meta_path.write_text(json.dumps(json.loads(meta_path.read_text()) | {"temperature": TEMPERATURE}))
    raw = OnnxClassifier(champion.path)
    assert raw.temperature == TEMPERATURE

    def expected(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        logits = raw.logits(texts)
        columns = [raw.labels.index(name) for name in LABELS]
        return softmax(logits / TEMPERATURE)[:, columns], softmax(logits)[:, columns]

    settings = tiny_settings(home, classify_per_minute=1_000, queue_per_minute=1_000)
    store = FeedbackStore(settings.paths.feedback_db, StoreLimits(writes_per_minute=1_000))
    store.pool.add(POOL, source="pool")
    calibrated, uncalibrated = expected([TEXT])
    assert np.abs(calibrated - uncalibrated).max() > 0.01  # the test can tell them apart
    with launched_app(settings, store) as (url, _):
        # The background scorer looks at once on start, so its first batch is the pool alone. Waiting for that batch
        # fixes what the expectation below reads: padding to a batch's longest text and int8's per-batch activation
        # scale move the logits, and the correction below would otherwise join the batch on a slower start.
        wait_until(lambda: all_scored(store), 60, "the background scorer scores the pool on start")
        api = httpx.post(f"{url}api/v1/classify", json={"text": TEXT}, timeout=60).json()["results"][0]
        assert [api["probabilities"][name] for name in LABELS] == pytest.approx(calibrated[0].tolist(), abs=1e-5)

        visitor = Visitor(url)
        label, _, shown = visitor.call("classify", TEXT)
        wrong = next(name for name in LABELS if name != label["label"])
        assert "saved" in visitor.call("feedback", wrong, shown, TEXT)[0].lower()
        stored = next(row for row in store.answers.rows() if row["text"] == TEXT)["probabilities"]
        assert [stored[name] for name in LABELS] == pytest.approx(calibrated[0].tolist(), abs=1e-4)
        confidence = max(stored.values())
        if confidence >= settings.answers.suspicious_confidence:  # the suspicious rule quotes the calibrated confidence
            assert f"{confidence:.0%}" in next(r for r in store.answers.rows() if r["text"] == TEXT)["suspicious_reason"]

        visitor.call("queue_next")  # the queue rescores its pool with the champion before serving
    with sqlite3.connect(store.path) as conn:
        scored = list(conn.execute("SELECT text, uncertainty FROM pool ORDER BY id"))
    scores = dict(scored)
    calibrated_pool, raw_pool = (margin_uncertainty(probabilities) for probabilities in expected(POOL))
    # Batched, the int8 logits still move by ~1e-3, which 1 / T = 20 magnifies: a loose match, against a
    # raw-softmax uncertainty that is ~0.97 for every item here.
    assert [scores[text] for text in POOL] == pytest.approx(calibrated_pool.tolist(), abs=0.03)
    assert np.abs(raw_pool - calibrated_pool).min() > 0.5


def all_scored(store: FeedbackStore) -> bool:
    """Whether every pool item has been scored by a model (the dashboard's pool counts)."""
    pool = store.stats()["pool"]
    return pool["scored"] == pool["items"]
