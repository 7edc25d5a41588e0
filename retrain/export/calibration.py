"""A version's calibration, fitted at export on its validation rows in every input form: per form a temperature and a
confidence map, each form's calibration error before and after, and what its served traffic is watched against."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from core.data import Example, InputForm, as_form, in_form
from core.evaluation.calibration import (
    Temperatures,
    calibration_report,
    cross_validated,
    expected_calibration_error,
    fit_temperatures,
    log_probs,
    with_temperature,
)
from core.evaluation.estimate import confidence_histogram
from core.input_forms import guess_form
from retrain.export.scoring import score_file


def calibrate(
    model_dir: Path, serve_file: str, validation: list[Example], full_probs: np.ndarray, scorer: Any = None
) -> tuple[Temperatures, dict[str, dict[str, float]], dict[str, dict[str, Any]]]:
    """The calibration fitted on the served file's uncalibrated validation probabilities in every input form
    together (people paste headlines, descriptions and whole articles): a temperature and a confidence map per
    form as serving reads a text (core.input_forms), and the pooled temperature
    (core.evaluation.calibration.fit_temperatures); and each true form's ECE and Brier score before and after it,
    with the ECE of a pooled temperature, of temperatures alone, and cross-validated (a calibration fitted on four
    fifths of the rows, measured on the fifth it never saw); and, per form as serving reads it, what the served
    traffic of that form is watched against (core.evaluation.monitor.Baseline): its validation texts' accuracy
    and histogram of calibrated top probabilities. `scorer`: an OnnxClassifier at temperature 1 (default: the
    file)."""
    by_form: dict[str, tuple[list[Example], np.ndarray, list[int]]] = {
        InputForm.FULL.value: (validation, full_probs, list(range(len(validation))))}
    for form in (InputForm.TITLE, InputForm.BODY):
        rows = [i for i, e in enumerate(validation) if as_form(e, form) is not None]
        examples = in_form(validation, form)
        if examples:
            probs = (scorer.proba_in_label_order([e.text for e in examples]) if scorer is not None
                     else score_file(model_dir, serve_file, examples)[1])
            by_form[form.value] = (examples, probs, rows)
    labels = np.concatenate([_labels(examples) for examples, _, _ in by_form.values()])
    read_as = [guess_form(e.text).value for examples, _, _ in by_form.values() for e in examples]
    logits = np.concatenate([log_probs(p) for _, p, _ in by_form.values()])
    groups = np.concatenate([np.asarray(rows) for _, _, rows in by_form.values()])
    temperatures = fit_temperatures(logits, labels, read_as)
    served = temperatures.apply(logits, read_as)
    tempered = fit_temperatures(logits, labels, read_as, maps=False).apply(logits, read_as)
    unseen = cross_validated(logits, labels, read_as, groups)
    read_as_array = np.asarray(read_as)
    baseline = {
        form: {"n": int(inside.sum()), "accuracy": float(np.mean(served[inside].argmax(axis=1) == labels[inside])),
               "confidence_counts": [int(c) for c in confidence_histogram(served[inside].max(axis=1))]}
        for form in sorted(set(read_as)) if (inside := read_as_array == form).any()
    }
    report: dict[str, dict[str, float]] = {}
    start = 0
    for form_name, (examples, p, _) in by_form.items():
        part, y = slice(start, start + len(examples)), _labels(examples)
        start += len(examples)
        report[form_name] = calibration_report(p, y, served[part]) | {
            "ece_pooled": expected_calibration_error(with_temperature(log_probs(p), temperatures.pooled), y),
            "ece_temperatures": expected_calibration_error(tempered[part], y),
            "ece_cross_validated": expected_calibration_error(unseen[part], y),
        }
    return temperatures, report, baseline


def calibrated_probs(temperatures: Temperatures, examples: list[Example], probs: np.ndarray) -> np.ndarray:
    """`probs` (uncalibrated, of `examples`) as served: calibrated by each text's form."""
    return temperatures.apply_to_texts(log_probs(probs), [e.text for e in examples]).astype(np.float32)


def _labels(examples: list[Example]) -> np.ndarray:
    return np.asarray([e.label for e in examples], dtype=np.int64)
