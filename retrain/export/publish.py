"""From a trained PyTorch classifier to a registered model version: staging -> ONNX export -> parity check ->
int8 -> score both files -> commit (not yet champion); and its record in MLflow."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from transformers import PreTrainedTokenizerBase

from core.data import Example
from core.evaluation.calibration import Temperatures
from core.registry.versions import ModelRegistry, ModelVersion
from core.serving.classifier import OnnxClassifier
from core.serving.lexical import LexicalModel
from core.settings.policies import ExportConfig
from core.storage.paths import CHECKPOINT_DIR, FP32_FILE, INT8_FILE, VALIDATION_PROBS
from retrain.classifier.model import NewsClassifier, save_checkpoint
from retrain.export.calibration import calibrate, calibrated_probs
from retrain.export.onnx_file import export_onnx, parity_check, quantize_int8
from retrain.export.scoring import score_file, validation_key
from retrain.tracking.tracker import Tracker
from retrain.training.lexical import choose_weight

log = logging.getLogger(__name__)

_PARITY_SAMPLE = 32


@dataclass(frozen=True)
class ExportedVersion:
    version: ModelVersion
    metrics_fp32: dict[str, Any]
    metrics_int8: dict[str, Any]  # every export quantizes and scores its int8 copy
    served_probs: np.ndarray  # validation probabilities of the file that will be served


def choose_serve_file(fp32: dict[str, Any], int8: dict[str, Any] | None, tolerance_points: float) -> str:
    """Serve int8 only when it costs at most `tolerance_points` accuracy points against fp32."""
    if int8 is not None and (fp32["accuracy"] - int8["accuracy"]) * 100 <= tolerance_points:
        return INT8_FILE
    return FP32_FILE


def publish(
    model: NewsClassifier,
    tokenizer: PreTrainedTokenizerBase,
    registry: ModelRegistry,
    validation: list[Example],
    config: ExportConfig,
    meta: dict[str, Any],
    lexical: LexicalModel | None = None,
) -> ExportedVersion:
    """Export, check parity, quantize, join the lexical model (a hybrid, when one is given and its chosen weight is
    not 0), score both files, and commit a new (not yet champion) version.

    Everything is written to a staging directory first; the version appears only when complete.
    """
    staging = registry.new_staging()
    onnx_meta = {"base_model": meta.get("base_model", ""), "data": meta.get("data", "")}
    onnx_file = export_onnx(model, tokenizer, staging, config.reading, onnx_meta)
    sample = [ex.text for ex in validation[:_PARITY_SAMPLE]]
    diff = parity_check(model, tokenizer, staging, sample, config.reading)
    quantize_int8(staging / FP32_FILE)
    hybrid = join_lexical(staging, lexical, validation) if lexical is not None else None
    fp32, fp32_probs = score_file(staging, FP32_FILE, validation)
    int8, int8_probs = score_file(staging, INT8_FILE, validation)
    serve_file = choose_serve_file(fp32, int8, config.int8_tolerance)
    served = int8_probs if serve_file == INT8_FILE else fp32_probs
    temperatures, calibration, read_as = calibrate(staging, serve_file, validation, served)
    save_checkpoint(model, tokenizer, staging / CHECKPOINT_DIR)
    full_meta = meta | {
        "max_length": config.max_length,
        "tail_tokens": config.tail_tokens,
        "serve_file": serve_file,
        "parity_max_abs_diff": diff,
        "graph_optimized": onnx_file.optimized,  # False: ONNX Runtime's fusions failed, the file serves slower
        **({"lexical": hybrid} if hybrid is not None else {}),
        "validation": {
            "n": len(validation),
            "fp32": {"accuracy": fp32["accuracy"], "macro_f1": fp32["macro_f1"]},
            "int8": {"accuracy": int8["accuracy"], "macro_f1": int8["macro_f1"]},
            "confusion_matrix": (int8 if serve_file == INT8_FILE else fp32)["confusion_matrix"],
            "key": validation_key(validation),
        },
        # core.serving.classifier divides the logits by the text's form's temperature: calibrated confidences.
        **temperatures.to_meta(),
        "calibration": calibration,
        "validation_read_as": read_as,
    }
    served = calibrated_probs(temperatures, validation, served)  # as served from now on
    np.save(staging / VALIDATION_PROBS, served)  # the gate reuses these rather than scoring the set again
    version = registry.commit(staging, full_meta)
    log.info(
        "exported %s: fp32 accuracy %.4f, int8 accuracy %.4f, serving %s (parity %.1e)",
        version.version, fp32["accuracy"], int8["accuracy"], serve_file, diff,
    )
    return ExportedVersion(version, fp32, int8, served)


def join_lexical(staging: Path, lexical: LexicalModel, validation: list[Example]) -> dict[str, Any]:
    """Choose the lexical model's weight on the validation rows, against the int8 file's logits (what is served
    unless int8 costs too much), and save it beside the encoder unless the weight is 0; what was chosen, for the
    version's meta."""
    texts = [e.text for e in validation]
    encoder = OnnxClassifier(staging, onnx_file=INT8_FILE).encoder_logits(texts)
    weight = choose_weight(encoder, lexical.log_probs(texts), [e.label for e in validation])
    if weight:
        lexical.with_weight(weight).save(staging)
    return {"weight": weight, "terms": len(lexical.vocabulary), "chosen_on": len(validation)}


def log_exported(
    tracker: Tracker, exported: ExportedVersion, validation: list[Example], alias: str | None, name: str = "validation"
) -> None:
    """Metrics, plots and the ONNX artifact of an exported version, registered in MLflow."""
    v = exported.version
    served = exported.metrics_int8 if v.meta["serve_file"] == INT8_FILE else exported.metrics_fp32
    tracker.log_evaluation(name, [e.label for e in validation], exported.served_probs, served)
    for precision, metrics in (("fp32", exported.metrics_fp32), ("int8", exported.metrics_int8)):
        tracker.log_metrics(
            {f"{name}_{precision}_accuracy": metrics["accuracy"], f"{name}_{precision}_macro_f1": metrics["macro_f1"]}
        )
    temperatures = Temperatures.from_meta(v.meta)
    tracker.log_metrics({"temperature": temperatures.pooled,
                         **{f"temperature_{form}": t for form, t in temperatures.by_form.items()}})
    for form, report in (v.meta.get("calibration") or {}).items():  # expected calibration error, Brier, per form
        tracker.log_metrics({f"{name}_{form}_{measure}": value for measure, value in report.items() if measure != "n"})
    tracker.set_tags({"newsloop_version": v.version, "serve_file": v.meta["serve_file"]})
    tracker.log_model_version(v.path, v.version, alias)
