"""Out-of-fold probabilities for a label-error search: each row scored by models that never trained on it (else they
would only echo its label).

K fine-tunes would cost hours; instead two linear models, each cross-validated: one over pooled encoder embeddings,
one over TF-IDF words and word pairs, their probabilities averaged. With 3% of AG News's labels flipped, the pair
found more of them than either alone (docs/results/label-errors.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from core.labels import NUM_LABELS

FOLDS = 5


def out_of_fold_probs(texts: Sequence[str], labels: Sequence[int], embeddings: np.ndarray | None,
                      seed: int = 0, classes: int = NUM_LABELS, unlabelled: Sequence[int] = ()) -> np.ndarray:
    """Each row's probability of each of `classes` labels from models that did not see it: the mean of a
    cross-validated logistic regression over `embeddings` (when given) and one over TF-IDF features. The rows named
    in `unlabelled` (indices: a split's "B or C" rows) are not fitted; models fitted on all the other rows score them.
    Raises ValueError for too few rows."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    held = np.zeros(len(texts), dtype=bool)
    held[list(unlabelled)] = True
    fit = np.flatnonzero(~held)
    y = np.asarray(labels)[fit]
    counts = np.bincount(y, minlength=classes)
    present = counts[counts > 0]
    if len(present) < 2 or present.min() < 2:
        raise ValueError("too few rows to search: every label present needs at least 2 rows, and 2 labels at least")
    folds = StratifiedKFold(n_splits=int(min(FOLDS, present.min())), shuffle=True, random_state=seed)

    def oof(model: Any, features: Any) -> np.ndarray:
        out = np.zeros((len(texts), classes))
        columns = np.flatnonzero(counts)  # columns of labels no fitted row has stay 0
        out[np.ix_(fit, columns)] = cross_val_predict(model, _take(features, fit), y, cv=folds, method="predict_proba")
        if held.any():
            model.fit(_take(features, fit), y)
            out[np.ix_(np.flatnonzero(held), columns)] = model.predict_proba(_take(features, np.flatnonzero(held)))
        return out

    tfidf = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2),
                          LogisticRegression(C=10.0, max_iter=2000))
    parts = [oof(tfidf, list(texts))]
    if embeddings is not None:
        parts.append(oof(make_pipeline(StandardScaler(), LogisticRegression(C=0.5, max_iter=2000)), embeddings))
    return np.mean(parts, axis=0)


def _take(features: Any, rows: np.ndarray) -> Any:
    return features[rows] if isinstance(features, np.ndarray) else [features[i] for i in rows]
