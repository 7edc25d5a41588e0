"""Scores a model version through the serving path (ONNX Runtime), reusing the validation probabilities its export
cached when the set is the same."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from core.data import Example
from core.evaluation.metrics import evaluate_probabilities
from core.registry.versions import ModelVersion
from core.serving.classifier import OnnxClassifier
from core.storage.paths import VALIDATION_PROBS
from core.text import text_hash


def validation_key(examples: list[Example]) -> str:
    """Identifies a validation set (texts and labels), so cached scores are reused only for the same set."""
    digest = hashlib.sha256()
    for ex in examples:
        digest.update(f"{text_hash(ex.text)}:{ex.label}\n".encode())
    return digest.hexdigest()


def score_file(model_dir: Path, onnx_file: str | None, examples: list[Example]) -> tuple[dict[str, Any], np.ndarray]:
    """Metrics and probabilities (columns in the model's own label order, which `examples` index) of one ONNX file
    of a model directory; None = the file the directory serves."""
    classifier = OnnxClassifier(model_dir, onnx_file=onnx_file)
    probs = classifier.predict_proba([ex.text for ex in examples])
    return evaluate_probabilities([ex.label for ex in examples], probs, classifier.labels), probs


def model_labels(version: ModelVersion) -> tuple[str, ...]:
    """The topic keys a model version predicts, in its output order (its meta, else its ONNX metadata)."""
    labels = version.meta.get("labels")
    return tuple(labels) if labels else OnnxClassifier(version.path).labels


def served_probs(version: ModelVersion, examples: list[Example]) -> np.ndarray:
    """The version's served probabilities on `examples` (columns in its own label order): cached at export when the
    set is the same, else scored."""
    cached = version.path / VALIDATION_PROBS
    if cached.is_file() and version.meta.get("validation", {}).get("key") == validation_key(examples):
        probs = np.load(cached)
        if probs.shape[0] == len(examples):
            return probs
    return OnnxClassifier(version.path).predict_proba([ex.text for ex in examples])
