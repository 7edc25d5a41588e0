"""A fresh tracking server gets the shipped starter as @champion: registered once, served by alias, mirrored by a
retrain machine with its checkpoint, and never over a champion the server already has."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from mlflow.tracking import MlflowClient

from core.labels import LABELS
from core.registry.mlflow_champion import (
    REGISTERED_MODEL,
    STARTER_EXPERIMENT,
    AliasChampionSource,
    alias_version,
    mirror_versions,
    register_starter,
)
from core.registry.versions import ModelRegistry
from core.serving.classifier import OnnxClassifier
from core.storage.paths import CHECKPOINT_DIR, META_FILE


def _starter(tiny_champion_home: Path, dest: Path) -> Path:
    """A starter directory as `models/starter/` has it, made from the tiny test champion (seconds, not 68 MB)."""
    champion = ModelRegistry(tiny_champion_home / "models").champion()
    assert champion is not None
    shutil.copytree(champion.path, dest)
    meta = json.loads((dest / META_FILE).read_text()) | {"labels": list(LABELS), "source_version": "v0007"}
    (dest / META_FILE).write_text(json.dumps(meta))
    return dest


def _server(tmp_path: Path, name: str) -> str:
    """A tracking store (replicas use an http:// server; any store serves the client calls) whose starter runs
    keep their artifacts under tmp_path rather than ./mlruns."""
    uri = f"sqlite:///{tmp_path / f'{name}.db'}"
    MlflowClient(uri).create_experiment(STARTER_EXPERIMENT, artifact_location=(tmp_path / f"{name}-art").as_uri())
    return uri


def test_an_empty_server_gets_the_starter_once_and_serves_it(tiny_champion_home: Path, tmp_path: Path) -> None:
    starter = _starter(tiny_champion_home, tmp_path / "starter")
    uri = _server(tmp_path, "fresh")
    assert alias_version(uri) is None

    assert register_starter(uri, starter) == "v0001"
    assert register_starter(uri, starter) is None  # a second replica finds the champion and registers nothing
    assert len(MlflowClient(uri).search_model_versions(f"name='{REGISTERED_MODEL}'")) == 1

    served = AliasChampionSource(uri, tmp_path / "cache").champion()
    assert served is not None and served.version == "v0001"
    assert served.meta["kind"] == "starter" and served.meta["starter_of"] == "v0007"
    assert served.meta["version"] == "v0001" and served.meta["committed_at"]
    probs = OnnxClassifier(served.path).predict_proba(["The striker scored twice in the cup final."])
    assert probs.shape == (1, len(LABELS))


def test_a_retrain_machine_on_an_empty_server_registers_and_mirrors_the_starter(
    tiny_champion_home: Path, tmp_path: Path
) -> None:
    starter = _starter(tiny_champion_home, tmp_path / "starter")
    uri = _server(tmp_path, "worker")
    worker = ModelRegistry(tmp_path / "worker" / "models")
    assert mirror_versions(uri, worker, starter) == "v0001"
    mirrored = worker.champion()
    assert mirrored is not None and mirrored.meta["kind"] == "starter"
    assert (mirrored.path / CHECKPOINT_DIR).is_dir()  # the retrain warm-starts from the starter's weights


def test_no_starter_is_registered_over_an_existing_champion(tiny_home_copy: Path, tmp_path: Path) -> None:
    from retrain.tracking.tracker import Tracker, TrackingTarget

    starter = _starter(tiny_home_copy, tmp_path / "starter")
    uri = _server(tmp_path, "used")
    with Tracker(TrackingTarget(uri, tmp_path / "artifacts"), "test", "register") as tracker:
        tracker.log_model_version(ModelRegistry(tiny_home_copy / "models").get("v0001").path, "v0001", alias="champion")
    assert register_starter(uri, starter) is None
    assert alias_version(uri).tags["newsloop_version"] == "v0001"
    assert len(MlflowClient(uri).search_model_versions(f"name='{REGISTERED_MODEL}'")) == 1


def test_a_starter_after_versions_without_a_champion_takes_the_next_number(tiny_home_copy: Path, tmp_path: Path) -> None:
    from retrain.tracking.tracker import Tracker, TrackingTarget

    starter = _starter(tiny_home_copy, tmp_path / "starter")
    uri = _server(tmp_path, "orphans")
    with Tracker(TrackingTarget(uri, tmp_path / "artifacts"), "test", "register") as tracker:
        tracker.log_model_version(ModelRegistry(tiny_home_copy / "models").get("v0001").path, "v0001")  # no alias
    assert register_starter(uri, starter) == "v0002"
    assert alias_version(uri).tags["newsloop_version"] == "v0002"


def test_a_server_for_data_of_other_topics_gets_no_starter(tiny_champion_home: Path, tmp_path: Path) -> None:
    starter = _starter(tiny_champion_home, tmp_path / "starter")
    uri = _server(tmp_path, "own")
    registry = ModelRegistry(tmp_path / "models")
    assert mirror_versions(uri, registry, starter, labels=("Politics", "Sport", "Money")) is None
    assert alias_version(uri) is None and registry.champion() is None  # its bootstrap will be the first champion
