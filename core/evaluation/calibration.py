"""Calibrated confidences, and the measures of calibration. Pure.

Per input form as core.input_forms reads a text (a pooled one for forms with too few validation rows): a
temperature fitted on validation by negative log-likelihood divides the logits, then an isotonic confidence map
moves the tempered top probability and scales the other labels to fill the rest; neither ever changes a prediction.
A version's calibration is fitted once, stored in its meta and applied by serving before anything reads a probability
(core.serving.classifier). Why a temperature and a map, per form: docs/decisions/calibration.md.
"""

from __future__ import annotations

import hashlib
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
    # Per form: the isotonic map of the tempered top probability, as breakpoints (x ascending, y non-decreasing).
    maps: Mapping[str, tuple[tuple[float, ...], tuple[float, ...]]] = field(default_factory=dict)

    def of(self, form: str) -> float:
        return float(self.by_form.get(form, self.pooled))

    @property
    def reads_forms(self) -> bool:
        """Whether calibrating a text needs its form (there is a temperature or a map per form)."""
        return bool(self.by_form or self.maps)

    def apply(self, logits: np.ndarray, forms: Sequence[str] | None) -> np.ndarray:
        """Calibrated probabilities of `logits` (rows of texts read as `forms`; None when not `reads_forms`)."""
        if forms is None:
            return with_temperature(logits, self.pooled)
        probs = with_temperature(logits, self.per_row(forms))
        forms_array = np.asarray(forms)
        for form, (x, y) in self.maps.items():
            rows = forms_array == form
            if rows.any():
                probs[rows] = remap_top(probs[rows], np.asarray(x), np.asarray(y))
        return probs

    def apply_to_texts(self, logits: np.ndarray, texts: Sequence[str]) -> np.ndarray:
        """Calibrated probabilities of the texts behind `logits`, each form read as serving reads it."""
        return self.apply(logits, [guess_form(text).value for text in texts] if self.reads_forms else None)

    def per_row(self, forms: Sequence[str]) -> np.ndarray:
        """Each row's temperature, for rows read as `forms`."""
        return np.asarray([self.of(form) for form in forms], dtype=np.float64)

    def to_meta(self) -> dict[str, Any]:
        return {"temperature": self.pooled, "temperatures": dict(self.by_form),
                "confidence_maps": {form: {"x": list(x), "y": list(y)} for form, (x, y) in self.maps.items()}}

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> Temperatures:
        """From a version's meta; a version calibrated before per-form temperatures has the pooled one only, and
        one calibrated before confidence maps has none."""
        by_form = meta.get("temperatures") or {}
        maps = {str(form): (tuple(float(v) for v in m["x"]), tuple(float(v) for v in m["y"]))
                for form, m in (meta.get("confidence_maps") or {}).items()}
        return cls(float(meta.get("temperature", 1.0)), {str(k): float(v) for k, v in by_form.items()}, maps)


def remap_top(probs: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each row's top probability moved along the map (x -> y), the other labels scaled to fill the rest. The new
    top is kept at or above what keeps it the top label, so the prediction never changes."""
    probs = np.asarray(probs, dtype=np.float64)
    top_index = probs.argmax(axis=1)
    rows = np.arange(len(probs))
    top = probs[rows, top_index]
    rest = 1.0 - top
    second = np.sort(probs, axis=1)[:, -2] if probs.shape[1] > 1 else np.zeros(len(probs))
    # With the others scaled by (1 - new) / rest, the runner-up is second * (1 - new) / rest: the new top must be
    # above second / (rest + second) to stay on top (a hair above: a tie would let argmax pick another label).
    floor = np.where(rest > 0, second / np.maximum(rest + second, 1e-12) + 1e-6, top)
    new_top = np.clip(np.interp(top, x, y), floor, 1.0)
    scale = np.where(rest > 1e-12, (1.0 - new_top) / np.maximum(rest, 1e-12), 0.0)
    out = probs * scale[:, None]
    out[rows, top_index] = new_top
    return out


def fit_confidence_map(probs: np.ndarray, labels: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The isotonic map from a top probability to the share of predictions right at it, fitted on `probs`
    (already tempered) and `labels`; as breakpoints for np.interp."""
    from sklearn.isotonic import IsotonicRegression  # fitting only (retrain.export): serving reads breakpoints

    probs, labels = np.asarray(probs, dtype=np.float64), np.asarray(labels)
    top, right = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(np.float64)
    floor = 1.0 / probs.shape[1]
    fitted = IsotonicRegression(y_min=floor, y_max=1.0, out_of_bounds="clip").fit(top, right)
    return tuple(float(v) for v in fitted.X_thresholds_), tuple(float(v) for v in fitted.y_thresholds_)


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
                     min_rows: int = MIN_FORM_ROWS, maps: bool = True) -> Temperatures:
    """The pooled temperature over every row, and one per form (`forms`: each row's form as read at serving
    time) with at least `min_rows` rows, each with its confidence map (unless `maps` is False)."""
    logits, labels, forms_array = np.asarray(logits), np.asarray(labels, dtype=np.int64), np.asarray(forms)
    fitted = [str(form) for form in sorted(set(forms)) if int((forms_array == form).sum()) >= min_rows]
    by_form = {form: fit_temperature(logits[forms_array == form], labels[forms_array == form]) for form in fitted}
    confidence_maps = {
        form: fit_confidence_map(with_temperature(logits[forms_array == form], by_form[form]),
                                 labels[forms_array == form])
        for form in fitted
    } if maps else {}
    return Temperatures(fit_temperature(logits, labels), by_form, confidence_maps)


def cross_validated(logits: np.ndarray, labels: np.ndarray, forms: Sequence[str], groups: np.ndarray,
                    folds: int = 5, min_rows: int = MIN_FORM_ROWS) -> np.ndarray:
    """Every row's calibrated probabilities from a calibration fitted without its fold (rows sharing a group, one
    text in its several forms, share a fold): how calibrated the model is on texts its calibration never saw."""
    logits, labels, forms_array = np.asarray(logits), np.asarray(labels, dtype=np.int64), np.asarray(forms)
    fold = np.asarray([int(hashlib.sha256(str(g).encode()).hexdigest()[:8], 16) % folds for g in groups])
    out = np.zeros_like(logits, dtype=np.float64)
    for k in range(folds):
        held = fold == k
        if not held.any():
            continue
        fitted = fit_temperatures(logits[~held], labels[~held], list(forms_array[~held]), min_rows)
        out[held] = fitted.apply(logits[held], list(forms_array[held]))
    return out


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


def calibration_report(probs: np.ndarray, labels: np.ndarray, calibrated: np.ndarray) -> dict[str, float]:
    """ECE and Brier score of `probs` (uncalibrated, T = 1) before and after calibration (`calibrated`)."""
    return {
        "n": len(labels),
        "ece_before": expected_calibration_error(probs, labels), "ece_after": expected_calibration_error(calibrated, labels),
        "brier_before": brier_score(probs, labels), "brier_after": brier_score(calibrated, labels),
    }
