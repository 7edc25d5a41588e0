"""The lexical half of a hybrid version (core.serving.lexical): fitted on a run's training rows, its weight beside
the encoder chosen on the validation rows the export scores."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax
from sklearn.linear_model import LogisticRegression

from core.serving.lexical import LexicalModel, vectorizer
from core.settings.policies import TrainConfig
from core.text import clean_text
from retrain.training.targets import TrainingRows

# Weights tried for the lexical model's log-probabilities beside the encoder's; 0 serves the encoder alone.
WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0)
# Fewer validation rows than this cannot choose a weight: the encoder then serves alone (on 21-24 validation rows of
# 250-article sets, a fixed half weight cost 0.7-1.2 points of held-out accuracy; docs/results/own-data.md).
MIN_CHOOSING_ROWS = 30
DEFAULT_WEIGHT = 0.0


def fit_lexical(texts: Sequence[str], labels: Sequence[int], num_labels: int, *, c: float, max_features: int,
                min_df: int = 2, sample_weight: Sequence[float] | None = None) -> LexicalModel:
    """A multinomial logistic regression on TF-IDF features of `texts` (labels index 0..num_labels-1), weight 0
    until `choose_weight` sets it. A topic without a training row gets a zero row at the mean intercept: it neither
    pushes the encoder towards that topic nor away from it more than an average one."""
    cleaned = [clean_text(t) for t in texts]
    y = np.asarray(labels, dtype=int)
    # min_df drops words seen once; on a few dozen rows that can leave nothing, so fall back to every word.
    features = vectorizer(min_df=min_df if len(cleaned) >= 50 else 1, max_features=max_features)
    x = features.fit_transform(cleaned)
    coef = np.zeros((num_labels, x.shape[1]), dtype=np.float32)
    intercept = np.zeros(num_labels, dtype=np.float32)
    present = np.unique(y)
    if present.size >= 2:
        model = LogisticRegression(C=c, max_iter=2000)
        model.fit(x, y, sample_weight=None if sample_weight is None else np.asarray(sample_weight, dtype=float))
        rows = model.coef_ if present.size > 2 else np.vstack([-model.coef_[0] / 2, model.coef_[0] / 2])
        biases = model.intercept_ if present.size > 2 else np.array([-model.intercept_[0] / 2, model.intercept_[0] / 2])
        coef[present], intercept[present] = rows, biases
        missing = np.setdiff1d(np.arange(num_labels), present)
        intercept[missing] = biases.mean()
    return LexicalModel(tuple(features.get_feature_names_out()), features.idf_.astype(np.float32), coef, intercept, 0.0)


def retrain_lexical(rows: TrainingRows, num_labels: int, config: TrainConfig, feedback_weight: float
                    ) -> LexicalModel | None:
    """A retrain's lexical model, on the rows its encoder trained toward one topic each (base rows, answers at their
    weight; not the rows that may be any of several topics), or None when the recipe serves the encoder alone."""
    if not config.lexical:
        return None
    exact = [(e, 1.0) for e in rows.base if not e.allowed]
    exact += [(e, rows.answer_weight(e, feedback_weight) * rows.feedback_repeats) for e in rows.feedback if not e.allowed]
    return fit_lexical([e.text for e, _ in exact], [e.label for e, _ in exact], num_labels, c=config.lexical_c,
                       max_features=config.lexical_terms, sample_weight=[w for _, w in exact])


def choose_weight(encoder_logits: np.ndarray, lexical_log_probs: np.ndarray, labels: Sequence[int]) -> float:
    """The weight (of WEIGHTS) whose blend, once temperature-scaled, gives the validation rows' labels the highest
    likelihood; the smaller weight on a tie, DEFAULT_WEIGHT with fewer than MIN_CHOOSING_ROWS rows."""
    y = np.asarray(labels, dtype=int)
    if y.size < MIN_CHOOSING_ROWS:
        return DEFAULT_WEIGHT
    encoder = log_softmax(np.asarray(encoder_logits, dtype=np.float64), axis=-1)
    best, best_loss = WEIGHTS[0], np.inf
    for weight in WEIGHTS:
        blended = encoder + weight * np.asarray(lexical_log_probs, dtype=np.float64)
        loss = minimize_scalar(lambda t, z=blended: _nll(z / t, y), bounds=(0.05, 20.0), method="bounded").fun
        if loss < best_loss - 1e-9:
            best, best_loss = weight, loss
    return float(best)


def _nll(logits: np.ndarray, y: np.ndarray) -> float:
    return float(-log_softmax(logits, axis=-1)[np.arange(y.size), y].mean())
