"""The admin view's job runner: one `python -m retrain ...` child process at a time, its log, and retrain progress."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.config import PROJECT_ROOT
from core.paths import HomePaths

# Where each stage `retrain/run.py` reports starts, as a share of a whole run (training dominates).
STAGE_START = {"snapshot": 0.02, "training": 0.10, "export": 0.80, "gate": 0.90}
STAGE_NAMES = {"snapshot": "Saving the feedback", "training": "Training the challenger",
               "export": "Exporting and checking it", "gate": "Comparing it with the champion"}
# A first run's duration guess: the retrain's default training budget (8 min) plus evaluation and export.
DEFAULT_RETRAIN_S = 600.0


@dataclass(frozen=True)
class JobStatus:
    """The job started here, as the admin view shows it."""

    command: str  # "run", "rollback", or "" when none was started
    running: bool
    exit_code: int | None
    stage: str  # a retrain's stage in words
    percent: float  # 0-100, estimated from the stage and the time spent
    seconds_left: float | None
    log_tail: str


class RetrainJobs:
    """Starts retrain commands as child processes, so the training code (torch) never loads into the server."""

    def __init__(self, paths: HomePaths) -> None:
        self.paths = paths
        self._job: subprocess.Popen[bytes] | None = None
        self._job_log: Path | None = None
        self._lock = threading.Lock()
        self._args: tuple[str, ...] = ()
        self._started = 0.0

    def start(self, *args: str) -> str:
        """Start `python -m retrain ARGS` unless a job is still running; returns the message to show."""
        with self._lock:
            if self._job is not None and self._job.poll() is None:
                return "A job is already running."
            logs = self.paths.logs_dir
            logs.mkdir(parents=True, exist_ok=True)
            log_file = (logs / f"{args[0]}-{time.strftime('%Y%m%d-%H%M%S')}.log").open("wb")
            self._job = subprocess.Popen(
                [sys.executable, "-m", "retrain", *args], stdout=log_file, stderr=subprocess.STDOUT, cwd=PROJECT_ROOT
            )
            self._job_log = Path(log_file.name)
            self._args, self._started = args, time.time()
            return f"Started `retrain {' '.join(args)}`."

    def progress(self) -> str:
        """The last retrain stage the retrain wrote, and the state and log tail of the job started here."""
        progress_file = self.paths.retrain_progress
        lines = []
        if progress_file.is_file():
            lines.append("Last retrain stage: " + json.loads(progress_file.read_text()).get("stage", "?"))
        job, job_log = self._job, self._job_log
        if job is not None:
            state = "running" if job.poll() is None else f"finished (exit {job.returncode})"
            tail = job_log.read_text(errors="replace")[-1500:] if job_log is not None and job_log.is_file() else ""
            lines.append(f"Job {state}.\n{tail}")
        return "\n".join(lines)

    def last_run(self) -> dict[str, Any]:
        """The last finished retrain as `retrain/state.py` recorded it (decision, reasons, rows, gate, seconds)."""
        try:
            return json.loads(self.paths.retrain_state.read_text()).get("last_run") or {}
        except (FileNotFoundError, ValueError):
            return {}

    def expected_seconds(self) -> float:
        """How long a retrain should take here: the last run's duration, else DEFAULT_RETRAIN_S."""
        seconds = self.last_run().get("seconds")
        return float(seconds) if isinstance(seconds, int | float) and seconds > 0 else DEFAULT_RETRAIN_S

    def wait(self, timeout_s: float) -> int | None:
        """Wait up to `timeout_s` for the job started here; its exit code, or None while it still runs."""
        job = self._job
        if job is None:
            return None
        try:
            return job.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def status(self) -> JobStatus:
        job, job_log = self._job, self._job_log
        if job is None:
            return JobStatus("", False, None, "", 0.0, None, "")
        code = job.poll()
        tail = job_log.read_text(errors="replace")[-4000:] if job_log is not None and job_log.is_file() else ""
        # Whole lines only: a tail cut mid-word reads as garbage.
        tail = "\n".join(tail.splitlines()[1:] if len(tail) >= 4000 else tail.splitlines())[-1500:]
        stage, percent, left = "", 100.0 if code is not None else 0.0, None
        if self._args[:1] == ("run",) and code is None:
            name = ""
            if self.paths.retrain_progress.is_file():
                try:
                    progress = json.loads(self.paths.retrain_progress.read_text())
                except ValueError:
                    progress = {}
                if float(progress.get("at", 0)) >= self._started - 1:
                    name = str(progress.get("stage", ""))
            expected, elapsed = self.expected_seconds(), time.time() - self._started
            start = STAGE_START.get(name, 0.0)
            following = min([v for v in STAGE_START.values() if v > start], default=1.0)
            percent = 100 * min(following - 0.01, max(start, elapsed / expected))
            stage = STAGE_NAMES.get(name, "Starting")
            left = max(expected - elapsed, 0.0)
        return JobStatus(" ".join(self._args), code is None, code, stage, percent, left, tail)
