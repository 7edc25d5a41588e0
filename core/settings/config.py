"""Typed settings: one pydantic-settings model whose sections are the policies each stage takes.

Each setting is read from its `NEWSLOOP_*` environment variable (names never change: see core.settings.fields),
then from the optional file named by NEWSLOOP_ENV_FILE, then falls back to its default. Nothing happens at import:
call `load_settings()` where settings are needed. Reading settings never creates directories; `ensure_home()` does
that at the edge that writes state.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from core.settings.fields import Section, field_spec, internal, setting
from core.settings.hosting import HostingSection
from core.settings.policies import (
    DROPOUT,
    MAX_ARTICLE_CHARS,
    SESSION_CAPACITY,
    DataSource,
    ExportConfig,
    GateConfig,
    LabelErrorPolicy,
    MonitorPolicy,
    QueuePolicy,
    RetrainPolicy,
    StoreLimits,
    TrainConfig,
    TrustPolicy,
)
from core.storage.paths import HomePaths

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SEED_CSV = PROJECT_ROOT / "core" / "seed_news.csv"
# Hugging Face Spaces mounts persistent storage here when the host enables it.
SPACES_PERSISTENT_DIR = Path("/data")
PREFIX = "NEWSLOOP_"
ENV_FILE = "NEWSLOOP_ENV_FILE"  # names an optional .env-style file, read below the environment
MASK = "********"


class ConfigError(ValueError):
    """Settings that cannot be used, with a message naming each bad variable."""


def _default_home() -> Path:
    # Always local disk: live SQLite files and locks need a file system that locks (a bucket mount does not).
    return PROJECT_ROOT / "newsloop_home"


def _default_durable_dir() -> Path | None:
    if SPACES_PERSISTENT_DIR.is_dir() and os.access(SPACES_PERSISTENT_DIR, os.W_OK):
        return SPACES_PERSISTENT_DIR / "newsloop"
    return None


class StorageSection(Section):
    """Where state lives: the local home, durable snapshots, the feedback database, MLflow and the Hub."""

    home: Path = setting(
        default_factory=_default_home, default_text="<project>/newsloop_home",
        description="Local directory holding all live state.",
    )
    durable_dir: Path | None = setting(
        default_factory=_default_durable_dir, default_text="/data/newsloop where /data is writable (a Space's storage), else unset",
        description="Durable storage that receives snapshots of the state (may not lock or rename); unset = none.",
    )
    snapshot_minutes: float = setting(10.0, gt=0.0, description="Minutes between snapshots to durable_dir.")
    database_url: str = setting(
        "", secret=True, description="postgresql:// URL of a shared feedback database; empty = SQLite in home."
    )
    mlflow_tracking_uri: str = setting(
        "", fallback=("MLFLOW_TRACKING_URI",), description="MLflow tracking URI; empty = SQLite in home."
    )
    hub_dataset: str = setting("", description="Hub dataset repo id the admin view pushes feedback to; empty = no push.")
    hub_token: SecretStr | None = setting(None, description="Hugging Face token with write access to hub_dataset.")

    @field_validator("home", mode="before")
    @classmethod
    def _expand_home(cls, value: object) -> object:
        return Path(str(value)).expanduser().resolve() if value not in (None, "") else _default_home().resolve()

    @field_validator("durable_dir", mode="before")
    @classmethod
    def _expand_durable(cls, value: object) -> object:
        return Path(str(value)).expanduser().resolve() if value not in (None, "") else None

    @model_validator(mode="after")
    def _apart_from_home(self) -> StorageSection:
        durable, home = self.durable_dir, self.home
        if durable is not None and (durable == home or home in durable.parents or durable in home.parents):
            raise ValueError(f"durable_dir ({durable}) and home ({home}) must not contain each other")
        return self


class ModelSection(ExportConfig):
    """What is fine-tuned, and how a trained model is exported for serving."""

    base_model: str = setting("", description="Hugging Face model id or path; empty = packaged all-MiniLM-L6-v2.")
    dropout: float = setting(DROPOUT, ge=0.0, lt=1.0, description="Dropout of the classifier head.")


class TrainSection(TrainConfig):
    """The bootstrap's training recipe (TrainConfig) and how much base data it trains on."""

    max_rows: int = setting(
        0, ge=0, env="bootstrap_max_rows", description="Cap on training rows for bootstrap; 0 = no cap."
    )


