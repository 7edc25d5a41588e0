"""Every answer as a Hugging Face `datasets.Dataset` (ClassLabel features): saved to disk, parquet, or the Hub."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.labels import LABELS
from feedback.validate import KINDS, STATUSES

if TYPE_CHECKING:
    import datasets

    from feedback.store import FeedbackStore

log = logging.getLogger(__name__)

DATASET_FORMATS = ("hf", "parquet")  # a save_to_disk folder, or one parquet file


def features() -> datasets.Features:
    """The dataset's schema: labels, kinds and statuses as ClassLabel, so their names travel with the data."""
    import datasets  # here: a page or a command that never exports does not pay for importing it

    label = datasets.ClassLabel(names=list(LABELS))
    return datasets.Features({
        "id": datasets.Value("int64"),
        "created_at": datasets.Value("string"),
        "annotator": datasets.Value("string"),
        "kind": datasets.ClassLabel(names=list(KINDS)),
        "text": datasets.Value("string"),
        "label": label,  # the annotator's answer
        "predicted_label": label,  # -1 where the answer had no prediction
        "probabilities": datasets.Sequence(datasets.Value("float32"), length=len(LABELS)),
        "model_version": datasets.Value("string"),
        "status": datasets.ClassLabel(names=list(STATUSES)),
        "suspicious_reason": datasets.Value("string"),
        "verified": datasets.Value("bool"),
    })


def _row(answer: dict[str, Any]) -> dict[str, Any]:
    probabilities = answer.get("probabilities") or {}
    if isinstance(probabilities, str):
        probabilities = json.loads(probabilities)
    predicted = answer.get("predicted_label")
    return {
        "id": int(answer["id"]),
        "created_at": str(answer.get("created_at") or ""),
        "annotator": str(answer.get("annotator") or ""),
        "kind": KINDS.index(answer["kind"]),
        "text": answer["text"],
        "label": LABELS.index(answer["user_label"]),
        "predicted_label": LABELS.index(predicted) if predicted in LABELS else -1,
        "probabilities": [float(probabilities.get(name, 0.0)) for name in LABELS],
        "model_version": str(answer.get("model_version") or ""),
        "status": STATUSES.index(answer["status"]),
        "suspicious_reason": str(answer.get("suspicious_reason") or ""),
        "verified": bool(answer.get("verified")),
    }


def answers_dataset(store: FeedbackStore) -> datasets.Dataset:
    """Every answer, undone and rejected ones included (their status says so), oldest first."""
    import datasets

    rows = [_row(answer) for answer in reversed(store.answers())]
    columns = {name: [row[name] for row in rows] for name in features()}
    return datasets.Dataset.from_dict(columns, features=features())


def export_dataset(store: FeedbackStore, out: Path, fmt: str = "hf") -> int:
    """Write the answers as a `save_to_disk` folder ("hf") or one parquet file ("parquet"); returns the count."""
    if fmt not in DATASET_FORMATS:
        raise ValueError(f"dataset format must be one of {', '.join(DATASET_FORMATS)}, not {fmt!r}")
    dataset = answers_dataset(store)
    if fmt == "hf":
        dataset.save_to_disk(str(out))
    else:
        dataset.to_parquet(str(out))
    log.info("exported %d answers as a %s dataset to %s", len(dataset), fmt, out)
    return len(dataset)


def push_dataset(store: FeedbackStore, repo_id: str, token: str, *, private: bool = True) -> str:
    """Push the answers to the Hugging Face Hub as a (by default private) dataset; returns its URL."""
    if not repo_id or not token:
        raise ValueError("pushing to the Hub needs a dataset repo id and a token")
    answers_dataset(store).push_to_hub(repo_id, token=token, private=private)
    return f"https://huggingface.co/datasets/{repo_id}"
