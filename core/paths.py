"""Names of every file NewsLoop keeps: under its home directory, and inside one model version."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# Inside a model version directory (see core.registry).
FP32_FILE = "model.onnx"
INT8_FILE = "model.int8.onnx"
ONNX_FILES = (FP32_FILE, INT8_FILE)
TOKENIZER_FILE = "tokenizer.json"
META_FILE = "meta.json"
CHECKPOINT_DIR = "checkpoint"  # PyTorch weights for warm starts
VALIDATION_PROBS = "validation_probs.npy"  # the served file's validation probabilities, reused by the gate


@dataclass(frozen=True)
class HomePaths:
    """Every file and directory under NEWSLOOP_HOME, named once."""

    home: Path

    @property
    def models_dir(self) -> Path:
        return self.home / "models"

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
        return self.home / "secret_key"  # signs browser ids (web.identity); never served, never snapshotted

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"  # logs of jobs the admin view starts

    @property
    def mlflow_db(self) -> Path:
        return self.home / "mlflow.db"

    @property
    def mlflow_artifacts_dir(self) -> Path:
        return self.home / "mlartifacts"
