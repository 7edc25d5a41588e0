"""The champion by MLflow alias, for replicas sharing a tracking server: poll @champion, download, cache.

`ChampionService` takes any source with `marker()` and `champion()` (`ModelRegistry` is the embedded one);
`AliasChampionSource` answers them from the registered model's `champion` alias, downloading that
version's ONNX files through the tracking server into a local cache once. `mirror_versions` copies the
registered versions into a machine's file registry, so a retrain on any machine starts from the champion
and numbers its challenger after every version already registered. `register_starter` gives a fresh tracking
server the shipped starter as its first @champion, so replicas serve without a bootstrap.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from core.labels import LABELS
from core.registry.starter import STARTER_DIR, installed_meta, starter_fits, starter_meta
from core.registry.versions import ModelRegistry, ModelVersion, RegistryError
from core.storage.paths import CHECKPOINT_DIR, META_FILE

log = logging.getLogger(__name__)

REGISTERED_MODEL = "newsloop-classifier"
VERSION_TAG = "newsloop_version"  # the project's version name (v0003) on each registered version
CHAMPION_ALIAS = "champion"
HISTORY_TAG = "newsloop_history"  # on the registered model: the champions before @champion, oldest first
STARTER_EXPERIMENT = "newsloop-starter"  # the runs that carry a registered starter's files
# A tracking URI of one of these is a server: it keeps the artifacts and the registry (replicas follow its
# @champion, runs store artifacts there). Any other URI (sqlite:, a file path) is a store on this machine.
SERVER_SCHEMES = ("http://", "https://", "databricks")


class ChampionSource(Protocol):
    """What `core.serving.classifier.ChampionService` polls: a cheap change marker, then the champion on local disk."""

    def marker(self) -> object: ...

    def champion(self) -> ModelVersion | None: ...


def is_tracking_server(uri: str) -> bool:
    """Whether MLflow's tracking URI names a server (SERVER_SCHEMES): the one test every package uses."""
    return uri.startswith(SERVER_SCHEMES)


def _client(tracking_uri: str) -> Any:
    from mlflow.tracking import MlflowClient  # only replicas on a tracking server load MLflow

    return MlflowClient(tracking_uri=tracking_uri)


def project_version(mv: Any) -> str:
    return mv.tags.get(VERSION_TAG) or f"m{int(mv.version):04d}"


def download_version(tracking_uri: str, mv: Any, dest: Path, *, checkpoint: bool = False) -> Path:
    """The registered version's files in `dest` (downloaded once, then renamed in whole).

    Serving needs the ONNX files, tokenizer and metadata; `checkpoint` adds the PyTorch weights a retrain
    warm-starts from.
    """
    if (dest / META_FILE).is_file():
        return dest
    from mlflow.artifacts import download_artifacts, list_artifacts

    tmp = dest.parent / f".{dest.name}.{uuid.uuid4().hex[:8]}"
    try:
        got = tmp / "files"
        got.mkdir(parents=True)
        for entry in list_artifacts(artifact_uri=mv.source, tracking_uri=tracking_uri):
            name = Path(entry.path).name
            if not entry.is_dir or (checkpoint and name == CHECKPOINT_DIR):
                uri = f"{mv.source.rstrip('/')}/{name}"
                download_artifacts(artifact_uri=uri, dst_path=str(got), tracking_uri=tracking_uri)
        if not (got / META_FILE).is_file():
            raise RegistryError(f"registered version {mv.version} has no {META_FILE} at {mv.source}")
        try:
            got.rename(dest)
        except OSError:  # another thread or process finished the same download first
            if not (dest / META_FILE).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def alias_version(tracking_uri: str, model: str = REGISTERED_MODEL, alias: str = CHAMPION_ALIAS) -> Any | None:
    """The registered version `alias` names, or None when there is no such model or alias."""
    from mlflow.exceptions import MlflowException

    try:
        return _client(tracking_uri).get_model_version_by_alias(model, alias)
    except MlflowException as exc:
        if "RESOURCE_DOES_NOT_EXIST" in str(exc.error_code) or "not found" in str(exc).lower():
            return None
        raise


class AliasChampionSource:
    """The registered model's @champion, served from `cache_dir` (one directory per version)."""

    def __init__(self, tracking_uri: str, cache_dir: Path, *, model: str = REGISTERED_MODEL, alias: str = CHAMPION_ALIAS) -> None:
        self.tracking_uri, self.cache_dir, self.model, self.alias = tracking_uri, Path(cache_dir), model, alias
        self._last: object = None

    def _alias(self) -> Any | None:
        return alias_version(self.tracking_uri, self.model, self.alias)

    def marker(self) -> object:
        """The alias's version number; on a tracking-server error, the last one seen (keep serving)."""
        try:
            mv = self._alias()
            self._last = None if mv is None else str(mv.version)
        except Exception as exc:
            log.warning("cannot read @%s from %s: %s", self.alias, self.tracking_uri, exc)
        return self._last

    def champion(self) -> ModelVersion | None:
        try:
            mv = self._alias()
            if mv is None:
                return None
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            # Keyed by the registered number too: two machines' bootstraps may both have named theirs v0001.
            path = download_version(self.tracking_uri, mv, self.cache_dir / f"{project_version(mv)}-m{mv.version}")
            meta = json.loads((path / META_FILE).read_text(encoding="utf-8"))
        except RegistryError:
            raise
        except Exception as exc:
            raise RegistryError(f"cannot fetch @{self.alias} from {self.tracking_uri}: {exc}") from exc
        return ModelVersion(project_version(mv), path, meta)


