"""Snapshots of the local state to a durable directory that cannot lock, rename or append (a bucket mount).

Live SQLite files, locks and the working registry stay on local disk. A snapshot copies them out:

    <durable>/snapshots/snapshot-<UTC time, ns>-<id>/ feedback.db, mlflow.db (SQLite backup API, taken locally),
                                                   models/registry.json, retrain_state.json, MANIFEST.json
    <durable>/versions/vNNNN/                       each model version, copied once; VERSION.json last

Every file on the durable path is created once, written whole and closed; nothing there is opened by
SQLite, locked, renamed over or appended to. A manifest with checksums is written last, so a snapshot
torn by a crash has no manifest (or a failing checksum) and is skipped on restore.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sqlite3
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from core.storage.paths import META_FILE, HomePaths

log = logging.getLogger(__name__)

MANIFEST = "MANIFEST.json"
VERSION_MANIFEST = "VERSION.json"
SNAPSHOT_PREFIX = "snapshot-"
_CHUNK = 1 << 20


class SnapshotError(RuntimeError):
    """A snapshot that cannot be taken or restored; the message says why."""


@dataclass(frozen=True)
class SnapshotReport:
    path: Path
    files: int
    bytes: int
    versions_copied: int
    seconds: float


class FileEntry(TypedDict):
    """A copied file's line in a manifest."""

    sha256: str
    bytes: int


def _state_files(paths: HomePaths) -> dict[str, tuple[Path, bool]]:
    """Relative name -> (local path, is a SQLite database)."""
    home = paths.home
    return {
        paths.feedback_db.relative_to(home).as_posix(): (paths.feedback_db, True),
        paths.mlflow_db.relative_to(home).as_posix(): (paths.mlflow_db, True),
        paths.registry_record.relative_to(home).as_posix(): (paths.registry_record, False),
        paths.retrain_state.relative_to(home).as_posix(): (paths.retrain_state, False),
    }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _write_once(source: Path, dest: Path) -> FileEntry:
    """Copy `source` to a new file `dest` in one sequential pass ('x': never over an existing file)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    digest, size = hashlib.sha256(), 0
    with source.open("rb") as src, dest.open("xb") as out:
        while chunk := src.read(_CHUNK):
            out.write(chunk)
            digest.update(chunk)
            size += len(chunk)
        out.flush()
        os.fsync(out.fileno())
    return {"sha256": digest.hexdigest(), "bytes": size}


def _write_json_once(payload: object, dest: Path) -> None:
    with dest.open("x", encoding="utf-8") as out:
        json.dump(payload, out, indent=2, sort_keys=True)
        out.flush()
        os.fsync(out.fileno())


def _sqlite_copy(db: Path, dest: Path) -> None:
    """A consistent copy of a live database, on local disk, by SQLite's online backup API."""
    source = sqlite3.connect(db, timeout=10.0)
    try:
        target = sqlite3.connect(dest)
        try:
            source.backup(target)
        finally:
            target.close()
    finally:
        source.close()


def _copy_versions(paths: HomePaths, durable: Path) -> tuple[list[str], int]:
    """Copy every local model version not yet complete on the durable side; returns (all versions, copied)."""
    versions_dir = paths.versions_dir
    names = sorted(p.name for p in versions_dir.iterdir() if (p / META_FILE).is_file()) if versions_dir.is_dir() else []
    copied = 0
    for name in names:
        dest = durable / "versions" / name
        if (dest / VERSION_MANIFEST).is_file():
            continue  # model versions never change: one complete copy is enough
        if dest.exists():
            # A copy torn by a crash: its files cannot be overwritten in place, so start a new attempt beside it.
            dest = durable / "versions" / f"{name}.{uuid.uuid4().hex[:8]}.partial"
        files: dict[str, FileEntry] = {}
        for path in sorted((versions_dir / name).rglob("*")):
            if path.is_file():
                files[path.relative_to(versions_dir / name).as_posix()] = _write_once(path, dest / path.relative_to(versions_dir / name))
        if dest.name != name:
            log.warning("version %s: a torn durable copy exists; this copy stays at %s", name, dest.name)
        _write_json_once({"version": name, "files": files}, dest / VERSION_MANIFEST)
        copied += 1
    return names, copied


