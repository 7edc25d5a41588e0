"""The admin overview is honest about a running job: Retrain is off while one runs, polling stops when it ends,
and the job's earlier messages ("A job is already running.") are cleared then."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import gradio as gr

from core.registry.versions import ModelRegistry
from testkit.fakes import FakeAdmin
from web.admin.jobs import JobStatus
from web.admin.overview_view import AdminDashboard, DashboardParts

RUNNING = JobStatus("run", True, None, "Training the challenger", 40.0, 300.0, "")
ENDED = JobStatus("run", False, 0, "", 100.0, None, "")


class Jobs:
    def __init__(self, status: JobStatus, home: Path) -> None:
        self.now = status
        self.paths = home

    def status(self) -> JobStatus:
        return self.now

    def last_run(self) -> None:
        return None


def dashboard(tmp_path: Path, admin: bool = True) -> tuple[AdminDashboard, DashboardParts, Any]:
    """The overview over no store, a registry and a running job; a caller who is (or is not) an admin."""
    parts = DashboardParts(*(f.name for f in fields(DashboardParts)))  # names stand in for the components
    actions = FakeAdmin(admin=admin, registry=ModelRegistry(tmp_path / "models"), jobs=Jobs(RUNNING, tmp_path))
    return AdminDashboard(actions, parts), parts, actions  # type: ignore[arg-type]


def test_retrain_is_off_while_a_job_runs_and_back_when_it_ends(tmp_path: Path) -> None:
    dash, parts, admin = dashboard(tmp_path)
    running = dash.poll(None)  # type: ignore[arg-type]
    assert running[parts.retrain_btn]["interactive"] is False and running[parts.start_btn]["interactive"] is False
    assert "one is running" in running[parts.retrain_btn]["value"]
    assert isinstance(running[parts.timer], gr.Timer) and running[parts.timer].active
    assert parts.job_msg not in running  # the "started" message stays while it runs
    assert "Training the challenger" in running[parts.progress]

    admin.jobs.now = ENDED
    ended = dash.poll(None)  # type: ignore[arg-type]
    assert ended[parts.job_msg] == ""  # "A job is already running." does not outlive the job
    assert ended[parts.retrain_btn]["interactive"] is True and not ended[parts.timer].active
    assert parts.tiles in ended and parts.versions in ended  # the whole overview, refreshed at once
    assert set(dash.overview(None)) >= {parts.tiles, parts.retrain_btn, parts.rollback_btn}  # type: ignore[arg-type]


def test_strangers_get_nothing_but_the_sign_in_line(tmp_path: Path) -> None:
    dash, parts, _ = dashboard(tmp_path, admin=False)
    assert dash.overview(None) == {parts.status_line: "Sign in first."}  # type: ignore[arg-type]
    stopped = dash.poll(None)  # type: ignore[arg-type]
    assert set(stopped) == {parts.status_line, parts.timer} and not stopped[parts.timer].active
