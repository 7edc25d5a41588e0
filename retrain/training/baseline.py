"""TF-IDF + linear SVM on the same rows as the bootstrap, the bar a fine-tuned encoder must clear."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.svm import LinearSVC

from core.data import DataSourceError, Example, load_corpus_or_seed, read_labelled
from core.evaluation.metrics import classification_metrics
from core.settings.policies import DataSource
from retrain.training.targets import cap_rows

NAME = "TF-IDF + linear SVM"


def fit_baseline(rows: Sequence[Example]) -> Pipeline:
    """The baseline fitted on `rows`: word and word-pair TF-IDF (sublinear, seen twice or more), a linear SVM."""
    model = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2), LinearSVC(C=0.5))
    return model.fit([e.text for e in rows], [e.label for e in rows])


def baseline_scores(rows: Sequence[Example], validation: Sequence[Example], labels: Sequence[str]) -> dict[str, Any]:
    """The baseline fitted on `rows`, scored on `validation` (labels index `labels`): what `newsloop bootstrap`
    prints beside its own model's scores on the same rows."""
    predicted = fit_baseline(rows).predict([e.text for e in validation])
    metrics = classification_metrics([e.label for e in validation], predicted, labels)
    return {"name": NAME, "n": metrics["n"], "accuracy": metrics["accuracy"], "macro_f1": metrics["macro_f1"]}


def tfidf_svm_baseline(data: DataSource, max_rows: int, seed: int, test_csv: Path | None = None) -> dict[str, Any]:
    """Fit on the bootstrap's rows (`max_rows` of them, 0 = all); score base validation and an optional CSV."""
    corpus = load_corpus_or_seed(data.source, data.val_fraction, data.use_extra)
    rows = cap_rows(corpus.train, max_rows, seed)
    start = time.perf_counter()
    model = fit_baseline(rows)
    report: dict[str, Any] = {"data": corpus.description, "train_rows": len(rows), "fit_seconds": time.perf_counter() - start}
    splits = {"validation": corpus.validation} | ({"csv": _same_topics(test_csv, corpus.labels)} if test_csv else {})
    for name, examples in splits.items():
        metrics = classification_metrics([e.label for e in examples], model.predict([e.text for e in examples]),
                                         corpus.labels)
        report[name] = {"n": metrics["n"], "accuracy": metrics["accuracy"], "macro_f1": metrics["macro_f1"]}
    return report


def _same_topics(csv: Path, labels: tuple[str, ...]) -> list[Example]:
    """The rows of `csv`, their labels indexing `labels` (the data's topics); a topic the data lacks is refused."""
    [examples], topics = read_labelled([csv], counted=False)
    unknown = [topic for topic in topics if topic not in labels]
    if unknown:
        raise DataSourceError(f"{csv.name} names {', '.join(unknown)}, not among the data's topics {', '.join(labels)}")
    return [replace(e, label=labels.index(topics[e.label])) for e in examples]
