"""When to snapshot: every interval, soon after the champion changes, and once more on SIGTERM."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from core.registry.versions import ModelRegistry
from core.storage.durable import SnapshotReport, restore, take_snapshot
from core.storage.paths import HomePaths

log = logging.getLogger(__name__)

_CHAMPION_POLL_S = 5.0  # how soon a promotion or rollback reaches the durable copy


def restore_if_fresh(paths: HomePaths, durable: Path) -> Path | None:
    """On a host whose local disk was wiped (no feedback database), rebuild the state from `durable`.

    A host that kept its local state is newer than any snapshot, so it is left alone.
    """
    if paths.feedback_db.exists() or paths.registry_record.exists():
        return None
    return restore(paths, durable)


class SnapshotSchedule:
    """A daemon thread that snapshots `paths` to `durable` every `interval_s` and after champion changes."""

    def __init__(self, paths: HomePaths, durable: Path, interval_s: float, *, keep: int = 3) -> None:
        self.paths, self.durable, self.interval_s, self.keep = paths, Path(durable), interval_s, keep
        self._registry = ModelRegistry(paths.models_dir)
        self._lock = threading.Lock()  # one snapshot at a time: the timer, a promotion and SIGTERM may coincide
        self._stop = threading.Event()

    def snapshot(self, reason: str) -> SnapshotReport | None:
        with self._lock:
            try:
                report = take_snapshot(self.paths, self.durable, keep=self.keep)
            except Exception:
                log.exception("snapshot (%s) failed; the local state is untouched", reason)
                return None
            log.info("snapshot (%s) written to %s", reason, report.path)
            return report

    def _run(self) -> None:
        marker = self._registry.marker()
        waited = 0.0
        while not self._stop.wait(min(_CHAMPION_POLL_S, self.interval_s)):
            waited += min(_CHAMPION_POLL_S, self.interval_s)
            current = self._registry.marker()
            if current != marker:
                marker = current
                self.snapshot("champion changed")
                waited = 0.0
            elif waited >= self.interval_s:
                self.snapshot("interval")
                waited = 0.0

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self._run, name="snapshots", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self._stop.set()

    def snapshot_on_sigterm(self) -> None:
        """Take a last snapshot when the host stops the process (SIGTERM), then exit."""
        previous = signal.getsignal(signal.SIGTERM)

        def handler(signum: int, frame: FrameType | None) -> None:
            self.stop()
            self.snapshot("SIGTERM")
            if callable(previous) and previous not in (signal.SIG_DFL, signal.SIG_IGN):
                previous(signum, frame)
            sys.exit(0)

        signal.signal(signal.SIGTERM, handler)