class RetrainSection(RetrainPolicy):
    """A retrain: its own choices (RetrainPolicy), the recipe fields that replace the train section's for a retrain
    (same names as in TrainConfig), and how and when it runs."""

    # A retrain's own pace, not the bootstrap's: it starts from a trained champion, and its feedback rows are repeated
    # (RetrainPolicy.feedback_repeats). Its batch, epochs and step floor are those bench/tune.py chose.
    epochs: float = setting(1.0, gt=0.0, le=20.0, description="Training epochs of a retrain.")
    batch_size: int = setting(32, ge=1, le=1024, description="Texts per training step of a retrain.")
    min_steps: int = setting(0, ge=0, le=100_000, description="The fewest optimizer steps a retrain takes (0 = its epochs alone).")
    lr_encoder: float = setting(3e-5, gt=0.0, lt=1.0, description="Encoder learning rate of a retrain.")
    lr_head: float = setting(3e-4, gt=0.0, lt=1.0, description="Head learning rate of a retrain.")
    max_minutes: float = setting(8.0, ge=0.0, description="Training time budget of a retrain; 0 = none.")
    freeze_layers: int = setting(3, ge=0, le=48, description="Lower layers a retrain keeps fixed (why: TrainConfig).")
    eval_checks: int = internal(1, ge=1)  # why: TrainConfig
    nice: int = setting(10, ge=0, le=19, description="Niceness of `retrain run`/`watch` (why: core.host.cpu_share).")
    beside_serving: bool = setting(False, description="Train on one core fewer: the app's cores are shared.")
    interval_min: float = setting(0.0, ge=0.0, description="In-app retrain schedule in minutes; 0 = off.")


class ServingSection(Section):
    """The served model and the web server."""

    onnx_threads: int = setting(0, ge=0, description="ONNX Runtime intra-op threads; 0 = all cores.")
    max_input_chars: int = setting(
        MAX_ARTICLE_CHARS, ge=100, fallback=("NEWSLOOP_MAX_FEEDBACK_CHARS",),
        description="The longest article: Classify, the API, answers, the queue and imports take it; longer is "
        "refused with a message (NEWSLOOP_MAX_FEEDBACK_CHARS, the store's former limit, is read when this is unset).",
    )
    reload_interval_s: float = setting(2.0, gt=0.0, description="How often the app checks for a new champion.")
    pool_scoring_s: float = setting(
        5.0, gt=0.0, description="How often the app looks for pool items its champion has not scored, and scores them "
        "in the background (after an import, an upload or a new champion).",
    )
    batch_wait_ms: float = setting(
        3.0, ge=0.0, le=100.0, description="Wait for concurrent requests to batch; 0 = off."
    )
    max_batch: int = setting(16, ge=1, le=256, description="Largest shared forward pass.")
    max_batch_texts: int = setting(32, ge=1, le=256, description="Most texts one POST /api/v1/classify may send.")
    host: str = setting(
        "127.0.0.1", fallback=("GRADIO_SERVER_NAME",), description="Address the server listens on (a Space: 0.0.0.0)."
    )
    port: int = setting(7860, ge=1, le=65535, fallback=("GRADIO_SERVER_PORT",), description="Port the server listens on.")
    metrics: bool = setting(
        True, description="Serve GET /metrics (Prometheus text format: requests, errors, answers, estimated accuracy)."
    )
    metrics_token: SecretStr | None = setting(
        None, description="Bearer token GET /metrics then requires; on a public host (a Space) it is refused without one.",
    )

    @field_validator("host")
    @classmethod
    def _host_not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()