def take_snapshot(paths: HomePaths, durable: Path, *, keep: int = 3) -> SnapshotReport:
    """Copy the local state to a new snapshot under `durable`; the manifest is written last."""
    started = time.perf_counter()
    durable = Path(durable)
    if durable.resolve() == paths.home.resolve() or paths.home.resolve() in durable.resolve().parents:
        raise SnapshotError(f"the durable directory {durable} must lie outside NEWSLOOP_HOME ({paths.home})")
    now_ns = time.time_ns()
    # Fixed-width UTC time to the nanosecond, so names sort in time order even within one second.
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now_ns / 1e9)) + f".{now_ns % 1_000_000_000:09d}Z"
    target = durable / "snapshots" / f"{SNAPSHOT_PREFIX}{stamp}-{uuid.uuid4().hex[:8]}"
    target.mkdir(parents=True)
    versions, copied = _copy_versions(paths, durable)
    files: dict[str, FileEntry] = {}
    paths.home.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=paths.home, prefix=".snapshot-") as staging:
        for rel, (local, is_db) in _state_files(paths).items():
            if not local.is_file():
                continue
            source = local
            if is_db:
                source = Path(staging) / local.name
                _sqlite_copy(local, source)
            files[rel] = _write_once(source, target / rel)
    _write_json_once(
        {"created_at": stamp, "files": files, "versions": versions, "home_layout": 1}, target / MANIFEST
    )
    size = sum(f["bytes"] for f in files.values())
    _prune(durable, keep)
    report = SnapshotReport(target, len(files), size, copied, round(time.perf_counter() - started, 3))
    log.info("snapshot %s: %d files, %d bytes, %d new model versions, %.2f s",
             target.name, report.files, report.bytes, copied, report.seconds)
    return report


def _complete(snapshot: Path) -> dict | None:
    """The snapshot's manifest when every file it lists is there with its checksum; else None (torn)."""
    try:
        manifest = json.loads((snapshot / MANIFEST).read_text(encoding="utf-8"))
        for rel, entry in manifest["files"].items():
            path = snapshot / rel
            if path.stat().st_size != entry["bytes"] or _sha256(path) != entry["sha256"]:
                return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return manifest


def snapshots(durable: Path) -> list[Path]:
    """Snapshot directories, newest first."""
    root = Path(durable) / "snapshots"
    if not root.is_dir():
        return []
    return sorted((p for p in root.iterdir() if p.name.startswith(SNAPSHOT_PREFIX)), reverse=True)


def latest_complete(durable: Path) -> tuple[Path, dict] | None:
    for snapshot in snapshots(durable):
        manifest = _complete(snapshot)
        if manifest is not None:
            return snapshot, manifest
        log.warning("skipping torn snapshot %s", snapshot.name)
    return None


def _prune(durable: Path, keep: int) -> None:
    """Keep the newest `keep` complete snapshots, and nothing older than the oldest of them."""
    complete = 0
    for snapshot in snapshots(durable):
        if complete >= keep:
            shutil.rmtree(snapshot, ignore_errors=True)
        elif _complete(snapshot) is not None:
            complete += 1


def _version_source(durable: Path, name: str) -> Path | None:
    for candidate in sorted((durable / "versions").glob(f"{name}*")):
        if candidate.name in (name,) or candidate.name.startswith(f"{name}."):
            try:
                manifest = json.loads((candidate / VERSION_MANIFEST).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if all(
                (candidate / rel).is_file() and _sha256(candidate / rel) == entry["sha256"]
                for rel, entry in manifest["files"].items()
            ):
                return candidate
    return None


def restore(paths: HomePaths, durable: Path) -> Path | None:
    """Rebuild the local state from the newest complete snapshot; returns it, or None when there is none.

    Files are copied to local temporary names and renamed into place (on local disk, where renames are safe).
    """
    found = latest_complete(Path(durable))
    if found is None:
        return None
    snapshot, manifest = found
    versions_dir = paths.versions_dir
    versions_dir.mkdir(parents=True, exist_ok=True)
    for name in manifest["versions"]:
        if (versions_dir / name / META_FILE).is_file():
            continue
        source = _version_source(Path(durable), name)
        if source is None:
            raise SnapshotError(f"snapshot {snapshot.name} needs model version {name}, which has no complete copy")
        staging = Path(tempfile.mkdtemp(dir=paths.models_dir, prefix=".restore-"))
        shutil.copytree(source, staging, dirs_exist_ok=True, ignore=shutil.ignore_patterns(VERSION_MANIFEST))
        os.rename(staging, versions_dir / name)
    for rel in manifest["files"]:
        dest = paths.home / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        for stale in (dest.with_name(dest.name + "-wal"), dest.with_name(dest.name + "-shm")):
            stale.unlink(missing_ok=True)  # a log left beside an older database would be replayed into this one
        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
        os.close(fd)
        shutil.copyfile(snapshot / rel, tmp)
        os.replace(tmp, dest)
    log.info("restored local state from snapshot %s (%d files, %d model versions)",
             snapshot.name, len(manifest["files"]), len(manifest["versions"]))
    return snapshot
