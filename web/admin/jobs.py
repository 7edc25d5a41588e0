"""The admin view's job runner: one `python -m retrain ...` child process at a time, its log, and retrain progress."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from core.host.cpu_share import BESIDE_SERVING_ENV
from core.registry.stages import (
    Progress,
    RunRecord,
    Stage,
    expected_seconds,
    read_history,
    read_last_run,
    read_progress,
    running_run,
)
from core.settings.config import PROJECT_ROOT
from core.storage.paths import HomePaths

# A first run's duration guess: the retrain's default training budget (8 min) plus evaluation and export.
DEFAULT_RETRAIN_S = 600.0
# A first guess for a run with nothing to train on: it backs the database up, loads the base data and stops.
DEFAULT_STOP_S = 30.0


@dataclass(frozen=True)
class Expected:
    """How long a retrain should take here, and from how many of this host's measured past runs (0: a first guess,
    DEFAULT_RETRAIN_S or DEFAULT_STOP_S)."""

    seconds: float
    runs: int
    trains: bool = True  # whether the run estimated trains a model (False: it stops before training)


def run_percent(step: Stage | None, elapsed: float, expected: float) -> float:
    """A running retrain's progress, 0-100: time moves the bar on within a stage, but never into the next
    stage's share before the run says it got there."""
    if step == Stage.DONE:
        return 100.0
    start = step.start if step else 0.0
    following = step.following if step else Stage.SNAPSHOT.start
    return 100 * min(following - 0.01, max(start, elapsed / expected))


# Each job the view starts, in words (by its first argument): what a message about it names.
JOB_NAMES = {"run": "a retrain", "label-errors": "a label-error search", "rollback": "a rollback"}


def job_name(command: str) -> str:
    """A job in words: "a retrain", "a label-error search"; `retrain ARGS` for one without a name."""
    return JOB_NAMES.get(command.split(" ")[0], f"`retrain {command}`")


@dataclass(frozen=True)
class JobStatus:
    """The job started here, as the admin view shows it."""

    command: str  # "run", "rollback", or "" when none was started
    running: bool
    exit_code: int | None
    stage: str  # a retrain's stage in words (`core.registry.stages.Stage.caption`), "" for other jobs
    percent: float  # 0-100, estimated from the stage and the time spent
    seconds_left: float | None  # None when not a running retrain; 0 when it runs past the expected time
    log_tail: str
    step: Stage | None = None  # the retrain's stage itself
    decision: str = ""  # how the retrain ended, once its stage is DONE
    elsewhere: int = 0  # the process id of a retrain this view did not start (the CLI, `watch`, another replica)

    @property
    def what(self) -> str:
        """The job in words: "a retrain", "a label-error search", "a rollback"."""
        return job_name(self.command)

    @property
    def retraining(self) -> bool:
        """Whether the job running is a retrain (not a search or a rollback)."""
        return self.running and self.command.split(" ")[0] == "run"


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
        """Start `python -m retrain ARGS` unless a job is still running, here or (a retrain) anywhere on this
        home; returns the message to show."""
        with self._lock:
            if self._job is not None and self._job.poll() is None:
                running = job_name(" ".join(self._args))
                return f"{running[:1].upper()}{running[1:]} is running: {job_name(args[0])} can start when it ends."
            other = running_run(self.paths)
            if other is not None:
                return (f"A retrain started elsewhere is running (process {other.pid}, {other.stage.caption.lower()}): "
                        "wait for it to finish.")
            logs = self.paths.logs_dir
            logs.mkdir(parents=True, exist_ok=True)
            log_path = logs / f"{args[0]}-{time.strftime('%Y%m%d-%H%M%S')}.log"
            with log_path.open("wb") as log_file:  # the child holds its own copy of the descriptor
                # A retrain started here shares the app's cores: it trains on one fewer (core.host.cpu_share).
                self._job = subprocess.Popen(
                    [sys.executable, "-m", "retrain", *args], stdout=log_file, stderr=subprocess.STDOUT,
                    cwd=PROJECT_ROOT, env=os.environ | BESIDE_SERVING_ENV,
                )
            self._job_log = log_path
            self._args, self._started = args, time.time()
            return f"Started `retrain {' '.join(args)}`."

    def last_run(self) -> RunRecord | None:
        """The last finished retrain as the state file records it (`core.registry.stages.read_last_run`)."""
        return read_last_run(self.paths)

    def expected(self, trains: bool = True) -> Expected:
        """How long a retrain should take here: the median measured duration of this host's recent runs of the same
        kind, trained or stopped before training (`core.registry.stages.expected_seconds`), else a first guess."""
        found = expected_seconds(read_history(self.paths), trained=trains)
        if found:
            return Expected(*found, trains=trains)
        return Expected(DEFAULT_RETRAIN_S if trains else DEFAULT_STOP_S, 0, trains=trains)

    def expected_seconds(self) -> float:
        return self.expected().seconds

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
        """The job started here while it runs; else a retrain running elsewhere on this home; else how the
        job started here ended."""
        job, job_log = self._job, self._job_log
        code = job.poll() if job is not None else None
        if job is None or code is not None:
            other = running_run(self.paths)
            if other is not None and (job is None or other.pid != job.pid):
                return self._elsewhere(other)
        if job is None:
            return JobStatus("", False, None, "", 0.0, None, "")
        tail = job_log.read_text(errors="replace")[-4000:] if job_log is not None and job_log.is_file() else ""
        # Whole lines only: a tail cut mid-word reads as garbage.
        tail = "\n".join(tail.splitlines()[1:] if len(tail) >= 4000 else tail.splitlines())[-1500:]
        if self._args[:1] != ("run",) or code is not None:
            return JobStatus(" ".join(self._args), code is None, code, "", 100.0 if code is not None else 0.0, None, tail)
        progress = read_progress(self.paths)
        step = progress.stage if progress is not None and progress.at >= self._started - 1 else None
        expected, elapsed = self.expected_seconds(), time.time() - self._started
        return JobStatus(
            " ".join(self._args), True, None, step.caption if step else "Starting", run_percent(step, elapsed, expected),
            max(expected - elapsed, 0.0), tail, step, progress.decision if step == Stage.DONE and progress else "",
        )

    def _elsewhere(self, progress: Progress) -> JobStatus:
        """A retrain this view did not start, as its progress file tells it. Its start time is not written
        down, so the time spent is reckoned from where its stage starts plus the time spent in the stage."""
        expected = self.expected_seconds()
        elapsed = expected * progress.stage.start + max(time.time() - progress.at, 0.0)
        return JobStatus("run", True, None, progress.stage.caption, run_percent(progress.stage, elapsed, expected),
                         max(expected - elapsed, 0.0), "", progress.stage, elsewhere=progress.pid)