class LimitsSection(Section):
    """What one client, and everyone together, may ask of the server."""

    classify_per_minute: int = setting(60, ge=1, description="Classify requests per client address a minute.")
    queue_per_minute: int = setting(
        300, ge=1, description="Queue requests (next, answer, skip, undo) per client address a minute."
    )
    max_upload_mb: float = setting(
        5.0, gt=0.0, description="Largest file upload (admin pool import); only admins may upload."
    )
    session_capacity: int = setting(
        SESSION_CAPACITY, ge=10, description="Sessions whose memory is kept (least recent dropped)."
    )
    events_per_address: int = setting(
        16, ge=1, le=256, description="Page events one client address may have queued or running at once."
    )
    new_sessions_per_minute: int = setting(
        30, ge=1, description="Page sessions (tabs, reloads) one client address may open a minute."
    )
    new_sessions_per_second: int = setting(
        8, ge=1, description="Page sessions everyone together may open a second (each costs the server ~25 ms)."
    )
    # Every event's body is read and parsed, whatever it is for: its bytes are what one address costs the server.
    # A labeller classifying 60 texts of 20,000 characters a minute, each answered, sends under 5 MB.
    event_data_mb_per_minute: float = setting(
        16.0, gt=0.0, description="Event data one client address may send the page a minute (beyond it: refused).",
    )
    session_memory_mb: float = setting(
        64.0, gt=0.0, description="Memory for what sessions' answers need (prediction, queue item)."
    )


def _section(cls: type[Section], description: str, prefix: str = "") -> Any:
    return Field(default_factory=cls, description=description, json_schema_extra={"newsloop": {"prefix": prefix}})


class Settings(BaseSettings):
    """Every setting of NewsLoop, by section. `settings.<section>.<field>`; the environment variable of each is
    listed by `setting_fields()` (and in docs/reference/configuration.md)."""

    model_config = SettingsConfigDict(frozen=True, extra="forbid")

    storage: StorageSection = _section(StorageSection, "Where state lives.")
    data: DataSource = _section(DataSource, "Base data.")
    model: ModelSection = _section(ModelSection, "The model and its export.")
    train: TrainSection = _section(TrainSection, "The bootstrap's training recipe.")
    retrain: RetrainSection = _section(RetrainSection, "Retraining on feedback.", prefix="retrain_")
    gate: GateConfig = _section(GateConfig, "The promotion gate.", prefix="gate_")
    trust: TrustPolicy = _section(TrustPolicy, "Whose answers train.")
    queue: QueuePolicy = _section(QueuePolicy, "The labelling queue.")
    answers: StoreLimits = _section(StoreLimits, "What the feedback store accepts.")
    serving: ServingSection = _section(ServingSection, "Serving.")
    monitor: MonitorPolicy = _section(MonitorPolicy, "Watching served traffic.", prefix="monitor_")
    label_errors: LabelErrorPolicy = _section(LabelErrorPolicy, "The label-error search.", prefix="label_errors_")
    limits: LimitsSection = _section(LimitsSection, "Request limits.")
    hosting: HostingSection = _section(HostingSection, "Identity, admins and proxies.")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Keyword arguments (nested, by section) win; then the flat NEWSLOOP_* names, read by one mapping.
        return init_settings, _FlatSource(settings_cls)

    # Derived paths: built here, at the edge, and handed down as small typed objects. Every file under home is
    # read through `paths` (e.g. `settings.paths.models_dir`), never a copy of it here.
    @property
    def paths(self) -> HomePaths:
        return HomePaths(self.storage.home)

    @property
    def tracking_uri(self) -> str:
        return self.storage.mlflow_tracking_uri or f"sqlite:///{self.paths.mlflow_db}"

    def with_(self, **overrides: Any) -> Settings:
        """A validated copy with `overrides` by flat name (an environment variable's name without NEWSLOOP_,
        lower-case, e.g. torch_threads=2)."""
        return _validated(_apply_flat(self.model_dump(), overrides))

    # The policies whose values come from more than one section.
    def train_config(self, **overrides: Any) -> TrainConfig:
        """The bootstrap's training recipe; `overrides` are TrainConfig fields (validated)."""
        return TrainConfig.model_validate(self.train.model_dump(include=set(TrainConfig.model_fields)) | overrides)

    def retrain_train_config(self, **overrides: Any) -> TrainConfig:
        """A retrain's training recipe: the bootstrap's, with the retrain section's recipe fields in place."""
        recipe = self.retrain.model_dump(include=set(TrainConfig.model_fields))
        return self.train_config(**(recipe | overrides))

    def retrain_policy(self, **overrides: Any) -> RetrainPolicy:
        """`overrides` are RetrainPolicy fields (validated)."""
        return RetrainPolicy.model_validate(self.retrain.model_dump(include=set(RetrainPolicy.model_fields)) | overrides)

    def trust_policy(self) -> TrustPolicy:
        """Whose answers train, with the queue's labels and checks (one setting each, used by both)."""
        return self.trust.with_(labels_required=self.queue.labels_required, min_checks=self.queue.min_checks)

    def store_limits(self) -> StoreLimits:
        """What the feedback store accepts, with the article length Classify takes (one setting for both)."""
        return self.answers.with_(max_text_chars=self.serving.max_input_chars)

    def export_config(self) -> ExportConfig:
        reading = self.train_config().reading
        return ExportConfig(max_length=reading.max_length, tail_tokens=reading.tail,
                            int8_tolerance=self.model.int8_tolerance)


