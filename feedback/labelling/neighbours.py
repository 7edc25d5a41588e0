"""The pool items nearest a maintainer's words or example article: TF-IDF cosine similarity over the pool's texts.

Words, not a model: a topic the champion has never seen has no place in its embeddings yet, while the words a
maintainer gives ("wildfire drought heatwave") or an article they paste find the articles that use them. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def similarities(texts: Sequence[str], query: str) -> np.ndarray:
    """Each text's cosine similarity to `query` (0 to 1) under TF-IDF weights learnt from `texts`; all 0 when the
    query shares no word with them (or either side has no words)."""
    if not texts or not query.strip():
        return np.zeros(len(texts))
    # English stop words: the served model reads English news; sublinear counts, so a word said ten times in a
    # pasted article does not outweigh the rest of it.
    from sklearn.feature_extraction.text import TfidfVectorizer  # here: scikit-learn takes ~1 s to import

    vectorizer = TfidfVectorizer(stop_words="english", sublinear_tf=True)
    try:
        matrix = vectorizer.fit_transform(texts)
    except ValueError:  # no words at all (every text empty or only stop words)
        return np.zeros(len(texts))
    wanted = vectorizer.transform([query])
    # Rows are L2-normalised, so the dot product is the cosine.
    return np.asarray((matrix @ wanted.T).toarray()).ravel()


def nearest(texts: Sequence[str], query: str, n: int) -> list[tuple[int, float]]:
    """The positions of the (at most) `n` texts most similar to `query`, with their similarity, best first; texts
    sharing no word with it are never among them."""
    scores = similarities(texts, query)
    order = sorted((i for i in range(len(texts)) if scores[i] > 0), key=lambda i: (-scores[i], i))
    return [(i, float(scores[i])) for i in order[: max(int(n), 0)]]
