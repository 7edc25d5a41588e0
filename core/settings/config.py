"""Typed settings read from `NEWSLOOP_*` environment variables.

Nothing happens at import: call `load_settings()` where settings are needed. Reading settings never
creates directories; `ensure_home()` does that at the edge that writes state.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator

from core.settings.hosting import HostingSettings, on_public_host
from core.settings.policies import (
    DROPOUT,
    SESSION_CAPACITY,
    DataSource,
    ExportConfig,
    GateConfig,
    QueuePolicy,
    RetrainPolicy,
    StoreLimits,
    TrainConfig,
    TrustPolicy,
)
from core.storage.paths import HomePaths

# Shorthands for the policies' defaults, so each number is written once (in core.settings.policies).
_T, _G, _Q, _S, _R = TrainConfig, GateConfig, QueuePolicy, StoreLimits, RetrainPolicy
_TR, _D, _E = TrustPolicy, DataSource, ExportConfig

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SEED_CSV = PROJECT_ROOT / "core" / "seed_news.csv"
# Hugging Face Spaces mounts persistent storage here when the host enables it.
SPACES_PERSISTENT_DIR = Path("/data")


class ConfigError(ValueError):
    """Settings that cannot be used, with a message naming each bad variable."""


def _default_home() -> Path:
    # Always local disk: live SQLite files and locks need a file system that locks (a bucket mount does not).
    return PROJECT_ROOT / "newsloop_home"


def _default_durable_dir() -> Path | None:
    if SPACES_PERSISTENT_DIR.is_dir() and os.access(SPACES_PERSISTENT_DIR, os.W_OK):
        return SPACES_PERSISTENT_DIR / "newsloop"
    return None


class Settings(HostingSettings):
    """Every setting of NewsLoop. Environment variable = `NEWSLOOP_` + upper-case field name."""


    # State and sources.
    home: Path = Field(default_factory=_default_home, description="Local directory holding all live state.")
    durable_dir: Path | None = Field(
        default_factory=_default_durable_dir,
        description="Durable storage that receives snapshots of the state (may not lock or rename); unset = none.",
    )
    snapshot_minutes: float = Field(10.0, gt=0.0, description="Minutes between snapshots to durable_dir.")
    data: str = Field(_D.source, description="Hugging Face dataset id, or a folder/CSV file in AG News format.")
    base_model: str = Field("", description="Hugging Face model id or path; empty = packaged all-MiniLM-L6-v2.")
    use_extra_data: bool = Field(_D.use_extra, description="Also train on extra CSVs (train_*.csv) in a data folder.")

    # Model and training recipe.
    max_length: int = Field(_T.max_length, ge=16, le=512)
    seed: int = _T.seed
    val_fraction: float = Field(_D.val_fraction, gt=0.0, lt=0.5)
    epochs: float = Field(_T.epochs, gt=0.0, le=20.0)
    batch_size: int = Field(_T.batch_size, ge=1, le=1024)
    lr_encoder: float = Field(_T.lr_encoder, gt=0.0, lt=1.0)
    lr_head: float = Field(_T.lr_head, gt=0.0, lt=1.0)
    warmup_ratio: float = Field(_T.warmup_ratio, ge=0.0, lt=1.0)
    weight_decay: float = Field(_T.weight_decay, ge=0.0, lt=1.0)
    label_smoothing: float = Field(_T.label_smoothing, ge=0.0, lt=1.0)
    dropout: float = Field(DROPOUT, ge=0.0, lt=1.0)
    bootstrap_max_rows: int = Field(0, ge=0, description="Cap on training rows for bootstrap; 0 = no cap.")
    bootstrap_max_minutes: float = Field(17.0, ge=0.0, description="Training time cap; 0 = no cap.")
    torch_threads: int = Field(0, ge=0, description="Threads for training; 0 = all cores.")
    int8_tolerance: float = Field(_E.int8_tolerance, ge=0.0, description="Serve int8 only within this many accuracy points of fp32.")

    # Serving.
    onnx_threads: int = Field(0, ge=0, description="ONNX Runtime intra-op threads; 0 = all cores.")
    max_input_chars: int = Field(20_000, ge=100, description="Longer input is refused with a message.")
    reload_interval_s: float = Field(2.0, gt=0.0, description="How often the app checks for a new champion.")
    batch_wait_ms: float = Field(3.0, ge=0.0, le=100.0, description="Wait for concurrent requests to batch; 0 = off.")
    max_batch: int = Field(16, ge=1, le=256, description="Largest shared forward pass.")
    max_batch_texts: int = Field(32, ge=1, le=256, description="Most texts one POST /api/v1/classify may send.")
    host: str = Field(default_factory=lambda: os.environ.get("GRADIO_SERVER_NAME") or "127.0.0.1")  # a Space: 0.0.0.0
    port: int = Field(default_factory=lambda: os.environ.get("GRADIO_SERVER_PORT") or 7860, ge=1, le=65535, validate_default=True)

    # Feedback and hosting: see core.settings.hosting.HostingSettings for identity, admin and proxy settings.
    classify_per_minute: int = Field(60, ge=1)
    queue_per_minute: int = Field(120, ge=1, description="Queue requests (next, answer, skip) per client address.")
    feedback_per_minute: int = Field(_S.writes_per_minute, ge=1, description="Answers per anonymous browser id a minute.")
    verified_feedback_per_minute: int = Field(_S.verified_writes_per_minute, ge=1, description="Answers per signed-in account a minute.")
    address_feedback_per_minute: int = Field(_S.address_writes_per_minute, ge=1, description="Answers per client address a minute.")
    max_skips: int = Field(_Q.max_skips, ge=0, description="Queue skips one annotator may make.")
    max_upload_mb: float = Field(5.0, gt=0.0, description="Largest file upload (admin pool import); only admins may upload.")
    session_capacity: int = Field(SESSION_CAPACITY, ge=10, description="Sessions whose memory is kept (least recent dropped).")
    events_per_address: int = Field(
        16, ge=1, le=256, description="Page events one client address may have queued or running at once."
    )
    new_sessions_per_minute: int = Field(
        30, ge=1, description="Page sessions (tabs, reloads) one client address may open a minute."
    )
    new_sessions_per_second: int = Field(
        8, ge=1, description="Page sessions everyone together may open a second (each costs the server ~25 ms)."
    )
    session_memory_mb: float = Field(64.0, gt=0.0, description="Memory for what sessions' answers need (prediction, queue item).")
    labels_required: int = Field(default_factory=lambda: 2 if on_public_host() else 1, ge=1, le=10)
    max_feedback_chars: int = Field(_S.max_text_chars, ge=100)
    min_checks: int = Field(
        _Q.min_checks, ge=1, le=50, description="Known-answer checks each annotator answers first, and before being judged."
    )
    check_share: float = Field(_Q.check_share, ge=0.0, le=1.0, description="Share of later queue items that are checks.")
    min_check_accuracy: float = Field(
        _TR.min_check_accuracy, ge=0.0, le=1.0, description="Annotators below this accuracy on checks are not trained on."
    )
    suspicious_confidence: float = Field(
        _S.suspicious_confidence, gt=0.25, le=1.0, description="An answer is suspicious when the model was this sure of another label."
    )

    # Retrain gate and schedule.
    gate_margin: float = Field(_G.margin, ge=0.0, lt=1.0, description="Macro-F1 the challenger must gain.")
    gate_alpha: float = Field(_G.alpha, gt=0.0, lt=1.0, description="One-sided McNemar p-value a gain must beat.")
    gate_base_margin: float = Field(_G.base_margin, gt=0.0, lt=1.0, description="Base-validation accuracy margin.")
    gate_recall_margin: float = Field(_G.recall_margin, gt=0.0, lt=1.0, description="Per-label recall margin.")
    gate_noninferiority_alpha: float = Field(_G.noninferiority_alpha, gt=0.0, lt=1.0)
    gate_target_gain: float = Field(_G.target_gain, gt=0.0, lt=1.0, description="Traffic gain to size the set for.")
    gate_power: float = Field(_G.power, gt=0.0, lt=1.0, description="Power to detect that gain.")
    gate_discordance: float = Field(_G.discordance, gt=0.0, lt=1.0, description="Assumed disagreement, until measured.")
    traffic_share: float = Field(_Q.traffic_share, ge=0.0, lt=1.0, description="Share of pool and queue that is traffic.")
    feedback_weight: float = Field(_R.feedback_weight, gt=0.0, le=100.0, description="Loss weight of a feedback row vs a base row.")
    retrain_feedback_repeats: int = Field(_R.feedback_repeats, ge=1, le=20,
                                          description="Times each feedback row is trained on per retrain epoch.")
    retrain_lr_encoder: float = Field(3e-5, gt=0.0, lt=1.0, description="Encoder learning rate of a retrain.")
    retrain_lr_head: float = Field(3e-4, gt=0.0, lt=1.0, description="Head learning rate of a retrain.")
    # Chosen by bench/tune.py (the recipe study): the low learning rates matter, distillation did not help.
    distill_weight: float = Field(
        _R.distill_weight, ge=0.0, le=1.0, description="Share of the champion's own predictions in replayed base rows' targets."
    )
    retrain_base_rows: int = Field(_R.base_rows, ge=0, description="Base rows replayed in a retrain; 0 = all.")
    retrain_epochs: float = Field(_T.epochs, gt=0.0, le=20.0)
    retrain_max_minutes: float = Field(8.0, ge=0.0, description="Training time budget of a retrain; 0 = none.")
    retrain_freeze_layers: int = Field(3, ge=0, le=48, description="Lower layers a retrain keeps fixed (why: TrainConfig).")
    retrain_nice: int = Field(10, ge=0, le=19, description="Niceness of `retrain run`/`watch` (why: core.host.cpu_share).")
    retrain_beside_serving: bool = Field(False, description="Train on one core fewer: the app's cores are shared.")
    warm_start: bool = _R.warm_start
    retrain_min_feedback: int = Field(_R.min_feedback, ge=1, description="New trusted answers before watch retrains.")
    retrain_interval_min: float = Field(0.0, ge=0.0, description="In-app retrain schedule; 0 = off.")

    mlflow_tracking_uri: str = Field("", description="Overrides MLFLOW_TRACKING_URI; empty = SQLite in home.")
    database_url: str = Field("", description="postgresql:// URL of a shared feedback database; empty = SQLite in home.")
    hub_dataset: str = Field("", description="Hub dataset repo id the admin view pushes feedback to; empty = no push.")
    hub_token: SecretStr | None = Field(None, description="Hugging Face token with write access to hub_dataset.")

    @field_validator("home", mode="before")
    @classmethod
    def _expand_home(cls, value: object) -> object:
        return Path(str(value)).expanduser() if value not in (None, "") else _default_home()

    @field_validator("durable_dir", mode="before")
    @classmethod
    def _expand_durable(cls, value: object) -> object:
        return Path(str(value)).expanduser() if value not in (None, "") else None

    @field_validator("host")
    @classmethod
    def _host_not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()

    @model_validator(mode="after")
    def _absolute_home(self) -> Settings:
        object.__setattr__(self, "home", self.home.resolve())
        if self.durable_dir is not None:
            durable = self.durable_dir.resolve()
            if durable == self.home or self.home in durable.parents or durable in self.home.parents:
                raise ValueError(f"durable_dir ({durable}) and home ({self.home}) must not contain each other")
            object.__setattr__(self, "durable_dir", durable)
        return self

    # Derived paths and policies: built here, at the edge, and handed down as small typed objects.
    @property
    def paths(self) -> HomePaths:
        return HomePaths(self.home)

    @property
    def models_dir(self) -> Path:
        return self.paths.models_dir

    @property
    def feedback_db(self) -> Path:
        return self.paths.feedback_db

    @property
    def tracking_uri(self) -> str:
        if self.mlflow_tracking_uri:
            return self.mlflow_tracking_uri
        return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{self.paths.mlflow_db}"

    @property
    def mlflow_artifacts_dir(self) -> Path:
        return self.paths.mlflow_artifacts_dir

    def train_config(self, **overrides: Any) -> TrainConfig:
        """The bootstrap's training recipe; `overrides` are TrainConfig fields (dataclasses.replace checks names)."""
        recipe = TrainConfig(
            epochs=self.epochs, batch_size=self.batch_size, lr_encoder=self.lr_encoder, lr_head=self.lr_head,
            warmup_ratio=self.warmup_ratio, weight_decay=self.weight_decay, label_smoothing=self.label_smoothing,
            max_length=self.max_length, seed=self.seed, threads=self.torch_threads, max_minutes=self.bootstrap_max_minutes,
        )
        return dataclasses.replace(recipe, **overrides)

    def retrain_train_config(self, **overrides: Any) -> TrainConfig:
        """A retrain's training recipe: the bootstrap's, at the retrain's epochs, budget and learning rates."""
        values = {
            "epochs": self.retrain_epochs,
            "max_minutes": self.retrain_max_minutes,
            "lr_encoder": self.retrain_lr_encoder,
            "lr_head": self.retrain_lr_head,
            "freeze_layers": self.retrain_freeze_layers, "eval_checks": 1,  # why: TrainConfig
        }
        return self.train_config(**(values | overrides))

    def gate_config(self) -> GateConfig:
        """Every GateConfig field that has a `gate_<field>` setting takes it; the rest keep their defaults."""
        names = (f.name for f in dataclasses.fields(GateConfig))
        return GateConfig(**{name: getattr(self, f"gate_{name}") for name in names if f"gate_{name}" in type(self).model_fields})

    def trust_policy(self) -> TrustPolicy:
        return TrustPolicy(
            labels_required=self.labels_required,
            min_checks=self.min_checks,
            min_check_accuracy=self.min_check_accuracy,
            train_on=self.train_on,
        )

    def queue_policy(self) -> QueuePolicy:
        return QueuePolicy(
            labels_required=self.labels_required,
            min_checks=self.min_checks,
            check_share=self.check_share,
            max_skips=self.max_skips,
            traffic_share=self.traffic_share,
        )

    def store_limits(self) -> StoreLimits:
        return StoreLimits(
            max_text_chars=self.max_feedback_chars,
            writes_per_minute=self.feedback_per_minute,
            verified_writes_per_minute=self.verified_feedback_per_minute,
            address_writes_per_minute=self.address_feedback_per_minute,
            suspicious_confidence=self.suspicious_confidence,
        )

    def data_source(self) -> DataSource:
        return DataSource(source=self.data, val_fraction=self.val_fraction, use_extra=self.use_extra_data)

    def export_config(self) -> ExportConfig:
        return ExportConfig(max_length=self.max_length, int8_tolerance=self.int8_tolerance)

    def retrain_policy(self, **overrides: Any) -> RetrainPolicy:
        """`overrides` are RetrainPolicy fields (dataclasses.replace checks names)."""
        policy = RetrainPolicy(
            base_rows=self.retrain_base_rows, feedback_weight=self.feedback_weight, distill_weight=self.distill_weight,
            feedback_repeats=self.retrain_feedback_repeats,
            warm_start=self.warm_start, min_feedback=self.retrain_min_feedback,
        )
        return dataclasses.replace(policy, **overrides)


_SECRETS = frozenset({"admin_password", "users", "secret_key", "hub_token", "database_url"})


def load_settings(**overrides: Any) -> Settings:
    """Read settings from the environment (overrides win, validated like the environment's strings), raising
    ConfigError with readable messages."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"]) or "settings"
            # A whole-settings error's input holds every value, secrets included: never echo it, nor a secret.
            shown = "" if not err["loc"] or field in _SECRETS else f" (got {err.get('input')!r})"
            lines.append(f"NEWSLOOP_{field.upper()}: {err['msg']}{shown}")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines)) from None


def ensure_home(settings: Settings) -> Path:
    """Create the state directory tree; called by code that is about to write state."""
    for path in (settings.home, settings.paths.models_dir):
        path.mkdir(parents=True, exist_ok=True)
    return settings.home
