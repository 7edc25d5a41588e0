"""Every answer as a Hugging Face `datasets.Dataset` (ClassLabel features): saved to disk, parquet, or the Hub.

The label names are the taxonomy's, in its order, at the version the export was made under: the dataset's
description names that version and every row carries it (`taxonomy_version`), beside the version the answer was
given under. An answer means what it means now (`feedback.meaning`): a merged topic's answers carry the
target, and a split topic's earlier answers carry `label` -1 with their allowed topics in `allowed_labels`: a set,
not a guess.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.taxonomy import Taxonomy
from feedback.meaning import allowed_keys
from feedback.validate import KINDS, STATUSES

if TYPE_CHECKING:
    import datasets

    from feedback.store import FeedbackStore

log = logging.getLogger(__name__)

DATASET_FORMATS = ("hf", "parquet")  # a save_to_disk folder, or one parquet file


def features(taxonomy: Taxonomy) -> datasets.Features:
    """The dataset's schema: labels (the taxonomy's names), kinds and statuses as ClassLabel, so their names travel
    with the data."""
    import datasets  # here: a page or a command that never exports does not pay for importing it

    label = datasets.ClassLabel(names=list(taxonomy.names))
    return datasets.Features({
        "id": datasets.Value("int64"),
        "created_at": datasets.Value("string"),
        "annotator": datasets.Value("string"),
        "kind": datasets.ClassLabel(names=list(KINDS)),
        "text": datasets.Value("string"),
        "label": label,  # the annotator's answer; -1 where it is now a set of topics (see allowed_labels)
        "allowed_labels": datasets.Sequence(label),  # the topics the answer allows now: one, or a split's set
        "predicted_label": label,  # -1 where the answer had no prediction, or one that is no single topic now
        "probabilities": datasets.Sequence(datasets.Value("float32"), length=len(taxonomy.keys)),
        "model_probabilities": datasets.Value("string"),  # JSON: the model's own labels, as it predicted them
        "model_version": datasets.Value("string"),
        "status": datasets.ClassLabel(names=list(STATUSES)),
        "suspicious_reason": datasets.Value("string"),
        "verified": datasets.Value("bool"),
        "taxonomy_version": datasets.Value("int32"),  # whose names `label` uses: the export's, the same on every row
        "answered_under": datasets.Value("int32"),  # the taxonomy version the answer was given under
    })


def _row(answer: dict[str, Any], taxonomy: Taxonomy) -> dict[str, Any]:
    probabilities = answer.get("probabilities") or {}
    if isinstance(probabilities, str):
        probabilities = json.loads(probabilities)
    predicted = answer.get("predicted_label")
    given_under = int(answer.get("taxonomy_version") or 1)
    now = allowed_keys(str(answer["user_label"]))  # read as it means now by Answers.rows
    allowed = [taxonomy.keys.index(k) for k in now if k in taxonomy.keys]
    predicted_now = taxonomy.exact(predicted, given_under) if predicted else None
    return {
        "id": int(answer["id"]),
        "created_at": str(answer.get("created_at") or ""),
        "annotator": str(answer.get("annotator") or ""),
        "kind": KINDS.index(answer["kind"]),
        "text": answer["text"],
        "label": allowed[0] if len(allowed) == 1 == len(now) else -1,
        "allowed_labels": allowed if len(allowed) == len(now) else [],
        "predicted_label": taxonomy.keys.index(predicted_now) if predicted_now else -1,
        "probabilities": [float(probabilities.get(key, 0.0)) for key in taxonomy.keys],
        "model_probabilities": json.dumps(probabilities) if probabilities else "",
        "model_version": str(answer.get("model_version") or ""),
        "status": STATUSES.index(answer["status"]),
        "suspicious_reason": str(answer.get("suspicious_reason") or ""),
        "verified": bool(answer.get("verified")),
        "taxonomy_version": taxonomy.version,
        "answered_under": given_under,
    }


def answers_dataset(store: FeedbackStore, taxonomy: Taxonomy | None = None) -> datasets.Dataset:
    """Every answer, undone and rejected ones included (their status says so), oldest first, labelled in
    `taxonomy` (default: the store's current one)."""
    import datasets

    taxonomy = taxonomy or store.topics.current()
    rows = [_row(answer, taxonomy) for answer in reversed(store.answers.rows(taxonomy=taxonomy))]
    schema = features(taxonomy)
    columns = {name: [row[name] for row in rows] for name in schema}
    names = ", ".join(taxonomy.names)
    info = datasets.DatasetInfo(description=f"NewsLoop answers. Labels are the topics of taxonomy version "
                                            f"{taxonomy.version}: {names}.", features=schema)
    return datasets.Dataset.from_dict(columns, features=schema, info=info)


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
