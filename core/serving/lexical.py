"""The lexical half of a hybrid model: TF-IDF weights of the words and word pairs a text uses, read by a linear
model (retrain.training.lexical fits it), served beside the encoder with scikit-learn and numpy, no PyTorch.

A version that has one (`lexical.npz` in its folder) serves log p_encoder + weight * log p_lexical as its logits,
before calibration: the encoder reads what an article is about, the words it uses are what a newsroom's own
topics are often named by, and on a few hundred long articles each is wrong where the other is right
(docs/results/own-data.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.sparse import csr_matrix
from scipy.special import log_softmax
from sklearn.feature_extraction.text import TfidfVectorizer

from core.storage.paths import LEXICAL_FILE
from core.text import clean_text

# The features' definition, fixed: training (retrain.training.lexical) and serving build the same vectorizer from it.
NGRAMS = (1, 2)


def vectorizer(vocabulary: Sequence[str] | None = None, min_df: int = 1, max_features: int | None = None
               ) -> TfidfVectorizer:
    """The TF-IDF vectorizer both sides use: lower-cased words and word pairs, sublinear term frequency, l2 rows."""
    return TfidfVectorizer(
        ngram_range=NGRAMS, sublinear_tf=True, min_df=min_df, max_features=max_features, dtype=np.float32,
        vocabulary={term: i for i, term in enumerate(vocabulary)} if vocabulary is not None else None,
    )


@dataclass(frozen=True)
class LexicalModel:
    """A multinomial linear model over TF-IDF features, one row of `coef` per topic of the version's labels."""

    vocabulary: tuple[str, ...]
    idf: np.ndarray  # (features,)
    coef: np.ndarray  # (labels, features)
    intercept: np.ndarray  # (labels,)
    weight: float  # what its log-probabilities count beside the encoder's (0: not at all)
    _vectorizer: TfidfVectorizer = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        features = len(self.vocabulary)
        if self.idf.shape != (features,) or self.coef.ndim != 2 or self.coef.shape[1] != features:
            raise ValueError(f"a lexical model of {features} terms needs idf ({features},) and coef (labels, "
                             f"{features}); got {self.idf.shape} and {self.coef.shape}")
        if self.intercept.shape != (self.coef.shape[0],):
            raise ValueError(f"intercept has shape {self.intercept.shape}, expected ({self.coef.shape[0]},)")
        object.__setattr__(self, "_vectorizer", self._build())

    def _build(self) -> TfidfVectorizer:
        built = vectorizer(self.vocabulary)
        built.idf_ = self.idf
        return built

    @property
    def num_labels(self) -> int:
        return int(self.coef.shape[0])

    def features(self, texts: Sequence[str]) -> csr_matrix:
        """The texts' TF-IDF rows, cleaned as the encoder's input is (core.text.clean_text)."""
        return self._vectorizer.transform([clean_text(t) for t in texts])

    def log_probs(self, texts: Sequence[str]) -> np.ndarray:
        """Each text's log-probability per topic, (texts, labels)."""
        if not texts:
            return np.zeros((0, self.num_labels), dtype=np.float32)
        scores = np.asarray(self.features(texts) @ self.coef.T) + self.intercept
        return log_softmax(scores, axis=-1).astype(np.float32)

    def blend(self, encoder_logits: np.ndarray, texts: Sequence[str]) -> np.ndarray:
        """The hybrid's logits: the encoder's log-probabilities plus `weight` times this model's."""
        blended = log_softmax(np.asarray(encoder_logits, dtype=np.float64), axis=-1)
        if self.weight:
            blended = blended + self.weight * self.log_probs(texts)
        return blended.astype(np.float32)

    def with_weight(self, weight: float) -> LexicalModel:
        return LexicalModel(self.vocabulary, self.idf, self.coef, self.intercept, float(weight))

    def save(self, directory: Path) -> Path:
        path = Path(directory) / LEXICAL_FILE
        np.savez_compressed(path, vocabulary=np.asarray(self.vocabulary, dtype=str), idf=self.idf.astype(np.float32),
                            coef=self.coef.astype(np.float32), intercept=self.intercept.astype(np.float32),
                            weight=np.float32(self.weight))
        return path

    @classmethod
    def load(cls, directory: Path) -> LexicalModel | None:
        """The version's lexical model, or None when it has none (an encoder-only version)."""
        path = Path(directory) / LEXICAL_FILE
        if not path.is_file():
            return None
        with np.load(path, allow_pickle=False) as stored:
            return cls(tuple(str(t) for t in stored["vocabulary"]), stored["idf"], stored["coef"],
                       stored["intercept"], float(stored["weight"]))
