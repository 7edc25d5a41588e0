"""The Admin tab: sign-in, statistics tiles, plots, agreement, review, retrain, rollback, import and export."""

from __future__ import annotations

from collections import Counter
from typing import Any

import gradio as gr

from feedback.agreement import agreement
from web import admin_report as report
from web.admin import EXPORTS, AdminActions

PRIVATE: dict[str, Any] = {"api_visibility": "private"}
POLL_S = 3.0  # how often the view refreshes itself while a job runs


class AdminDashboard:
    """Builds the admin tab's overview; every handler checks the caller like `AdminActions`' do."""

    def __init__(self, admin: AdminActions) -> None:
        self.admin = admin
        self._was_running = False

    def overview(self, request: gr.Request, profile: gr.OAuthProfile | None = None) -> list[Any]:
        """Everything the panel shows; the first output is a status line ("Sign in first." to strangers)."""
        if not self.admin.is_admin(request, profile):
            return ["Sign in first.", *[gr.skip()] * (len(self.outputs) - 1)]
        admin, store = self.admin, self.admin.store
        stats = store.stats() if store else {}
        rows = store.answers(limit=50_000) if store else []
        suspicious = [
            [r["id"], r["annotator"], r["user_label"], r["predicted_label"], r["suspicious_reason"], r["text"][:200]]
            for r in rows if r["status"] == "suspicious"
        ][:200]
        status = admin.registry.status()
        meta = status.get("champion_meta") or {}
        matrix = meta.get("validation", {}).get("confusion_matrix") or []
        versions = []
        for version in admin.registry.versions()[-20:]:
            accuracy = report.served_accuracy(admin.registry.get(version).meta)
            if isinstance(accuracy, int | float):
                versions.append((version, float(accuracy)))
        days = Counter(str(r.get("created_at", ""))[:10] for r in rows if r["status"] != "undone")
        head, people = report.agreement_rows(agreement(rows))
        pool_left = store.pool_left(admin.trust.labels_required) if store else 0
        job = admin.jobs.status()
        self._was_running = job.running
        run = admin.jobs.last_run()
        previous = status["previous"]
        champion = status["champion"] or "none"
        return [
            f"Champion **{champion}** · updated {report.now()}",
            report.tiles(stats, admin.trusted_count(), pool_left),
            suspicious,
            report.history_rows(status["events"]),
            report.confusion_figure(matrix),
            report.versions_figure(versions),
            report.per_day_figure(days),
            head,
            people,
            report.progress_html(job),
            report.decision_text(run),
            {k: run.get(k) for k in ("decision", "reasons", "rows", "gate", "seconds", "challenger")} if run else {},
            gr.update(interactive=bool(previous),
                      value=f"Roll back to {previous[0]}" if previous else "Nothing to roll back to"),
            gr.Timer(active=job.running),
        ]

    def poll(self, request: gr.Request, profile: gr.OAuthProfile | None = None) -> list[Any]:
        """While a job runs: its progress only; when it has just finished, the whole overview."""
        if not self.admin.is_admin(request, profile):
            return ["Sign in first.", *[gr.skip()] * (len(self.outputs) - 2), gr.Timer(active=False)]
        job = self.admin.jobs.status()
        if job.running or not self._was_running:
            self._was_running = job.running
            skipped = [gr.skip()] * (len(self.outputs) - 1)
            skipped[8], skipped[-1] = report.progress_html(job), gr.Timer(active=job.running)
            return [gr.skip(), *skipped]
        return self.overview(request, profile)