@dataclass(frozen=True)
class SettingField:
    """One setting: where it lives in Settings and which environment variables set it."""

    env: str  # NEWSLOOP_...
    section: str
    field: str
    info: FieldInfo
    fallback: tuple[str, ...]  # other variables read when env is unset (and non-empty)
    on_space: Any  # its default on a Hugging Face Space, or None
    default_text: str | None  # the default in words, where a factory computes it
    secret: bool

    @property
    def flat(self) -> str:
        """The name `load_settings` takes: the variable's without NEWSLOOP_, lower-case."""
        return self.env.removeprefix(PREFIX).lower()


def setting_fields(settings_cls: type[BaseSettings] | None = None) -> tuple[SettingField, ...]:
    """Every setting of `settings_cls` (default: Settings), in section order; internal fields are left out."""
    return _setting_fields(settings_cls or Settings)


@functools.cache
def _setting_fields(settings_cls: type[BaseSettings]) -> tuple[SettingField, ...]:
    found: list[SettingField] = []
    for section, section_info in settings_cls.model_fields.items():
        extra = section_info.json_schema_extra
        meta = extra.get("newsloop") if isinstance(extra, dict) else None
        prefix = str(meta.get("prefix") or "") if isinstance(meta, dict) else ""
        section_cls = section_info.annotation
        assert isinstance(section_cls, type) and issubclass(section_cls, Section), section
        for name, info in section_cls.model_fields.items():
            spec = field_spec(info)
            if spec is None:
                continue
            extra_info = info.json_schema_extra
            declared = extra_info.get("newsloop") if isinstance(extra_info, dict) else None
            secret = "SecretStr" in str(info.annotation) or bool(isinstance(declared, dict) and declared.get("secret"))
            found.append(SettingField(
                env=PREFIX + (spec.env or prefix + name).upper(), section=section, field=name, info=info,
                fallback=spec.fallback, on_space=spec.on_space, default_text=spec.default_text, secret=secret,
            ))
    names = [f.env for f in found]
    assert len(names) == len(set(names)), "two settings share an environment variable"
    return tuple(found)


@dataclass(frozen=True)
class RawValue:
    """A setting's value before validation, and where it came from: "env", "file:<path>" or "default"."""

    value: Any
    source: str


def read_env_file(path: Path) -> dict[str, str]:
    """A `.env`-style file: NAME=value lines; blank lines, `#` comments and an `export ` prefix are allowed,
    and a value may be quoted."""
    values: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        name, sep, value = text.removeprefix("export ").partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"{ENV_FILE}: {path} line {number} is not NAME=value")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[name.strip().upper()] = value
    return values


