"""Calibrated confidences: temperature scaling fitted on validation, and the measures of calibration. Pure.

A fine-tuned classifier's softmax is over-confident: "Sports 90%" is right less often than 90% of the time.
One temperature T divides the logits before the softmax (Guo et al., 2017): it changes no prediction (the
argmax is the same), only how sure each one says it is. T is fitted once per model version, on its validation
set in every input form, by minimising the negative log-likelihood, and stored in the version's meta; serving
applies it before anything reads a probability (core.serving.classifier).

One T for every form leaves headlines over-confident: the starter's pooled T (0.89) is fitted mostly on the
forms it reads best, and a headline needs a softer one (0.96). So a T is fitted per input form as the rule of
core.input_forms reads a text (the form is known at serving time, unlike the true one), wherever validation has
at least MIN_FORM_ROWS texts read as that form; the pooled T serves the rest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar

from core.input_forms import guess_form

ECE_BINS = 15
MIN_FORM_ROWS = 200  # validation texts read as a form before that form gets its own temperature
_T_RANGE = (0.05, 20.0)


@dataclass(frozen=True)
class Temperatures:
    """A model's temperatures: one per input form (core.input_forms.guess_form's reading of a text) where
    validation had enough of that form, and the pooled one for any other."""

    pooled: float = 1.0
    by_form: Mapping[str, float] = field(default_factory=dict)

    def of(self, form: str) -> float:
        return float(self.by_form.get(form, self.pooled))

    def per_row(self, forms: Sequence[str]) -> np.ndarray:
        """Each row's temperature, for rows read as `forms`."""
        return np.asarray([self.of(form) for form in forms], dtype=np.float64)

    def per_text(self, texts: Sequence[str]) -> np.ndarray:
        """Each text's temperature, its form read as serving reads it (core.input_forms); without temperatures
        by form, no text's form is read."""
        if not self.by_form:
            return np.full(len(texts), self.pooled, dtype=np.float64)
        return self.per_row([guess_form(text).value for text in texts])

    def to_meta(self) -> dict[str, Any]:
        return {"temperature": self.pooled, "temperatures": dict(self.by_form)}

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> Temperatures:
        """From a version's meta; a version calibrated before per-form temperatures has the pooled one only."""
        by_form = meta.get("temperatures") or {}
        return cls(float(meta.get("temperature", 1.0)), {str(k): float(v) for k, v in by_form.items()})


def log_probs(probs: np.ndarray) -> np.ndarray:
    """Log-probabilities: logits up to a per-row constant, which a softmax ignores (so a temperature applied
    to them is the temperature applied to the logits)."""
    return np.log(np.clip(np.asarray(probs, dtype=np.float64), 1e-12, 1.0))


def with_temperature(logits: np.ndarray, temperature: float | np.ndarray) -> np.ndarray:
    """softmax(logits / T), row by row; `temperature` is one T, or one per row."""
    t = np.asarray(temperature, dtype=np.float64)
    scaled = np.asarray(logits, dtype=np.float64) / (t[:, None] if t.ndim == 1 else t)
    scaled -= scaled.max(axis=1, keepdims=True)
    exp = np.exp(scaled)
    return exp / exp.sum(axis=1, keepdims=True)


def negative_log_likelihood(logits: np.ndarray, labels: np.ndarray, temperature: float) -> float:
    probs = with_temperature(logits, temperature)
    return float(-np.mean(np.log(np.clip(probs[np.arange(len(labels)), labels], 1e-12, 1.0))))


def fit_temperature(logits: np.ndarray, labels: np.ndarray) -> float:
    """The temperature that minimises the negative log-likelihood of `labels` (1.0 when there is nothing to fit)."""
    labels = np.asarray(labels, dtype=np.int64)
    if len(labels) == 0:
        return 1.0
    found = minimize_scalar(lambda log_t: negative_log_likelihood(logits, labels, float(np.exp(log_t))),
                            bounds=tuple(np.log(_T_RANGE)), method="bounded", options={"xatol": 1e-4})
    return float(np.exp(found.x))


def fit_temperatures(logits: np.ndarray, labels: np.ndarray, forms: Sequence[str],
                     min_rows: int = MIN_FORM_ROWS) -> Temperatures:
    """The pooled temperature over every row, and one per form (`forms`: each row's form as read at serving
    time) with at least `min_rows` rows."""
    logits, labels, forms_array = np.asarray(logits), np.asarray(labels, dtype=np.int64), np.asarray(forms)
    by_form = {
        str(form): fit_temperature(logits[forms_array == form], labels[forms_array == form])
        for form in sorted(set(forms)) if int((forms_array == form).sum()) >= min_rows
    }
    return Temperatures(fit_temperature(logits, labels), by_form)


def expected_calibration_error(probs: np.ndarray, labels: np.ndarray, bins: int = ECE_BINS) -> float:
    """|accuracy - confidence| of the top probability, averaged over `bins` equal-width bins by their share of rows."""
    probs, labels = np.asarray(probs), np.asarray(labels)
    if len(labels) == 0:
        return 0.0
    confidence, correct = probs.max(axis=1), probs.argmax(axis=1) == labels
    which = np.minimum((confidence * bins).astype(int), bins - 1)
    error = 0.0
    for b in range(bins):
        inside = which == b
        if inside.any():
            error += inside.mean() * abs(correct[inside].mean() - confidence[inside].mean())
    return float(error)


def brier_score(probs: np.ndarray, labels: np.ndarray) -> float:
    """Mean squared distance between the probabilities and the one-hot truth (summed over labels)."""
    probs, labels = np.asarray(probs, dtype=np.float64), np.asarray(labels)
    if len(labels) == 0:
        return 0.0
    truth = np.zeros_like(probs)
    truth[np.arange(len(labels)), labels] = 1.0
    return float(np.mean(np.sum((probs - truth) ** 2, axis=1)))


def reliability(probs: np.ndarray, labels: np.ndarray, bins: int = ECE_BINS) -> list[dict[str, float]]:
    """Per confidence bin with rows in it: its range, mean confidence, accuracy and row count (a reliability
    diagram's points)."""
    probs, labels = np.asarray(probs), np.asarray(labels)
    confidence, correct = probs.max(axis=1), probs.argmax(axis=1) == labels
    which = np.minimum((confidence * bins).astype(int), bins - 1)
    return [{"low": b / bins, "high": (b + 1) / bins, "confidence": float(confidence[which == b].mean()),
             "accuracy": float(correct[which == b].mean()), "n": int((which == b).sum())}
            for b in range(bins) if (which == b).any()]


def calibration_report(probs: np.ndarray, labels: np.ndarray, temperature: float | np.ndarray) -> dict[str, float]:
    """ECE and Brier score of `probs` (uncalibrated, T = 1) before and after `temperature` (one, or one per row)."""
    calibrated = with_temperature(log_probs(probs), temperature)
    return {
        "n": len(labels),
        "ece_before": expected_calibration_error(probs, labels), "ece_after": expected_calibration_error(calibrated, labels),
        "brier_before": brier_score(probs, labels), "brier_after": brier_score(calibrated, labels),
    }
