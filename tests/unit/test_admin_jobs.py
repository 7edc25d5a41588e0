"""The admin view's job runner on a real home: the expected duration comes from this host's recorded runs, and a
retrain started elsewhere (another process holding the retrain lock and writing the progress file, as the CLI,
`watch` or another replica's view do) shows as running, keeps Retrain off, and is never doubled."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import gradio as gr

from core.registry.stages import (
    STALE_STAGE_S,
    Outcome,
    RowCounts,
    RunRecord,
    Stage,
    read_history,
    read_progress,
    running_run,
)
from core.settings.config import PROJECT_ROOT
from core.storage.paths import HomePaths
from retrain.state import record_run, write_progress
from testkit.fakes import FakeAdmin
from testkit.races import finish, retrain_elsewhere
from web.admin.jobs import DEFAULT_RETRAIN_S, RetrainJobs
from web.admin.overview_view import AdminDashboard, DashboardParts
from web.admin.report import duration_words, progress_html


def recorded(paths: HomePaths, seconds: float, decision: str = Outcome.REFUSED, trained: bool = True) -> None:
    """One finished run, written by the code a retrain writes its state with."""
    record = RunRecord(decision=decision, champion_before="v0001", challenger="v0002" if trained else None,
                       rows=RowCounts(feedback_train=10, base_train=100), seconds=seconds)
    record_run(paths, record)


def test_the_expected_duration_is_the_median_of_the_last_runs_that_trained(tmp_path: Path) -> None:
    paths = HomePaths(tmp_path / "home")
    jobs = RetrainJobs(paths)
    assert jobs.expected().seconds == DEFAULT_RETRAIN_S and jobs.expected().runs == 0
    assert "a first guess" in duration_words(jobs.expected())
    assert "a first guess: no run has stopped before training" in duration_words(jobs.expected(trains=False))

    durations = [900.0, 300.0, 420.0, 480.0, 2400.0, 450.0]  # one slow outlier, one old run beyond the window
    for i, seconds in enumerate(durations):
        recorded(paths, seconds, Outcome.PROMOTED if i % 2 else Outcome.REFUSED)
    recorded(paths, 4.0, trained=False)  # refused before training (no feedback): seconds, not a retrain's time
    recorded(paths, 30.0, Outcome.FAILED)  # failed mid-way: no measure of a whole run

    history = read_history(paths)
    assert [r.seconds for r in history] == [*durations, 4.0, 30.0]  # the state file keeps every run, in order
    expected = jobs.expected()
    assert expected.runs == 5 and expected.seconds == statistics.median(durations[-5:]) == 450.0
    assert jobs.expected_seconds() == 450.0
    assert duration_words(expected) == "about **8 min**, measured on this host (the median of its last 5 retrains)"
    # A run with nothing to train on stops before training: its estimate is such runs' measured time.
    stops = jobs.expected(trains=False)
    assert stops.runs == 1 and stops.seconds == 4.0 and not stops.trains
    assert duration_words(stops) == "about **4 s**, measured on this host (its last run that stopped before training)"
    assert jobs.last_run() is not None and jobs.last_run().decision == Outcome.FAILED  # the last run is still the last


def test_the_history_is_bounded_and_survives_an_old_state_file(tmp_path: Path) -> None:
    paths = HomePaths(tmp_path / "home")
    paths.home.mkdir(parents=True)
    # A state file from before the history: its one run counts.
    old = RunRecord(decision=Outcome.PROMOTED, champion_before="v0001", challenger="v0002", seconds=610.0)
    paths.retrain_state.write_text(json.dumps({"last_run": old.as_dict(), "finished_at": "2026-01-01T00:00:00Z"}))
    assert RetrainJobs(paths).expected().seconds == 610.0
    for i in range(30):
        recorded(paths, 100.0 + i)
    history = read_history(paths)
    assert len(history) == 20 and history[-1].seconds == 129.0




def test_a_retrain_started_elsewhere_shows_keeps_retrain_off_and_is_not_doubled(tmp_path: Path) -> None:
    paths = HomePaths(tmp_path / "home")
    for seconds in (200.0, 240.0, 260.0):
        recorded(paths, seconds)
    jobs = RetrainJobs(paths)
    assert not jobs.status().running

    with retrain_elsewhere(paths.home) as other:
        found = running_run(paths)
        assert found is not None and found.pid == other.pid and found.stage == Stage.TRAINING
        status = jobs.status()
        assert status.running and status.elsewhere == other.pid and status.step == Stage.TRAINING
        assert Stage.TRAINING.start * 100 <= status.percent < Stage.EXPORT.start * 100
        assert status.seconds_left is not None and status.seconds_left <= 240.0
        shown = progress_html(status)
        assert "Training the challenger" in shown and f"started elsewhere (process {other.pid})" in shown

        # The view does not start a second one: no child process, a message saying why.
        message = jobs.start("run")
        assert message.startswith("A retrain started elsewhere is running") and str(other.pid) in message
        assert jobs._job is None and not paths.logs_dir.exists()

        parts = DashboardParts(*(f.name for f in fields(DashboardParts)))  # names stand in for the components
        dash = AdminDashboard(FakeAdmin(jobs=jobs), parts)  # type: ignore[arg-type]
        seen = dash.look_for_runs(None)  # type: ignore[arg-type]
        assert seen[parts.retrain_btn]["interactive"] is False and seen[parts.start_btn]["interactive"] is False
        assert seen[parts.timer].active and not seen[parts.watch].active  # polling takes over from watching
        assert "started elsewhere" in seen[parts.progress]
        finish(other)
    progress = read_progress(paths)
    assert progress is not None and progress.stage == Stage.DONE
    idle = dash.look_for_runs(None)  # type: ignore[arg-type]
    # Nothing changes, and every output is named (skipped): an empty answer is a Gradio error at each tick.
    assert not jobs.status().running and set(idle) == set(dash.outputs)
    assert all(value == gr.skip() for value in idle.values())
    ended = dash.job_state(jobs.status())
    assert ended[parts.retrain_btn]["interactive"] is True and ended[parts.watch].active


def test_a_killed_run_leaves_its_stage_but_is_not_running(tmp_path: Path) -> None:
    paths = HomePaths(tmp_path / "home")
    with retrain_elsewhere(paths.home):
        pass  # killed on leaving, mid-training
    progress = read_progress(paths)
    assert progress is not None and progress.stage == Stage.TRAINING  # what the dead run left
    assert running_run(paths) is None and not RetrainJobs(paths).status().running


def test_a_run_in_this_process_announces_itself_too(tmp_path: Path) -> None:
    paths = HomePaths(tmp_path / "home")
    write_progress(paths, Stage.GATE)  # as `retrain.run.retrain` does when called in-process (tests, bench)
    status = RetrainJobs(paths).status()
    assert status.running and status.step == Stage.GATE and status.elsewhere > 0
    write_progress(paths, Stage.DONE, "promoted")
    assert not RetrainJobs(paths).status().running


def test_a_stage_older_than_any_run_counts_only_while_the_lock_is_held(tmp_path: Path) -> None:
    """A killed run's pid may be reused by another process: past STALE_STAGE_S the lock must agree."""
    paths = HomePaths(tmp_path / "home")
    write_progress(paths, Stage.TRAINING)  # by this (live) process
    data = json.loads(paths.retrain_progress.read_text())
    paths.retrain_progress.write_text(json.dumps(data | {"at": data["at"] - STALE_STAGE_S - 60}))
    assert running_run(paths) is None  # a live pid, an ancient stage, nobody holding the lock
    holder = subprocess.Popen([sys.executable, "-c", LOCK_ONLY, str(paths.home)], cwd=PROJECT_ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        found = running_run(paths)
        assert found is not None and found.stage == Stage.TRAINING
    finally:
        holder.kill()
        holder.wait()
    assert running_run(paths) is None


LOCK_ONLY = """
import sys
from pathlib import Path
from core.storage.paths import HomePaths
from retrain.state import retrain_lock
with retrain_lock(HomePaths(Path(sys.argv[1]))):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_a_label_error_search_is_named_as_such_by_the_retrain_preview_and_the_buttons(tmp_path: Path) -> None:
    """Issue 59: during a label-error search the retrain preview said "A retrain is already running"."""
    from core.registry.versions import ModelRegistry
    from feedback.store import FeedbackStore
    from web.admin.actions import AdminActions
    from web.server.identity import IdentityService

    jobs = RetrainJobs(HomePaths(tmp_path / "home"))
    jobs._job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # the search, still running
    jobs._args = ("label-errors",)
    try:
        status = jobs.status()
        assert status.running and not status.retraining and status.what == "a label-error search"
        admin = AdminActions(FeedbackStore(tmp_path / "feedback.db"),
                             registry=ModelRegistry(tmp_path / "models"), jobs=jobs,
                             identities=IdentityService(b"a-jobs-test-key-of-32-bytes....."))
        preview = AdminActions.retrain_preview.__wrapped__(admin, request=None)  # type: ignore[attr-defined]
        assert preview[0] == ("A label-error search is running (`newsloop label-errors`): a retrain can start when it "
                              "ends.")
        assert jobs.start("run") == "A label-error search is running: a retrain can start when it ends."
        parts = DashboardParts(*(f.name for f in fields(DashboardParts)))
        button = AdminDashboard(admin, parts).job_state(status)[parts.retrain_btn]
        assert button["value"] == "Retrain… (a label-error search is running)" and button["interactive"] is False
    finally:
        jobs._job.kill()
        jobs._job.wait()
