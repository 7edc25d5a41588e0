"""A retrain's stages and its record, shared by the run that writes them (`retrain.run`, `retrain.state`) and
the pages that read them (`web.admin.jobs`, the admin view): one list of stages, one reader per file."""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, TypedDict, cast

from core.evaluation.decision import GateResult, Rule, RuleResult, describe
from core.storage.locks import is_locked
from core.storage.paths import HomePaths


class Stage(StrEnum):
    """Where a retrain is, in order. The run writes each to the progress file as it enters it."""

    SNAPSHOT = "snapshot"
    TRAINING = "training"
    EXPORT = "export"
    GATE = "gate"
    PROMOTE = "promote"
    DONE = "done"

    @property
    def start(self) -> float:
        """Where the stage starts as a share of a whole run (training dominates)."""
        return _START[self]

    @property
    def caption(self) -> str:
        """The stage in words, for the page (not `title`: that is str's own method)."""
        return _TITLE[self]

    @property
    def following(self) -> float:
        """Where the next stage starts (1.0 after the last)."""
        later = [s.start for s in Stage if s.start > self.start]
        return min(later, default=1.0)


_START = {Stage.SNAPSHOT: 0.02, Stage.TRAINING: 0.10, Stage.EXPORT: 0.80, Stage.GATE: 0.90, Stage.PROMOTE: 0.97,
          Stage.DONE: 1.0}
_TITLE = {Stage.SNAPSHOT: "Saving the feedback", Stage.TRAINING: "Training the challenger",
          Stage.EXPORT: "Exporting and checking it", Stage.GATE: "Comparing it with the champion",
          Stage.PROMOTE: "Putting it in service", Stage.DONE: "Done"}


class Outcome(StrEnum):
    PROMOTED = "promoted"
    REFUSED = "refused"
    FAILED = "failed"


class RowCounts(TypedDict, total=False):
    """Rows a run used, by part (a TypedDict: a type checker refuses a misspelt key)."""

    base_train: int
    feedback_train: int
    feedback_holdout: int
    traffic: int
    base_validation: int
    golden: int


def _row_counts(raw: dict[str, Any]) -> RowCounts:
    """RowCounts from a record's JSON: its known keys only, as ints (keys of older or newer records dropped)."""
    return cast(RowCounts, {key: int(value) for key, value in raw.items() if key in RowCounts.__annotations__})


@dataclass(frozen=True)
class Progress:
    """The progress file: the stage the run is in, since when, and (at DONE) how it ended."""

    stage: Stage
    at: float
    pid: int = 0
    decision: str = ""  # an Outcome value once stage is DONE

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.stage.value, "at": self.at, "pid": self.pid, "decision": self.decision}


@dataclass
class RunRecord:
    """One retrain's outcome and every number behind it; the state file keeps the last one.

    `checks` are the run's own rules (a champion to compare with, feedback to train on, the champion
    unchanged at promotion); `gate` the gate's. `reasons` are the failed rules in English (and, for a
    failed run, its error), for the CLI, logs and the registry's history; pages render from the records.
    """

    decision: str = Outcome.FAILED.value
    reasons: list[str] = field(default_factory=list)
    champion_before: str | None = None
    challenger: str | None = None
    champion_after: str | None = None
    rows: RowCounts = field(default_factory=lambda: RowCounts())
    gate: GateResult | None = None
    checks: list[RuleResult] = field(default_factory=list)
    seconds: float = 0.0
    mlflow_run_id: str | None = None
    last_answer_id: int = 0
    error: str = ""
    finished_at: str = ""
    # The maintainer's label fixes the run read through: live ones, and how many base training and validation rows
    # they touched; while they touch validation, both models' scores on it as labelled and as corrected.
    label_fixes: dict[str, int] = field(default_factory=dict)
    validation_scores: dict[str, Any] = field(default_factory=dict)

    @property
    def rules(self) -> list[RuleResult]:
        """Every rule checked, in order: the run's checks, with the gate's before the final one."""
        gate = list(self.gate.rules) if self.gate else []
        late = [r for r in self.checks if r.rule == Rule.CHAMPION_UNCHANGED]
        return [r for r in self.checks if r.rule != Rule.CHAMPION_UNCHANGED] + gate + late

    @property
    def failed_rules(self) -> list[RuleResult]:
        return [r for r in self.rules if not r.passed]

    def refresh_reasons(self) -> None:
        """Set `reasons` from the failed rules (and the error)."""
        self.reasons = [describe(r) for r in self.failed_rules] + ([self.error] if self.error else [])

    def as_dict(self) -> dict[str, Any]:
        return {
            "decision": str(self.decision),
            "reasons": list(self.reasons),
            "champion_before": self.champion_before,
            "challenger": self.challenger,
            "champion_after": self.champion_after,
            "rows": dict(self.rows),
            "gate": self.gate.to_dict() if self.gate else None,
            "checks": [r.to_dict() for r in self.checks],
            "seconds": self.seconds,
            "mlflow_run_id": self.mlflow_run_id,
            "last_answer_id": self.last_answer_id,
            "error": self.error,
            "label_fixes": dict(self.label_fixes),
            "validation_scores": dict(self.validation_scores),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], finished_at: str = "") -> RunRecord:
        gate = data.get("gate")
        return cls(
            decision=str(Outcome(data["decision"])),
            reasons=[str(r) for r in data.get("reasons") or []],
            champion_before=data.get("champion_before"),
            challenger=data.get("challenger"),
            champion_after=data.get("champion_after"),
            rows=_row_counts(data.get("rows") or {}),
            gate=GateResult.from_dict(gate) if gate else None,
            checks=[RuleResult.from_dict(r) for r in data.get("checks") or []],
            seconds=float(data.get("seconds") or 0.0),
            mlflow_run_id=data.get("mlflow_run_id"),
            last_answer_id=int(data.get("last_answer_id") or 0),
            error=str(data.get("error") or ""),
            finished_at=finished_at,
            label_fixes={str(k): int(v) for k, v in (data.get("label_fixes") or {}).items()},
            validation_scores=dict(data.get("validation_scores") or {}),
        )


