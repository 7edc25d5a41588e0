"""Pure classification metrics over arrays; no I/O.

`labels` name the classes the indices stand for (a model's or a corpus's topics); AG News's four by default, where a
caller has nothing else."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.metrics import (
    accuracy_score,
    average_precision_score,
    confusion_matrix,
    f1_score,
    precision_recall_fscore_support,
    roc_auc_score,
)

from core.labels import LABELS

# Label indices, as a list or as an integer array (what a model's argmax gives).
ClassIds = Sequence[int] | np.ndarray


def classification_metrics(
    y_true: ClassIds, y_pred: ClassIds, labels: Sequence[str] = LABELS
) -> dict:
    """Accuracy, macro-F1, per-label precision/recall/F1/support and the confusion matrix."""
    idx = list(range(len(labels)))
    precision, recall, f1, support = precision_recall_fscore_support(
        y_true, y_pred, labels=idx, zero_division=0
    )
    return {
        "n": len(y_true),
        "accuracy": float(accuracy_score(y_true, y_pred)) if len(y_true) else 0.0,
        "macro_f1": float(f1_score(y_true, y_pred, labels=idx, average="macro", zero_division=0)),
        "per_label": {
            name: {
                "precision": float(precision[i]),
                "recall": float(recall[i]),
                "f1": float(f1[i]),
                "support": int(support[i]),
            }
            for i, name in enumerate(labels)
        },
        "confusion_matrix": confusion_matrix(y_true, y_pred, labels=idx).tolist(),
    }


def ranking_metrics(y_true: ClassIds, probs: np.ndarray, labels: Sequence[str] = LABELS) -> dict:
    """One-vs-rest AUROC and AUPRC per label, and their macro means (labels absent from y_true skipped)."""
    truth = np.asarray(y_true)
    if np.ndim(probs) != 2 or np.shape(probs)[1] != len(labels):
        raise ValueError(f"probabilities of shape {np.shape(probs)} for {len(labels)} labels ({', '.join(labels)})")
    auroc, auprc = {}, {}
    for i, name in enumerate(labels):
        positives = truth == i
        if positives.all() or not positives.any():
            continue
        auroc[name] = float(roc_auc_score(positives, probs[:, i]))
        auprc[name] = float(average_precision_score(positives, probs[:, i]))
    return {
        "auroc": auroc,
        "auprc": auprc,
        "macro_auroc": float(np.mean(list(auroc.values()))) if auroc else float("nan"),
        "macro_auprc": float(np.mean(list(auprc.values()))) if auprc else float("nan"),
    }


def evaluate_probabilities(y_true: ClassIds, probs: np.ndarray, labels: Sequence[str] = LABELS) -> dict:
    """Every metric we report for a model's probabilities on labelled data."""
    y_pred = np.asarray(probs).argmax(axis=1)
    return classification_metrics(y_true, y_pred, labels) | ranking_metrics(y_true, np.asarray(probs), labels)
