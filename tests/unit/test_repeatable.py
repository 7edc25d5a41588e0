"""The same data and seed give the same model: two bootstraps from a base encoder's folder (a small random BERT saved
as one, so the real loading path builds the head) serve the same probabilities, whatever the random state before."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import torch
from transformers import AutoTokenizer

from core.serving.classifier import load_version
from core.settings.config import SEED_CSV
from retrain.bootstrap import bootstrap
from retrain.classifier.model import resolve_base_model
from retrain.inputs import BootstrapSetup
from testkit.models import tiny_model, tiny_settings


def base_encoder(folder: Path) -> Path:
    """A small random BERT saved where a Hugging Face id would point (NEWSLOOP_BASE_MODEL takes a folder)."""
    tiny_model(seed=5).encoder.save_pretrained(folder)
    AutoTokenizer.from_pretrained(resolve_base_model("")).save_pretrained(folder)
    return folder


def own_topics(path: Path) -> Path:
    """A CSV of three topics of one's own, from the seed set's first 120 rows."""
    with SEED_CSV.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))[1:121]
    names = {"1": "Diplomacy", "2": "Football", "3": "Markets", "4": "Markets"}
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["label", "text"])
        writer.writerows((names[label], f"{title} {body}") for label, title, body in rows)
    return path


def test_two_bootstraps_of_the_same_data_and_seed_serve_the_same_model(tmp_path: Path) -> None:
    encoder = base_encoder(tmp_path / "encoder")
    data = own_topics(tmp_path / "topics.csv")
    served = []
    for run in ("first", "second"):
        torch.rand(int(1 + 7 * (run == "second")))  # a different random state before each run
        settings = tiny_settings(tmp_path / run, data=str(data), base_model=str(encoder), min_steps=12)
        result = bootstrap(BootstrapSetup.from_settings(settings), track=False)
        version = result.exported.version
        served.append((version.meta["validation"], load_version(version).predict_proba(["Rates rise again",
                                                                                         "A late goal"])))
    (first, first_probs), (second, second_probs) = served
    assert first["int8"]["accuracy"] == second["int8"]["accuracy"]
    assert round(first["fp32"]["accuracy"], 3) == round(second["fp32"]["accuracy"], 3)
    assert np.allclose(first_probs, second_probs, atol=1e-6)