HISTORY_KEPT = 20  # finished runs the state file remembers (for the expected duration)
DURATION_RUNS = 5  # the expected duration is the median of this many recent runs that trained
STALE_STAGE_S = 6 * 3600.0  # no stage takes this long: past it, a live pid may be another process's (reused)


@dataclass(frozen=True)
class PastRun:
    """A finished run in the state file's history: when, how it ended, how long it took."""

    finished_at: str
    decision: str
    seconds: float
    trained: bool  # a challenger was trained: a run refused before training takes seconds, not minutes

    @classmethod
    def of(cls, record: RunRecord, finished_at: str) -> PastRun:
        return cls(finished_at, str(record.decision), float(record.seconds), bool(record.challenger))


def expected_seconds(history: Sequence[PastRun], runs: int = DURATION_RUNS, *, trained: bool = True) -> tuple[float, int] | None:
    """How long a retrain takes on this host: the median measured duration of the last `runs` runs that trained a
    challenger (with `trained=False`: that stopped before training, which takes seconds, not minutes) and did not
    fail, and how many runs that is; None before the first. The median, so one run slowed by a busy machine (or
    one cut short) does not set the estimate. Not scaled by rows: training runs to a time budget, and the base
    rows it replays, which dominate, are the same from run to run."""
    durations = [r.seconds for r in history if r.trained == trained and r.decision != Outcome.FAILED and r.seconds > 0]
    recent = durations[-runs:]
    return (statistics.median(recent), len(recent)) if recent else None


def read_history(paths: HomePaths) -> list[PastRun]:
    """The finished runs the state file remembers, oldest first (a file from before the history: its last run)."""
    data = _read_json(paths.retrain_state)
    try:
        if "history" in data:
            return [PastRun(str(r["finished_at"]), str(r["decision"]), float(r["seconds"]), bool(r["trained"]))
                    for r in data["history"]]
        last = read_last_run(paths)
        return [PastRun.of(last, last.finished_at)] if last else []
    except (KeyError, TypeError, ValueError):
        return []


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs on this host (the progress file's writer: same home, same host)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, under another user
        return True
    return True


def running_run(paths: HomePaths) -> Progress | None:
    """The retrain the progress file announces, while it runs: its stage is not DONE and the process that
    wrote it is alive. Any run on this home writes the file (the CLI, `watch`, another replica's admin view),
    so this sees them all; a run killed mid-way leaves its stage behind, but not its process. A stage older
    than STALE_STAGE_S counts only while the retrain lock is held (its pid may have been reused since)."""
    progress = read_progress(paths)
    if progress is None or progress.stage == Stage.DONE or not pid_alive(progress.pid):
        return None
    if time.time() - progress.at > STALE_STAGE_S and not is_locked(paths.retrain_lock):
        return None
    return progress


def read_progress(paths: HomePaths) -> Progress | None:
    """The progress file, or None when there is none or it cannot be read (a run mid-write, an old format)."""
    data = _read_json(paths.retrain_progress)
    try:
        return Progress(Stage(data["stage"]), float(data.get("at", 0.0)), int(data.get("pid", 0)),
                        str(data.get("decision", "")))
    except (KeyError, TypeError, ValueError):
        return None


def read_last_run(paths: HomePaths) -> RunRecord | None:
    """The last finished run as the state file holds it; None when no run finished or the record is unreadable
    (written by an older version: the next run replaces it)."""
    data = _read_json(paths.retrain_state)
    try:
        return RunRecord.from_dict(data["last_run"], finished_at=str(data.get("finished_at", "")))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def state_payload(record: RunRecord, finished_at: str, earlier: Sequence[PastRun] = ()) -> dict[str, Any]:
    """The state file's content for `record` (what `read_last_run` reads back), with the history of the
    `earlier` runs and this one (what `read_history` reads back)."""
    history = [*earlier, PastRun.of(record, finished_at)][-HISTORY_KEPT:]
    return {"last_run": record.as_dict(), "finished_at": finished_at, "history": [asdict(r) for r in history]}


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
