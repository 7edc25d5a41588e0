"""The bootstrap's and the retrain's inputs, built once from Settings at the edge (the CLI and bench)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.data import InputForm
from core.registry.mlflow_champion import is_tracking_server
from core.settings.config import Settings
from core.settings.policies import (
    DROPOUT,
    DataSource,
    ExportConfig,
    GateConfig,
    RetrainPolicy,
    TrainConfig,
    TrustPolicy,
)
from core.storage.paths import HomePaths
from retrain.tracking.tracker import TrackingTarget


def tracking_target(settings: Settings) -> TrackingTarget:
    """MLflow's store. A tracking server keeps artifacts in its own store; any other store (the default SQLite
    file in home, or one the host names) gets them under home, never in ./mlruns of the current directory."""
    server = is_tracking_server(settings.tracking_uri)
    return TrackingTarget(settings.tracking_uri, None if server else settings.paths.mlflow_artifacts_dir)


@dataclass(frozen=True)
class BootstrapSetup:
    """Everything a bootstrap reads: where state lives, the base data, the recipe, the export, MLflow."""

    paths: HomePaths
    data: DataSource
    train: TrainConfig
    export: ExportConfig
    tracking: TrackingTarget
    base_model: str = ""  # Hugging Face id or path; empty = the packaged all-MiniLM-L6-v2
    dropout: float = DROPOUT
    max_rows: int = 0  # cap on training rows of each input form; 0 = no cap
    # Each input form trained on, with its own row cap (0 = the shared `max_rows`): headline-only and
    # body-only copies of the base rows teach the model the inputs people paste besides whole articles.
    forms: tuple[tuple[InputForm, int], ...] = ((InputForm.FULL, 0),)
    init_from: str = ""  # a checkpoint folder to continue training from; empty = the base encoder
    database_url: str = ""  # a shared PostgreSQL feedback database; empty = the SQLite file in home

    @property
    def feedback_location(self) -> Path | str:
        """The home's feedback database (whose topic list the data must fit): the shared server's URL, else the file
        in home."""
        return self.database_url or self.paths.feedback_db

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        max_rows: int | None = None,
        max_minutes: float | None = None,
        forms: tuple[tuple[InputForm, int], ...] = ((InputForm.FULL, 0),),
        init_from: str = "",
    ) -> BootstrapSetup:
        minutes = settings.train.max_minutes if max_minutes is None else max_minutes
        return cls(
            forms=forms,
            init_from=init_from,
            paths=settings.paths,
            data=settings.data,
            train=settings.train_config(max_minutes=minutes),
            export=settings.export_config(),
            tracking=tracking_target(settings),
            base_model=settings.model.base_model,
            dropout=settings.model.dropout,
            max_rows=settings.train.max_rows if max_rows is None else max_rows,
            database_url=settings.storage.database_url,
        )


@dataclass(frozen=True)
class RetrainSetup:
    """Everything a retrain reads, besides the feedback snapshot and the champion it finds in home."""

    paths: HomePaths
    data: DataSource
    train: TrainConfig
    gate: GateConfig
    trust: TrustPolicy
    policy: RetrainPolicy
    export: ExportConfig
    tracking: TrackingTarget
    base_model: str = ""
    dropout: float = DROPOUT
    database_url: str = ""  # a shared PostgreSQL feedback database; empty = the SQLite file in home

    @property
    def feedback_location(self) -> Path | str:
        """The feedback database this retrain reads: the shared server's URL, else the file in home."""
        return self.database_url or self.paths.feedback_db

    @classmethod
    def from_settings(
        cls, settings: Settings, *, max_minutes: float | None = None, base_rows: int | None = None
    ) -> RetrainSetup:
        train = settings.retrain_train_config(**({} if max_minutes is None else {"max_minutes": max_minutes}))
        policy = settings.retrain_policy(**({} if base_rows is None else {"base_rows": base_rows}))
        return cls(
            paths=settings.paths,
            data=settings.data,
            train=train,
            gate=settings.gate,
            trust=settings.trust_policy(),
            policy=policy,
            export=settings.export_config(),
            tracking=tracking_target(settings),
            base_model=settings.model.base_model,
            dropout=settings.model.dropout,
            database_url=settings.storage.database_url,
        )
