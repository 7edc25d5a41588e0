"""Evaluation plots written as PNG files: confusion matrix, ROC and precision-recall curves."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.labels import LABELS


def _pyplot() -> Any:  # matplotlib.pyplot, imported on first use
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt

    return plt


def confusion_matrix_png(matrix: Sequence[Sequence[int]], path: Path, title: str = "Confusion matrix",
                         labels: Sequence[str] = LABELS) -> Path:
    plt = _pyplot()
    m = np.asarray(matrix)
    fig, ax = plt.subplots(figsize=(5, 4.2))
    ax.imshow(m, cmap="Blues")
    ax.set_xticks(range(len(labels)), labels, rotation=30)
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    ax.set_title(title)
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            ax.text(j, i, str(m[i, j]), ha="center", va="center", color="white" if m[i, j] > m.max() / 2 else "black")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def curves_png(y_true: Sequence[int], probs: np.ndarray, path: Path, title: str = "",
               labels: Sequence[str] = LABELS) -> Path:
    """One-vs-rest ROC (left) and precision-recall (right) curves per label."""
    from sklearn.metrics import precision_recall_curve, roc_curve

    plt = _pyplot()
    y = np.asarray(y_true)
    fig, (roc_ax, pr_ax) = plt.subplots(1, 2, figsize=(10, 4.2))
    for i, name in enumerate(labels):
        positives = y == i
        if positives.all() or not positives.any():
            continue
        fpr, tpr, _ = roc_curve(positives, probs[:, i])
        precision, recall, _ = precision_recall_curve(positives, probs[:, i])
        roc_ax.plot(fpr, tpr, label=name)
        pr_ax.plot(recall, precision, label=name)
    roc_ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=0.8)
    roc_ax.set(xlabel="false positive rate", ylabel="true positive rate", title=f"ROC {title}".strip())
    pr_ax.set(xlabel="recall", ylabel="precision", title=f"Precision-recall {title}".strip())
    roc_ax.legend(loc="lower right")
    pr_ax.legend(loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
