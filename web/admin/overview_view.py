"""The admin view's overview: tiles, plots, the last decision, the job's progress and the buttons' state, filled
after sign-in and after every action, and polled while a job runs."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import gradio as gr

from web.admin import plots, report
from web.admin.actions import AdminActions
from web.admin.guard import admin_only

POLL_S = 3.0  # how often the view refreshes itself while a job runs
WATCH_S = 10.0  # how often a signed-in view looks for a retrain started elsewhere (the CLI, `watch`, a replica)


@dataclass
class DashboardParts:
    """The components the overview fills (a handler returns {component: value} for those it changes)."""

    status_line: Any
    tiles: Any
    history: Any
    confusion: Any
    versions: Any
    per_day: Any
    traffic_alert: Any
    traffic_plot: Any
    drift: Any
    progress: Any
    decision: Any
    numbers: Any
    retrain_btn: Any
    start_btn: Any
    rollback_btn: Any
    job_msg: Any
    timer: Any  # ticks every POLL_S while a job runs
    watch: Any  # ticks every WATCH_S otherwise, to notice a retrain started elsewhere

    def all(self) -> list[Any]:
        return [getattr(self, f.name) for f in fields(self)]


class AdminDashboard:
    """The overview's handlers, each wrapped in `admin_only`."""

    def __init__(self, admin: AdminActions, parts: DashboardParts) -> None:
        self.admin = admin
        self.parts = parts

    @property
    def outputs(self) -> list[Any]:
        return self.parts.all()

    @admin_only(lambda self: {self.parts.status_line: "Sign in first."})
    def overview(self, request: gr.Request, profile: gr.OAuthProfile | None = None) -> dict[Any, Any]:
        """Everything the panel shows ("Sign in first." in the status line for strangers, nothing else)."""
        p = self.parts
        admin, store = self.admin, self.admin.store
        stats = store.stats() if store else {}
        status = admin.registry.status()
        meta = status.get("champion_meta") or {}
        days = store.answers.per_day(30) if store else {}
        pool_left = store.pool.items_left(admin.trust.labels_required) if store else 0
        record = admin.jobs.last_run()
        previous = status["previous"]
        job = admin.jobs.status()
        decision, numbers = self.decision()
        traffic = admin.traffic()
        names = admin.model_names(meta)
        return {
            p.status_line: f"Champion **{status['champion'] or 'none'}** · updated {report.now()}",
            p.tiles: report.tiles(stats, admin.trusted_parts(), pool_left),
            p.history: report.history_rows(status["events"]),
            p.confusion: plots.confusion_figure(meta.get("validation", {}).get("confusion_matrix") or [], names),
            p.versions: plots.versions_figure(plots.version_scores(admin.registry, record),
                                              plots.significance_note(record)),
            p.per_day: plots.per_day_figure(days),
            p.traffic_alert: report.alert_markdown(traffic.check) if traffic else "There is no feedback store here.",
            p.traffic_plot: plots.traffic_figure(traffic.points, traffic.check) if traffic else None,
            p.drift: report.drift_markdown(traffic.check, names) if traffic else "",
            p.decision: decision,
            p.numbers: numbers,
            p.rollback_btn: gr.update(interactive=bool(previous),
                                      value=f"Roll back to {previous[0]}" if previous else "Nothing to roll back to"),
            **self.job_state(job),
        }

    def decision(self) -> tuple[str, Any]:
        """The last run's decision in words, and its numbers for the accordion beside it."""
        run = self.admin.jobs.last_run()
        return report.decision_text(run), report.decision_numbers(run)

    def job_state(self, job: Any) -> dict[Any, Any]:
        """Progress, and the buttons a running job disables (one retrain at a time: Retrain is off meanwhile)."""
        p = self.parts
        running = bool(job.running)
        label = ("Retrain… (one is running)" if job.retraining else f"Retrain… ({job.what} is running)") if running \
            else "Retrain…"
        return {
            p.progress: report.progress_html(job),
            p.retrain_btn: gr.update(interactive=not running, value=label),
            p.start_btn: gr.update(interactive=not running),
            p.timer: gr.Timer(active=running),
            p.watch: gr.Timer(active=not running),
        }

    @admin_only(lambda self: {self.parts.watch: gr.Timer(active=False)})
    def look_for_runs(self, request: gr.Request, profile: gr.OAuthProfile | None = None) -> dict[Any, Any]:
        """While no job runs: nothing changes, until a retrain starts anywhere on this home; then its progress,
        Retrain off, and the polling on (`poll` takes over)."""
        job = self.admin.jobs.status()
        # Every output named, skipped when nothing changed: Gradio reads an empty dict as one missing value
        # per output and raises an error toast and badges at each idle tick.
        return self.job_state(job) if job.running else self.unchanged()

    def unchanged(self) -> dict[Any, Any]:
        """An answer that changes none of the overview's components."""
        return {component: gr.skip() for component in self.outputs}

    @admin_only(lambda self: {self.parts.status_line: "Sign in first.", self.parts.timer: gr.Timer(active=False)})
    def poll(self, request: gr.Request, profile: gr.OAuthProfile | None = None) -> dict[Any, Any]:
        """While a job runs: its progress and the buttons; once it ended, the whole overview, the job's earlier
        messages ("A job is already running.") cleared, and the polling stopped."""
        p = self.parts
        job = self.admin.jobs.status()
        if job.running:
            return self.job_state(job)
        return self.overview(request, profile) | {p.job_msg: ""}
