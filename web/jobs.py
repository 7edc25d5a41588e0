"""The admin view's job runner: one `python -m retrain ...` child process at a time, its log, and retrain progress."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from core.config import PROJECT_ROOT
from core.paths import HomePaths


class RetrainJobs:
    """Starts retrain commands as child processes, so the training code (torch) never loads into the server."""

    def __init__(self, paths: HomePaths) -> None:
        self.paths = paths
        self._job: subprocess.Popen[bytes] | None = None
        self._job_log: Path | None = None
        self._lock = threading.Lock()

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