def env_file_values(environ: Mapping[str, str]) -> tuple[Path | None, dict[str, str]]:
    """The file NEWSLOOP_ENV_FILE names (unset or empty = none) and its values."""
    named = _upper(environ).get(ENV_FILE, "").strip()
    if not named:
        return None, {}
    path = Path(named).expanduser()
    if not path.is_file():
        raise ConfigError(f"{ENV_FILE}: no such file: {path}")
    return path, read_env_file(path)


def raw_values(environ: Mapping[str, str], settings_cls: type[BaseSettings] | None = None) -> dict[str, RawValue]:
    """Each setting that the environment, the env file or a Space sets, by env name: the environment beats the file;
    a variable's fallbacks (e.g. GRADIO_SERVER_PORT) count only when non-empty; a Space's default beats the plain one."""
    env = _upper(environ)
    path, file = env_file_values(env)
    on_space = bool(env.get("SPACE_ID"))
    found: dict[str, RawValue] = {}
    for item in setting_fields(settings_cls):
        for layer, source in ((env, "env"), (file, f"file:{path}")):
            if item.env in layer:
                found[item.env] = RawValue(layer[item.env], source)
                break
            fallback = next((name for name in item.fallback if layer.get(name)), None)
            if fallback is not None:
                found[item.env] = RawValue(layer[fallback], source)
                break
        else:
            if on_space and item.on_space is not None:
                found[item.env] = RawValue(item.on_space, "default")
    return found


def _upper(environ: Mapping[str, str]) -> dict[str, str]:
    # Variable names are read case-insensitively, as pydantic-settings always did here.
    return {name.upper(): value for name, value in environ.items()}


def _nested(raw: Mapping[str, RawValue], settings_cls: type[BaseSettings] | None = None) -> dict[str, dict[str, Any]]:
    values: dict[str, dict[str, Any]] = {}
    for item in setting_fields(settings_cls):
        if item.env in raw:
            values.setdefault(item.section, {})[item.field] = raw[item.env].value
    return values


def _apply_flat(values: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    by_flat = {item.flat: item for item in setting_fields()}
    unknown = sorted(set(overrides) - set(by_flat))
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(unknown)}")
    for name, value in overrides.items():
        item = by_flat[name]
        values[item.section] = dict(values.get(item.section, {})) | {item.field: value}
    return values


class _FlatSource(PydanticBaseSettingsSource):
    """The process environment (and env file), by the flat NEWSLOOP_* names, as nested section values."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ reads every setting at once

    def __call__(self) -> dict[str, Any]:
        return _nested(raw_values(os.environ, self.settings_cls), self.settings_cls)


def read_settings(environ: Mapping[str, str], **overrides: Any) -> Settings:
    """Settings from `environ` (and the env file it names), with `overrides` by flat name winning, raising
    ConfigError with readable messages."""
    return _validated(_apply_flat(_nested(raw_values(environ)), overrides))


def load_settings(**overrides: Any) -> Settings:
    """Read settings from the process environment; `overrides` (flat names, e.g. epochs=2 or gate_margin=0.01)
    win and are validated like the environment's strings. Raises ConfigError with readable messages."""
    return read_settings(os.environ, **overrides)


def _validated(values: dict[str, Any]) -> Settings:
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(_explain(exc)) from None


def _explain(exc: ValidationError) -> str:
    by_place = {(item.section, item.field): item for item in setting_fields()}
    lines = []
    for err in exc.errors():
        item = by_place.get((str(err["loc"][0]), str(err["loc"][1]))) if len(err["loc"]) >= 2 else None
        if item is None:
            # A whole-section error's input holds every value, secrets included: never echo it.
            lines.append(err["msg"])
            continue
        shown = "" if item.secret else f" (got {err.get('input')!r})"
        lines.append(f"{item.env}: {err['msg']}{shown}")
    return "invalid configuration:\n  " + "\n  ".join(lines)


def ensure_home(settings: Settings) -> Path:
    """Create the state directory tree; called by code that is about to write state."""
    for path in (settings.storage.home, settings.paths.models_dir):
        path.mkdir(parents=True, exist_ok=True)
    return settings.storage.home
