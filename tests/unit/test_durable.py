"""Snapshots to a durable directory: consistent, write-once, torn ones skipped, nothing live on the durable path."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from core.storage import durable
from core.storage.paths import META_FILE, HomePaths


def _answers_db(path: Path, rows: int, payload: str = "x") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE IF NOT EXISTS answers (id INTEGER PRIMARY KEY, text TEXT)")
    conn.executemany("INSERT INTO answers (text) VALUES (?)", [(f"{payload}-{i}",) for i in range(rows)])
    conn.commit()
    conn.close()


def _home(tmp_path: Path, rows: int = 10) -> HomePaths:
    paths = HomePaths(tmp_path / "home")
    _answers_db(paths.feedback_db, rows)
    version = paths.models_dir / "versions" / "v0001"
    version.mkdir(parents=True)
    (version / META_FILE).write_text('{"version": "v0001"}')
    (version / "model.onnx").write_bytes(os.urandom(4096))
    (paths.models_dir / "registry.json").write_text('{"champion": "v0001", "history": []}')
    return paths


def _count(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM answers").fetchone()[0])
    finally:
        conn.close()


def test_snapshot_then_restore_on_a_fresh_host_brings_back_answers_and_models(tmp_path: Path) -> None:
    paths = _home(tmp_path, rows=25)
    report = durable.take_snapshot(paths, tmp_path / "durable")
    assert report.files == 2 and report.versions_copied == 1 and report.bytes > 0

    fresh = HomePaths(tmp_path / "fresh")
    assert durable.restore(fresh, tmp_path / "durable") == report.path
    assert _count(fresh.feedback_db) == 25
    assert json.loads((fresh.models_dir / "registry.json").read_text())["champion"] == "v0001"
    restored = fresh.models_dir / "versions" / "v0001" / "model.onnx"
    assert restored.read_bytes() == (paths.models_dir / "versions" / "v0001" / "model.onnx").read_bytes()


def test_versions_are_copied_once_and_later_snapshots_see_new_answers(tmp_path: Path) -> None:
    paths = _home(tmp_path, rows=5)
    first = durable.take_snapshot(paths, tmp_path / "durable")
    _answers_db(paths.feedback_db, 7)
    second = durable.take_snapshot(paths, tmp_path / "durable")
    assert first.versions_copied == 1 and second.versions_copied == 0
    fresh = HomePaths(tmp_path / "fresh")
    assert durable.restore(fresh, tmp_path / "durable") == second.path
    assert _count(fresh.feedback_db) == 12


def test_a_torn_or_corrupted_snapshot_is_skipped(tmp_path: Path) -> None:
    paths = _home(tmp_path, rows=3)
    good = durable.take_snapshot(paths, tmp_path / "durable", keep=10)
    _answers_db(paths.feedback_db, 4)
    corrupted = durable.take_snapshot(paths, tmp_path / "durable", keep=10)
    with (corrupted.path / "feedback.db").open("r+b") as handle:  # bit rot after the manifest was written
        handle.seek(200)
        handle.write(b"\xff" * 16)
    torn = corrupted.path.parent / (durable.SNAPSHOT_PREFIX + "99999999T999999Z-torn")
    torn.mkdir()
    (torn / "feedback.db").write_bytes(b"half a file")  # no manifest: the writer died

    assert durable.latest_complete(tmp_path / "durable")[0] == good.path
    fresh = HomePaths(tmp_path / "fresh")
    durable.restore(fresh, tmp_path / "durable")
    assert _count(fresh.feedback_db) == 3


def test_no_sqlite_connection_lock_or_rename_touches_the_durable_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = _home(tmp_path, rows=5)
    store = tmp_path / "durable"
    touched: list[tuple[str, str]] = []
    real_connect, real_flock = sqlite3.connect, fcntl.flock
    real_replace, real_rename = os.replace, os.rename

    def connect(database, *args, **kwargs):  # type: ignore[no-untyped-def]
        touched.append(("sqlite", str(database)))
        return real_connect(database, *args, **kwargs)

    def flock(handle, operation):  # type: ignore[no-untyped-def]
        touched.append(("flock", getattr(handle, "name", str(handle))))
        return real_flock(handle, operation)

    def replace(src, dst, *args, **kwargs):  # type: ignore[no-untyped-def]
        touched.append(("rename", f"{src} -> {dst}"))
        return real_replace(src, dst, *args, **kwargs)

    def rename(src, dst, *args, **kwargs):  # type: ignore[no-untyped-def]
        touched.append(("rename", f"{src} -> {dst}"))
        return real_rename(src, dst, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    monkeypatch.setattr(fcntl, "flock", flock)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "rename", rename)
    durable.take_snapshot(paths, store)
    durable.take_snapshot(paths, store)
    durable.restore(HomePaths(tmp_path / "fresh"), store)

    assert any(kind == "sqlite" for kind, _ in touched), "the snapshot should use SQLite's backup API"
    assert [entry for entry in touched if str(store) in entry[1]] == []


def test_the_durable_directory_must_not_lie_inside_home(tmp_path: Path) -> None:
    paths = _home(tmp_path)
    with pytest.raises(durable.SnapshotError, match="outside"):
        durable.take_snapshot(paths, paths.home / "durable")


def test_kill_9_in_the_middle_of_a_snapshot_leaves_the_previous_one_restorable(tmp_path: Path) -> None:
    # Regression guard for the Space bucket: a crash before the manifest must never be restored from.
    paths = _home(tmp_path, rows=20)
    store = tmp_path / "durable"
    first = durable.take_snapshot(paths, store, keep=10)
    _answers_db(paths.feedback_db, 60_000, payload="y" * 500)  # ~30 MB, so the next copy takes a while
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from core.storage import durable
        from core.storage.paths import HomePaths
        durable.take_snapshot(HomePaths(Path({str(paths.home)!r})), Path({str(store)!r}), keep=10)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 60
    killed_mid_write = False
    while time.monotonic() < deadline and proc.poll() is None:
        pending = [s for s in durable.snapshots(store) if s != first.path and not (s / durable.MANIFEST).exists()]
        if pending and (pending[0] / "feedback.db").exists():
            os.kill(proc.pid, signal.SIGKILL)
            killed_mid_write = True
            break
        time.sleep(0.002)
    proc.wait(timeout=30)
    if not killed_mid_write:
        pytest.skip("the snapshot finished before it could be interrupted")
    assert durable.latest_complete(store)[0] == first.path
    fresh = HomePaths(tmp_path / "fresh")
    durable.restore(fresh, store)
    assert _count(fresh.feedback_db) == 20
    conn = sqlite3.connect(fresh.feedback_db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
