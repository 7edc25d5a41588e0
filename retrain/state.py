"""The retrain's files under home: the one-run-at-a-time lock, and writing the progress file and the last run's
state (`core.registry.stages` reads them)."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

from core.registry.stages import Progress, RunRecord, Stage, read_history, state_payload
from core.registry.versions import write_json_atomic
from core.storage.locks import LockBusy, file_lock
from core.storage.paths import HomePaths
from feedback.database.shared_state import Busy, database_lock


class RetrainBusy(RuntimeError):
    """Another retrain holds the lock."""


@contextlib.contextmanager
def retrain_lock(paths: HomePaths, database_url: str = "") -> Iterator[None]:
    """Hold the one-retrain-at-a-time lock. The kernel drops it if this process dies, so it never sticks.

    With a shared PostgreSQL database the lock is also a server advisory lock, so one retrain runs across
    every machine (the server drops it when this process's connection does).
    """
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(file_lock(paths.retrain_lock, blocking=False))
            if database_url:
                stack.enter_context(database_lock(database_url))
        except (LockBusy, Busy):
            raise RetrainBusy("another retrain is running") from None
        yield


def write_progress(paths: HomePaths, stage: Stage, decision: str = "") -> None:
    """Where the current run is, for the admin view and for tests that interrupt a run (`core.registry.stages`)."""
    write_json_atomic(paths.retrain_progress, Progress(stage, time.time(), os.getpid(), decision).to_dict())


def record_run(paths: HomePaths, record: RunRecord) -> None:
    """Remember the last run (its decision and rules, and the newest feedback it saw, for `watch`), and add it
    to the runs' history (their durations give the admin view its expected duration)."""
    finished = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    record.finished_at = finished
    write_json_atomic(paths.retrain_state, state_payload(record, finished, read_history(paths)))
