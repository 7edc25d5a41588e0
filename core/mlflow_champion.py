"""The champion by MLflow alias, for replicas sharing a tracking server: poll @champion, download, cache.

`ChampionService` takes any source with `marker()` and `champion()` (`ModelRegistry` is the embedded one);
`AliasChampionSource` answers them from the registered model's `champion` alias, downloading that
version's ONNX files through the tracking server into a local cache once. `mirror_versions` copies the
registered versions into a machine's file registry, so a retrain on any machine starts from the champion
and numbers its challenger after every version already registered.
"""

from __future__ import annotations

import json
import logging
import shutil
import uuid
from pathlib import Path
from typing import Any, Protocol

from core.paths import CHECKPOINT_DIR, META_FILE
from core.registry import ModelRegistry, ModelVersion, RegistryError

log = logging.getLogger(__name__)

REGISTERED_MODEL = "newsloop-classifier"
VERSION_TAG = "newsloop_version"  # the project's version name (v0003) on each registered version
CHAMPION_ALIAS = "champion"
HISTORY_TAG = "newsloop_history"  # on the registered model: the champions before @champion, oldest first
SERVER_SCHEMES = ("http://", "https://")


class ChampionSource(Protocol):
    """What `core.serving.ChampionService` polls: a cheap change marker, then the champion on local disk."""

    def marker(self) -> object: ...

    def champion(self) -> ModelVersion | None: ...


def is_tracking_server(uri: str) -> bool:
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


class AliasChampionSource:
    """The registered model's @champion, served from `cache_dir` (one directory per version)."""

    def __init__(self, tracking_uri: str, cache_dir: Path, *, model: str = REGISTERED_MODEL, alias: str = CHAMPION_ALIAS) -> None:
        self.tracking_uri, self.cache_dir, self.model, self.alias = tracking_uri, Path(cache_dir), model, alias
        self._last: object = None

    def _alias(self) -> Any | None:
        from mlflow.exceptions import MlflowException

        try:
            return _client(self.tracking_uri).get_model_version_by_alias(self.model, self.alias)
        except MlflowException as exc:
            if "RESOURCE_DOES_NOT_EXIST" in str(exc.error_code) or "not found" in str(exc).lower():
                return None
            raise

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
            path = download_version(self.tracking_uri, mv, self.cache_dir / project_version(mv))
            meta = json.loads((path / META_FILE).read_text(encoding="utf-8"))
        except RegistryError:
            raise
        except Exception as exc:
            raise RegistryError(f"cannot fetch @{self.alias} from {self.tracking_uri}: {exc}") from exc
        return ModelVersion(project_version(mv), path, meta)


def _same(tracking_uri: str, mv: Any, local: ModelVersion) -> bool:
    """Whether a local version is the registered one: the same name and commit time in their metadata."""
    import tempfile

    from mlflow.artifacts import download_artifacts

    with tempfile.TemporaryDirectory() as tmp:
        uri = f"{mv.source.rstrip('/')}/{META_FILE}"
        remote = json.loads(Path(download_artifacts(artifact_uri=uri, dst_path=tmp, tracking_uri=tracking_uri)).read_text())
    return all(remote.get(key) == local.meta.get(key) for key in ("version", "committed_at"))


def mirror_versions(tracking_uri: str, registry: ModelRegistry) -> str | None:
    """Copy registered versions missing from `registry` into it, and adopt @champion as its champion.

    Returns the champion's version name, or None when the server has none yet. Run under the retrain lock.
    """
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
    champion = AliasChampionSource(tracking_uri, registry.versions_dir)._alias()
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