def build_admin(admin: AdminActions, demo: gr.Blocks) -> None:
    """The admin tab, wired to `admin` (private events only); a reload of a signed-in browser restores it."""
    dash = AdminDashboard(admin)
    with gr.Tab("Admin", id="admin"):
        with gr.Column() as signin:
            password = gr.Textbox(label="Admin password", type="password", elem_id="admin-password",
                                  info="Press Enter or Sign in.")
            login_btn = gr.Button("Sign in", elem_id="admin-login")
        login_msg = gr.Markdown(elem_id="admin-msg", elem_classes=["live"])
        with gr.Column(visible=False, elem_id="admin-panel") as panel:
            with gr.Row():
                status_line = gr.Markdown(elem_id="admin-status")
                refresh_btn = gr.Button("Refresh", size="sm", elem_id="admin-refresh")
                logout_btn = gr.Button("Sign out", size="sm", elem_id="admin-logout")
            tiles = gr.HTML(elem_id="admin-tiles")
            gr.Markdown("### Retrain")
            progress = gr.HTML(elem_id="retrain-progress")
            decision = gr.Markdown(elem_id="retrain-decision", elem_classes=["live"])
            with gr.Accordion("The numbers behind the last decision", open=False):
                numbers = gr.JSON(label="Last run: gate, rows, reasons", elem_id="retrain-numbers")
            with gr.Row():
                retrain_btn = gr.Button("Retrain…", variant="primary", elem_id="retrain-btn")
                rollback_btn = gr.Button("Roll back", variant="stop", elem_id="rollback-btn")
            job_msg = gr.Markdown(elem_id="job-msg", elem_classes=["live"])
            with gr.Column(visible=False, elem_id="retrain-confirm") as confirm:
                confirm_text = gr.Markdown(elem_id="retrain-confirm-text")
                with gr.Row():
                    start_btn = gr.Button("Start the retrain", variant="primary", elem_id="retrain-start")
                    cancel_btn = gr.Button("Cancel", elem_id="retrain-cancel")
            with gr.Row():
                # Each figure carries its own title; Gradio's label box would cover it.
                confusion = gr.Plot(label="Champion confusion matrix (validation)", elem_id="plot-confusion",
                                    show_label=False)
                versions = gr.Plot(label="Champion accuracy by version", elem_id="plot-versions", show_label=False)
                per_day = gr.Plot(label="Answers per day", elem_id="plot-days", show_label=False)
            gr.Markdown("### Suspicious answers\nClick a row, then Accept (it may train) or Reject (it never will).")
            suspicious = gr.Dataframe(
                headers=["id", "annotator", "label", "model said", "why suspicious", "text"], wrap=True,
                label="Suspicious answers", elem_id="suspicious", interactive=False, max_height=360,
            )
            with gr.Row():
                answer_id = gr.Number(label="Answer id (click a row)", precision=0, elem_id="answer-id")
                accept_btn = gr.Button("Accept", elem_id="accept-btn")
                reject_btn = gr.Button("Reject", elem_id="reject-btn")
            review_msg = gr.Markdown(elem_id="review-msg", elem_classes=["live"])
            gr.Markdown("### Agreement between annotators")
            agree_head = gr.Markdown(elem_id="agreement")
            agree_rows = gr.Dataframe(headers=["annotator", "shared texts", "agrees with others", "alpha without them"],
                                      label="Per annotator", interactive=False, elem_id="agreement-table")
            history = gr.Dataframe(headers=["at", "action", "version", "why"], label="Run history", wrap=True,
                                   interactive=False, elem_id="history")
            with gr.Row():
                pool_checks = gr.Checkbox(
                    label="Known-answer checks: every row has a 'label'; annotators are tested on them",
                    elem_id="pool-checks",
                )
                # A button named by its own text (a drop zone's label and visible text differ, which axe flags).
                pool_file = gr.UploadButton("Add articles to the labelling queue (CSV or JSONL)",
                                            file_types=[".csv", ".jsonl"], elem_id="pool-upload")
                pool_msg = gr.Markdown()
            with gr.Row():
                export_fmt = gr.Radio(list(EXPORTS), value="csv", label="Export feedback (parquet: a Hugging Face dataset)")
                export_btn = gr.Button("Export", elem_id="export-btn")
                export_file = gr.File(label="Download", elem_id="export-file", visible=False)  # shown once exported
            if admin.can_push:
                push_btn = gr.Button(f"Push to the Hub ({admin.hub_dataset})", elem_id="push-btn")
                push_msg = gr.Markdown()
                push_btn.click(admin.push_to_hub, outputs=push_msg, **PRIVATE)
        timer = gr.Timer(POLL_S, active=False)
    dash.outputs = [status_line, tiles, suspicious, history, confusion, versions, per_day, agree_head, agree_rows,
                    progress, decision, numbers, rollback_btn, timer]
    signed = [login_msg, panel, signin]
    refresh_btn.click(dash.overview, outputs=dash.outputs, api_name="overview", **PRIVATE)
    for trigger in (login_btn.click, password.submit):
        trigger(admin.login, inputs=password, outputs=signed, **PRIVATE).then(dash.overview, outputs=dash.outputs,
                                                                              **PRIVATE)
    logout_btn.click(admin.logout, outputs=signed, **PRIVATE)
    demo.load(admin.restore, outputs=signed, **PRIVATE).then(dash.overview, outputs=dash.outputs, **PRIVATE)
    timer.tick(dash.poll, outputs=dash.outputs, **PRIVATE)
    retrain_btn.click(admin.retrain_preview, outputs=[confirm_text, confirm], **PRIVATE)
    cancel_btn.click(lambda: gr.update(visible=False), outputs=confirm, **PRIVATE)
    start_btn.click(admin.launch_retrain, outputs=[job_msg, confirm, timer], **PRIVATE)
    rollback_btn.click(admin.rollback, outputs=job_msg, **PRIVATE).then(dash.overview, outputs=dash.outputs, **PRIVATE)
    suspicious.select(admin.pick, outputs=answer_id, **PRIVATE)
    for btn, fn in ((accept_btn, admin.accept), (reject_btn, admin.reject)):
        btn.click(fn, inputs=answer_id, outputs=review_msg, **PRIVATE).then(dash.overview, outputs=dash.outputs,
                                                                           **PRIVATE)
    pool_file.upload(admin.import_pool, inputs=[pool_file, pool_checks], outputs=pool_msg, **PRIVATE)
    export_btn.click(admin.export, inputs=export_fmt, outputs=export_file, **PRIVATE)
