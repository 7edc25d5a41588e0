"""TF-IDF + linear SVM on the same rows as the bootstrap, the bar a fine-tuned encoder must clear."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import make_pipeline
from sklearn.svm import LinearSVC

from core.config import Settings
from core.data import load_corpus_or_seed, read_csv
from core.metrics import classification_metrics
from retrain.pipeline import cap_rows


def tfidf_svm_baseline(settings: Settings, test_csv: Path | None = None, max_rows: int | None = None) -> dict[str, Any]:
    corpus = load_corpus_or_seed(settings.data, settings.val_fraction, settings.use_extra_data)
    rows = cap_rows(corpus.train, settings.bootstrap_max_rows if max_rows is None else max_rows, settings.seed)
    start = time.perf_counter()
    model = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2), LinearSVC(C=0.5))
    model.fit([e.text for e in rows], [e.label for e in rows])
    report: dict[str, Any] = {"data": corpus.description, "train_rows": len(rows), "fit_seconds": time.perf_counter() - start}
    splits = {"validation": corpus.validation} | ({"csv": read_csv(test_csv)} if test_csv else {})
    for name, examples in splits.items():
        metrics = classification_metrics([e.label for e in examples], model.predict([e.text for e in examples]))
        report[name] = {"n": metrics["n"], "accuracy": metrics["accuracy"], "macro_f1": metrics["macro_f1"]}
    return report
