"""Names of every file NewsLoop keeps: under its home directory, and inside one model version."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# Inside a model version directory (see core.registry.versions).
FP32_FILE = "model.onnx"
INT8_FILE = "model.int8.onnx"
ONNX_FILES = (FP32_FILE, INT8_FILE)
TOKENIZER_FILE = "tokenizer.json"
LEXICAL_FILE = "lexical.npz"  # a hybrid version's lexical half (core.serving.lexical)
META_FILE = "meta.json"
CHECKPOINT_DIR = "checkpoint"  # PyTorch weights for warm starts
VALIDATION_PROBS = "validation_probs.npy"  # the served file's validation probabilities, reused by the gate

# Inside the registry's directory (HomePaths.models_dir; see core.registry.versions).
REGISTRY_RECORD = "registry.json"  # which version is champion, and the history of changes
REGISTRY_LOCK = "registry.lock"
VERSIONS_DIR = "versions"  # one directory per committed model version
STAGING_DIR = "staging"  # versions being written, not yet committed


@dataclass(frozen=True)
class HomePaths:
    """Every file and directory under NEWSLOOP_HOME, named once."""

    home: Path

    @property
    def models_dir(self) -> Path:
        return self.home / "models"

    @property
    def registry_record(self) -> Path:
        return self.models_dir / REGISTRY_RECORD

    @property
    def versions_dir(self) -> Path:
        return self.models_dir / VERSIONS_DIR

    @property
    def feedback_db(self) -> Path:
        return self.home / "feedback.db"

    @property
    def backups_dir(self) -> Path:
        return self.home / "backups"

    @property
    def retrain_lock(self) -> Path:
        return self.home / "retrain.lock"

    @property
    def retrain_state(self) -> Path:
        return self.home / "retrain_state.json"

    @property
    def retrain_progress(self) -> Path:
        return self.home / "retrain_progress.json"

    @property
    def secret_key(self) -> Path:
        return self.home / "secret_key"  # signs browser ids (web.server.identity); never served, never snapshotted

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"  # logs of jobs the admin view starts

    @property
    def embeddings_cache(self) -> Path:
        return self.home / "cache" / "embeddings"  # pooled embeddings of the label-error search, by model and data

    @property
    def mlflow_db(self) -> Path:
        return self.home / "mlflow.db"

    @property
    def mlflow_artifacts_dir(self) -> Path:
        return self.home / "mlartifacts"
