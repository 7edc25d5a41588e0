from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from core.registry.versions import ModelRegistry, RegistryError


def make_version(registry: ModelRegistry, payload: str) -> str:
    staging = registry.new_staging()
    (staging / "model.onnx").write_text(payload)
    return registry.commit(staging, {"note": payload}).version


def test_commit_numbers_versions_and_keeps_meta(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path)
    assert make_version(registry, "a") == "v0001"
    assert make_version(registry, "b") == "v0002"
    assert registry.get("v0002").meta["note"] == "b"
    assert registry.champion() is None  # committing is not promoting


def test_promote_and_rollback_walk_the_history(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path)
    v1, v2, v3 = (make_version(registry, x) for x in "abc")
    for v in (v1, v2, v3):
        registry.promote(v)
    assert registry.champion().version == v3
    assert registry.status()["previous"] == [v2, v1]
    assert registry.rollback().version == v2
    assert registry.rollback().version == v1
    with pytest.raises(RegistryError, match="no previous champion"):
        registry.rollback()
    assert [e["action"] for e in registry.status()["events"]] == ["promote"] * 3 + ["rollback"] * 2


def test_staging_directories_are_invisible_until_committed(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path)
    staging = registry.new_staging()
    (staging / "model.onnx").write_text("half written")
    assert registry.versions() == []
    assert registry.clean_staging() == [staging]
    assert not staging.exists()


def test_unknown_version_cannot_be_promoted(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path)
    with pytest.raises(RegistryError, match="does not exist"):
        registry.promote("v0042")
    assert registry.champion() is None


def test_marker_changes_when_the_record_changes(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path)
    v1, v2 = make_version(registry, "a"), make_version(registry, "b")
    assert registry.marker() is None
    registry.promote(v1)
    first = registry.marker()
    registry.promote(v2)
    assert registry.marker() != first


def _commit_many(root: str, n: int) -> None:
    registry = ModelRegistry(Path(root))
    for _ in range(n):
        registry.promote(make_version(registry, "x"))


def test_concurrent_processes_get_distinct_versions_and_a_valid_record(tmp_path: Path) -> None:
    procs = [multiprocessing.Process(target=_commit_many, args=(str(tmp_path), 5)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    registry = ModelRegistry(tmp_path)
    assert len(registry.versions()) == 15
    record = json.loads((tmp_path / "registry.json").read_text())
    assert len(record["history"]) == 14 and record["champion"] in registry.versions()


def test_the_record_reads_back_as_written_and_a_foreign_file_is_refused(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path)
    assert registry.read_record() == {"champion": None, "history": [], "events": []}
    first, second = make_version(registry, "a"), make_version(registry, "b")
    registry.promote(first, "bootstrap")
    registry.promote(second, "better")
    registry.rollback("bad")
    record = registry.read_record()
    assert record["champion"] == first and record["history"] == [] and record["challenger"] == second
    assert [(e["action"], e["version"]) for e in record["events"]] == [
        ("promote", first), ("promote", second), ("rollback", first)]
    assert record["events"][-1]["replaced"] == second
    assert record == json.loads((tmp_path / "registry.json").read_text())  # nothing added or dropped
    (tmp_path / "registry.json").write_text("[1, 2]")
    with pytest.raises(RegistryError, match="does not hold a registry record"):
        registry.read_record()
