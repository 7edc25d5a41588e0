"""Your own topics from the start: a CSV whose labels are three topic names, `newsloop bootstrap` on it (a tiny
random encoder as the base model, so it trains in seconds), then the app (`python app.py`) serves those three topics
by name, through the REST API and the page, and stores an answer naming one of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from gradio_client import Client

from core.registry.versions import ModelRegistry
from core.serving.classifier import OnnxClassifier
from core.settings.config import PROJECT_ROOT
from feedback.store import FeedbackStore
from testkit.data import OWN_TOPICS, own_topics_csv
from testkit.stack import get_json, start_replica

pytestmark = pytest.mark.e2e

TOPICS = list(OWN_TOPICS.values())  # Politics, Sport, Money


def tiny_base(folder: Path) -> Path:
    """A 2-layer random BERT encoder with the base tokenizer, saved where NEWSLOOP_BASE_MODEL can name it."""
    from transformers import AutoTokenizer

    from retrain.classifier.model import resolve_base_model
    from testkit.models import tiny_model

    tiny_model(seed=3).encoder.save_pretrained(folder)
    AutoTokenizer.from_pretrained(resolve_base_model("")).save_pretrained(folder)
    return folder


def test_bootstrap_on_three_named_topics_serves_them_and_stores_an_answer(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEWSLOOP_", "MLFLOW_"))} | {
        "NEWSLOOP_HOME": str(home), "NEWSLOOP_DATA": str(own_topics_csv(tmp_path / "own.csv")),
        "NEWSLOOP_BASE_MODEL": str(tiny_base(tmp_path / "tiny-base")), "NEWSLOOP_MAX_LENGTH": "64",
        "NEWSLOOP_BOOTSTRAP_MAX_MINUTES": "0", "NEWSLOOP_ONNX_THREADS": "1", "NEWSLOOP_TORCH_THREADS": "2",
        "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONPATH": str(PROJECT_ROOT),
    }
    done = subprocess.run([sys.executable, "-m", "newsloop", "bootstrap"], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["champion"] == "v0001" and report["data"].startswith("own.csv")

    champion = ModelRegistry(home / "models").champion()
    assert champion is not None and champion.meta["kind"] == "bootstrap"
    assert champion.meta["labels"] == TOPICS
    assert OnnxClassifier(champion.path).labels == tuple(TOPICS)  # the ONNX file's own metadata

    proc, url = start_replica(env, tmp_path / "app.log")
    try:
        topics = get_json(f"{url}api/v1/topics")
        assert [t["name"] for t in topics["topics"]] == TOPICS and topics["model_topics"] == TOPICS
        assert not any(t["new"] for t in topics["topics"])
        text = "The striker scored twice as the home side won the cup final."
        classified = httpx.post(f"{url}api/v1/classify", json={"text": text}, timeout=30).json()
        [result] = classified["results"]
        assert set(result["probabilities"]) == set(TOPICS) and result["label"] in TOPICS

        page = Client(url, verbose=False, download_files=False, analytics_enabled=False)
        label, _info, shown = page.predict(text, api_name="/classify")
        assert label["label"] in TOPICS
        assert "saved" in page.predict("Sport", shown, text, api_name="/feedback").lower()
        refused = page.predict("Sci/Tech", shown, text, api_name="/feedback")  # an AG News topic it does not have
        assert refused.lower().startswith("not saved")
    finally:
        proc.kill()
        proc.wait(timeout=30)

    store = FeedbackStore(home / "feedback.db")
    try:
        [answer] = [row for row in store.answers.rows() if row["text"] == text]
        assert answer["user_label"] == "Sport" and set(answer["probabilities"]) == set(TOPICS)
        # The app stored the champion's topics as the taxonomy's first version when it started.
        assert store.topics.stored_version() == 1 and store.topics.current().names == tuple(TOPICS)
    finally:
        store.close()
