"""Accuracy of model versions: on the slice-test part through the serving path, and on base validation."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from core.data import Example
from core.storage.paths import INT8_FILE

if TYPE_CHECKING:
    from core.registry.versions import ModelVersion
    from core.serving.classifier import OnnxClassifier


class Evaluator:
    """Accuracy of model versions on the slice-test part (through OnnxClassifier), cached per version."""

    def __init__(self, slice_test: list[Example]) -> None:
        self.slice_test = slice_test
        self._models: dict[str, OnnxClassifier] = {}
        self._slice: dict[str, float] = {}

    def classifier(self, version: ModelVersion) -> OnnxClassifier:
        from core.serving.classifier import load_version

        if version.version not in self._models:
            if len(self._models) >= 2:  # the champion and one challenger; older sessions only hold memory
                self._models.pop(next(iter(self._models)))
            self._models[version.version] = load_version(version)
        return self._models[version.version]

    def slice_accuracy(self, version: ModelVersion) -> float:
        if version.version not in self._slice:
            clf = self.classifier(version)
            predicted = clf.proba_in_label_order([ex.text for ex in self.slice_test]).argmax(axis=1)
            self._slice[version.version] = float(np.mean(predicted == np.array([ex.label for ex in self.slice_test])))
        return self._slice[version.version]


def base_accuracy(version: ModelVersion) -> float:
    """Base-validation accuracy of the file the version serves, as its export measured it through
    OnnxClassifier on the same corpus validation (retrain and bootstrap read the same data folder)."""
    precision = "int8" if version.meta.get("serve_file") == INT8_FILE else "fp32"
    return float(version.meta["validation"][precision]["accuracy"])


def topic_scores(truth: Sequence[Hashable], predicted: Sequence[Hashable], topic: Hashable) -> dict[str, float]:
    """Accuracy over every topic, and `topic`'s recall and precision (0 where nothing is, or was called, `topic`)."""
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    precision, recall, _, _ = precision_recall_fscore_support(truth, predicted, labels=[topic], zero_division=0)
    return {"accuracy": float(accuracy_score(truth, predicted)), "recall": float(recall[0]),
            "precision": float(precision[0])}
