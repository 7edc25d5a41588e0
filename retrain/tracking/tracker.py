"""MLflow at the edge: one run per training or retrain, the parameters it logs, the registered model and its aliases.

Tracking defaults to a SQLite store inside NEWSLOOP_HOME (artifacts beside it); MLFLOW_TRACKING_URI
or NEWSLOOP_MLFLOW_TRACKING_URI override it.
"""

from __future__ import annotations

import json
import logging
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.registry.mlflow_champion import HISTORY_TAG, REGISTERED_MODEL, VERSION_TAG, ensure_registered_model
from core.registry.versions import ModelRegistry
from core.settings.policies import TrainConfig
from core.storage.paths import CHECKPOINT_DIR, LEXICAL_FILE, META_FILE, ONNX_FILES, TOKENIZER_FILE
from core.taxonomy import Taxonomy

log = logging.getLogger(__name__)

TRAINING_EXPERIMENT = "newsloop-training"
RETRAIN_EXPERIMENT = "newsloop-retrain"


@dataclass(frozen=True)
class TrackingTarget:
    """Where runs go. `artifacts_dir` is set only for the default SQLite store inside home, which would
    otherwise put artifacts in ./mlruns under the current directory."""

    uri: str
    artifacts_dir: Path | None = None


def _mlflow(tracking_uri: str) -> Any:  # the mlflow module, imported on first use
    import mlflow

    mlflow.set_tracking_uri(tracking_uri)
    return mlflow


def train_params(config: TrainConfig, base_model: str, dropout: float, **rows: int) -> dict[str, Any]:
    """The parameters every training run logs."""
    return {
        "base_model": base_model,
        "lr_encoder": config.lr_encoder,
        "lr_head": config.lr_head,
        "epochs": config.epochs,
        "min_steps": config.min_steps,
        "lexical": config.lexical,
        "batch_size": config.batch_size,
        "max_length": config.max_length,
        "tail_tokens": config.reading.tail,
        "label_smoothing": config.label_smoothing,
        "dropout": dropout,
        "warmup_ratio": config.warmup_ratio,
        "weight_decay": config.weight_decay,
        "seed": config.seed,
        "max_minutes": config.max_minutes,
        "bucket_by_length": config.bucket_by_length,
    } | {f"rows_{k}": v for k, v in rows.items()}


def topic_list(taxonomy: Taxonomy) -> list[dict[str, str]]:
    """The topics a model is trained on, in its output order: key, name and description (MLflow's topics.json,
    the version's meta)."""
    return [{"key": t.key, "name": t.name, "description": t.description} for t in taxonomy.topics]


def flatten_metrics(metrics: dict[str, Any], prefix: str) -> dict[str, float]:
    """accuracy, macro-F1, per-label precision/recall/F1, AUROC/AUPRC, as flat MLflow metric names."""
    out: dict[str, float] = {}
    for key in ("accuracy", "macro_f1", "macro_auroc", "macro_auprc"):
        if key in metrics and not math.isnan(float(metrics[key])):
            out[f"{prefix}{key}"] = float(metrics[key])
    for label, values in metrics.get("per_label", {}).items():
        safe = label.replace("/", "_").lower()
        for key in ("precision", "recall", "f1"):
            out[f"{prefix}{safe}_{key}"] = float(values[key])
    for kind in ("auroc", "auprc"):
        for label, value in metrics.get(kind, {}).items():
            out[f"{prefix}{label.replace('/', '_').lower()}_{kind}"] = float(value)
    return out


