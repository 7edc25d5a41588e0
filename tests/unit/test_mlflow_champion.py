"""The champion by MLflow alias: what replicas serve, and the mirror a retrain on any machine starts from."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.registry.mlflow_champion import AliasChampionSource, champion_source, is_tracking_server, mirror_versions
from core.registry.starter import install_starter
from core.registry.versions import ModelRegistry
from core.storage.paths import CHECKPOINT_DIR, META_FILE
from retrain.inputs import tracking_target
from retrain.tracking.tracker import Tracker, TrackingTarget, sync_aliases
from testkit.models import tiny_settings


@pytest.mark.parametrize(
    ("uri", "server"),
    [("http://mlflow:5000", True), ("https://mlflow.example", True), ("databricks", True),
     ("databricks://profile", True), ("sqlite:///tmp/mlflow.db", False), ("/tmp/mlruns", False)],
)
def test_the_app_and_a_run_agree_on_which_tracking_uris_are_servers(uri: str, server: bool, tmp_path: Path) -> None:
    # One test for both: a server's @champion is what replicas serve, and a server keeps a run's artifacts (none
    # under home). The two once kept their own scheme lists, which disagreed about `databricks`.
    settings = tiny_settings(tmp_path, mlflow_tracking_uri=uri)
    assert is_tracking_server(uri) is server
    assert isinstance(champion_source(uri, settings.paths.models_dir), AliasChampionSource) is server
    assert (tracking_target(settings).artifacts_dir is None) is server


def test_replica_serves_alias_and_a_fresh_machine_mirrors_it_without_mistaking_its_own_v0001(
    tiny_home_copy: Path, tmp_path: Path
) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"  # any tracking store works; replicas use an http:// server
    source_registry = ModelRegistry(tiny_home_copy / "models")
    alias = AliasChampionSource(uri, tmp_path / "cache")
    with Tracker(TrackingTarget(uri, tmp_path / "artifacts"), "test", "register") as tracker:
        assert alias.marker() is None and alias.champion() is None  # nothing registered yet
        tracker.log_model_version(source_registry.get("v0001").path, "v0001", alias="champion")

    served = alias.champion()
    assert alias.marker() == "1" and served is not None and served.version == "v0001"
    assert (served.path / served.meta["serve_file"]).is_file() and not (served.path / CHECKPOINT_DIR).exists()

    other = ModelRegistry(tmp_path / "machine-2" / "models")
    install_starter(other)  # its own, different v0001
    assert mirror_versions(uri, other) == "v0001"
    mirrored = other.champion()
    assert mirrored.meta["committed_at"] == source_registry.get("v0001").meta["committed_at"]
    assert (mirrored.path / CHECKPOINT_DIR).is_dir()  # a retrain there warm-starts from it
    assert [v for v in other.versions() if v.startswith("v0001-local-")]  # the starter, set aside

    # A promotion elsewhere carries its history through the server: this machine adopts it.
    staging = source_registry.new_staging()
    (staging / META_FILE).write_text((source_registry.get("v0001").path / META_FILE).read_text())
    second = source_registry.commit(staging, {"kind": "test"})
    source_registry.promote(second.version)
    with Tracker(TrackingTarget(uri, tmp_path / "artifacts"), "test", "register") as tracker:
        tracker.log_model_version(second.path, second.version)
    sync_aliases(uri, source_registry)
    assert mirror_versions(uri, other) == "v0002"
    assert other.status()["previous"] == ["v0001"] and other.rollback().version == "v0001"