def ensure_registered_model(client: Any) -> None:
    from mlflow.exceptions import MlflowException

    try:
        client.get_registered_model(REGISTERED_MODEL)
    except MlflowException:
        client.create_registered_model(REGISTERED_MODEL, description="NewsLoop topic classifier (ONNX)")


def register_starter(
    tracking_uri: str, starter_dir: Path = STARTER_DIR, labels: Sequence[str] = LABELS
) -> str | None:
    """Register the shipped starter as @champion on a tracking server that has none; returns its version name.

    None when the server has a champion already or the starter does not predict `labels` (the configured data's
    topics). Run under the retrain lock, so
    one replica or worker registers it however many start at once. Only MLflow's client and the shipped files
    (ONNX, tokenizer, metadata, and the checkpoint a retrain warm-starts from): no training code, no torch.
    """
    if alias_version(tracking_uri) is not None:
        return None
    meta = starter_meta(starter_dir)
    if not starter_fits(meta, labels):
        log.info("the starter in %s does not predict %s: nothing to register", starter_dir, ", ".join(labels))
        return None
    assert meta is not None
    client = _client(tracking_uri)
    ensure_registered_model(client)
    taken = [project_version(mv) for mv in client.search_model_versions(f"name='{REGISTERED_MODEL}'")]
    numbers = [int(name[1:]) for name in taken if name[:1] == "v" and name[1:].isdigit()]
    version = f"v{max(numbers, default=0) + 1:04d}"
    experiment = client.get_experiment_by_name(STARTER_EXPERIMENT)
    experiment_id = experiment.experiment_id if experiment else client.create_experiment(STARTER_EXPERIMENT)
    run = client.create_run(experiment_id, run_name=f"starter-{version}", tags={"kind": "starter"})
    with tempfile.TemporaryDirectory() as tmp:
        files = Path(tmp) / "model"
        shutil.copytree(starter_dir, files, ignore=shutil.ignore_patterns(META_FILE))
        committed = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        (files / META_FILE).write_text(
            json.dumps(installed_meta(meta) | {"version": version, "committed_at": committed}), encoding="utf-8"
        )
        client.log_artifacts(run.info.run_id, str(files), "model")
    client.set_terminated(run.info.run_id)
    source = f"{run.info.artifact_uri.rstrip('/')}/model"
    mv = client.create_model_version(REGISTERED_MODEL, source, run_id=run.info.run_id, tags={VERSION_TAG: version})
    client.set_registered_model_tag(REGISTERED_MODEL, HISTORY_TAG, "[]")
    client.set_registered_model_alias(REGISTERED_MODEL, CHAMPION_ALIAS, mv.version)
    log.info("registered the shipped starter as %s (model version %s) @%s on %s", version, mv.version,
             CHAMPION_ALIAS, tracking_uri)
    return version


def _same(tracking_uri: str, mv: Any, local: ModelVersion) -> bool:
    """Whether a local version is the registered one: the same name and commit time in their metadata."""
    from mlflow.artifacts import download_artifacts

    with tempfile.TemporaryDirectory() as tmp:
        uri = f"{mv.source.rstrip('/')}/{META_FILE}"
        remote = json.loads(Path(download_artifacts(artifact_uri=uri, dst_path=tmp, tracking_uri=tracking_uri)).read_text())
    return all(remote.get(key) == local.meta.get(key) for key in ("version", "committed_at"))


def mirror_versions(
    tracking_uri: str, registry: ModelRegistry, starter_dir: Path = STARTER_DIR, labels: Sequence[str] = LABELS
) -> str | None:
    """Copy registered versions missing from `registry` into it, and adopt @champion as its champion.

    A server with no champion first gets the shipped starter (`register_starter`) if it predicts `labels` (the
    configured data's topics). Returns the champion's version name, or None when the server has none. Run under
    the retrain lock.
    """
    register_starter(tracking_uri, starter_dir, labels)
    client = _client(tracking_uri)
    versions = client.search_model_versions(f"name='{REGISTERED_MODEL}'")
    have = set(registry.versions())
    for mv in sorted(versions, key=lambda m: int(m.version)):
        name = project_version(mv)
        if name in have and not _same(tracking_uri, mv, registry.get(name)):
            # e.g. the starter app.py installed in this home, numbered v0001 like the server's first champion
            log.warning("local %s differs from the registered one; kept as %s", name, registry.set_aside(name))
            have.discard(name)
        if name not in have:
            staging = registry.new_staging()
            download_version(tracking_uri, mv, staging / "files", checkpoint=True)
            registry.install(name, staging / "files")
            log.info("mirrored registered version %s (%s) from %s", mv.version, name, tracking_uri)
    champion = alias_version(tracking_uri)
    if champion is None:
        return None
    name = project_version(champion)
    history = json.loads(client.get_registered_model(REGISTERED_MODEL).tags.get(HISTORY_TAG) or "[]")
    record = registry.read_record()
    if (record["champion"], record["history"]) != (name, history):
        registry.adopt(name, history, reason=f"@{CHAMPION_ALIAS} and its history from the tracking server")
    return name


def champion_source(tracking_uri: str, models_dir: Path) -> ChampionSource:
    """What a replica serves: @champion on a tracking server, else the file registry in home."""
    if is_tracking_server(tracking_uri):
        return AliasChampionSource(tracking_uri, Path(models_dir) / "mlflow_cache")
    return ModelRegistry(models_dir)