class Tracker:
    """One MLflow run. Used as a context manager; `enabled=False` makes every call a no-op."""

    def __init__(self, target: TrackingTarget, experiment: str, run_name: str, *, enabled: bool = True) -> None:
        self.target = target
        self.experiment = experiment
        self.run_name = run_name
        self.enabled = enabled
        self.run_id: str | None = None
        self._mlflow: Any = None

    def __enter__(self) -> Tracker:
        if not self.enabled:
            return self
        mlflow = _mlflow(self.target.uri)
        self._mlflow = mlflow
        if mlflow.get_experiment_by_name(self.experiment) is None:
            artifact_location = None
            if self.target.artifacts_dir is not None:
                self.target.artifacts_dir.mkdir(parents=True, exist_ok=True)
                artifact_location = self.target.artifacts_dir.as_uri()
            mlflow.create_experiment(self.experiment, artifact_location=artifact_location)
        mlflow.set_experiment(self.experiment)
        self.run_id = mlflow.start_run(run_name=self.run_name).info.run_id
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:  # only whether the block raised matters
        if self._mlflow is not None:
            self._mlflow.end_run(status="FAILED" if exc_type else "FINISHED")

    def log_params(self, params: dict[str, Any]) -> None:
        if self._mlflow:
            self._mlflow.log_params({k: str(v)[:500] for k, v in params.items()})

    def log_step(self, metrics: dict[str, float], step: int) -> None:
        if self._mlflow:
            self._mlflow.log_metrics({k: float(v) for k, v in metrics.items()}, step=step)

    def log_metrics(self, metrics: dict[str, float]) -> None:
        if self._mlflow and metrics:
            self._mlflow.log_metrics(metrics)

    def set_tags(self, tags: dict[str, Any]) -> None:
        if self._mlflow:
            self._mlflow.set_tags({k: str(v)[:5000] for k, v in tags.items()})

    def log_dict(self, payload: dict[str, Any], name: str) -> None:
        if self._mlflow:
            self._mlflow.log_dict(json.loads(json.dumps(payload, default=str)), name)

    def log_topics(self, taxonomy: Taxonomy) -> None:
        """The topics the run trains toward, in the model's output order, and their taxonomy's version."""
        self.log_dict({"version": taxonomy.version, "topics": topic_list(taxonomy)}, "topics.json")

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        if self._mlflow:
            self._mlflow.log_artifact(str(path), artifact_path)

    def log_evaluation(self, name: str, y_true: list[int], probs: Any, metrics: dict[str, Any]) -> None:
        """Final metrics, metrics JSON, confusion matrix and ROC/PR curves of one model on one set."""
        if not self._mlflow:
            return
        from retrain.tracking.plots import confusion_matrix_png, curves_png

        self.log_metrics(flatten_metrics(metrics, f"{name}_"))
        self.log_dict(metrics, f"metrics/{name}.json")
        with tempfile.TemporaryDirectory() as tmp:
            labels = list(metrics.get("per_label") or ()) or None  # the model's topics, in its output order
            cm = confusion_matrix_png(metrics["confusion_matrix"], Path(tmp) / f"{name}_confusion.png", name,
                                      *([labels] if labels else []))
            curves = curves_png(y_true, probs, Path(tmp) / f"{name}_curves.png", name, *([labels] if labels else []))
            self.log_artifact(cm, "plots")
            self.log_artifact(curves, "plots")

    def log_model_version(self, model_dir: Path, version: str, alias: str | None = None) -> str | None:
        """Log a version's ONNX file(s) and tokenizer, register them, and optionally set an alias."""
        if not self._mlflow or self.run_id is None:
            return None
        for name in (*ONNX_FILES, TOKENIZER_FILE, LEXICAL_FILE, META_FILE):
            if (model_dir / name).is_file():
                self.log_artifact(model_dir / name, "model")
        if (model_dir / CHECKPOINT_DIR).is_dir():  # so a retrain on any machine can warm-start from this version
            self._mlflow.log_artifacts(str(model_dir / CHECKPOINT_DIR), f"model/{CHECKPOINT_DIR}")
        client = self._mlflow.MlflowClient()
        ensure_registered_model(client)
        source = f"{self._mlflow.get_artifact_uri('model')}"
        mv = client.create_model_version(REGISTERED_MODEL, source, run_id=self.run_id, tags={VERSION_TAG: version})
        if alias:
            client.set_registered_model_alias(REGISTERED_MODEL, alias, mv.version)
        return str(mv.version)


def sync_aliases(tracking_uri: str, registry: ModelRegistry, challenger: str | None = None) -> dict[str, str]:
    """Point the MLflow `champion` (and `challenger`) aliases at the versions the project registry names."""
    mlflow = _mlflow(tracking_uri)
    client = mlflow.MlflowClient()
    ensure_registered_model(client)
    by_project_version = {
        mv.tags.get(VERSION_TAG): mv.version
        for mv in client.search_model_versions(f"name='{REGISTERED_MODEL}'")
        if mv.tags.get(VERSION_TAG)
    }
    set_to: dict[str, str] = {}
    record = registry.read_record()
    champion = record["champion"]
    # The champions before it, so a rollback on any machine restores the same one (see core.registry.mlflow_champion).
    history = [v for v in record["history"] if v in by_project_version]
    client.set_registered_model_tag(REGISTERED_MODEL, HISTORY_TAG, json.dumps(history))
    for alias, project_version in (("champion", champion), ("challenger", challenger)):
        if project_version and project_version in by_project_version:
            client.set_registered_model_alias(REGISTERED_MODEL, alias, by_project_version[project_version])
            set_to[alias] = project_version
    return set_to
