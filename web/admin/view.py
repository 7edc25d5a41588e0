"""The admin view's layout and wiring: sign-in, tiles, retrain, plots, review, label errors, people, guidelines, topics,
pool, export.

What each part shows comes from its own module: `web.admin.overview_view` (tiles, plots, decision, progress),
`web.admin.review_view`, `web.admin.label_errors_view`, `web.admin.people_view`, `web.admin.guidelines_view` and
`web.admin.topics_view`; what the buttons do from `web.admin.actions`.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from web.admin.actions import EXPORTS, AdminActions
from web.admin.evidence_view import build_evidence
from web.admin.guidelines_view import build_guidelines_editor
from web.admin.label_errors_view import SUGGESTED, build_label_errors
from web.admin.overview_view import POLL_S, WATCH_S, AdminDashboard, DashboardParts
from web.admin.people_view import build_people
from web.admin.queue_view import build_queue_search
from web.admin.review_view import ANY, build_review
from web.admin.topics_view import build_topics
from web.admin.unlisted_view import build_unlisted
from web.server.events import PRIVATE

# Trades a sign-in/sign-out ticket for a fresh browser id cookie (POST /admin/session, beside this page at /admin/).
_REDEEM_URL = "new URL('session', window.location.href.split(/[?#]/)[0].replace(/[^/]*$/, ''))"
REDEEM_JS = f"""async (ticket) => {{
  if (ticket) {{
    await fetch({_REDEEM_URL}, {{method: 'POST', credentials: 'same-origin',
      headers: {{'content-type': 'application/json'}}, body: JSON.stringify({{ticket: ticket}})}});
  }}
  return [];
}}"""


def build_admin(admin: AdminActions, demo: gr.Blocks) -> None:
    """The admin view in `demo` (web.admin.page), wired to `admin` (private events only); a reload of a signed-in
    browser restores it."""
    view = _AdminView(admin)
    view.lay_out()
    view.wire(demo)


class _AdminView:
    """The view's parts, laid out top to bottom (`lay_out`), then its events (`wire`). Gradio numbers components and
    events in the order they are made, so each part is made where it appears on the page."""

    def __init__(self, admin: AdminActions) -> None:
        self.admin = admin

    def lay_out(self) -> None:
        admin = self.admin
        with gr.Column(elem_id="admin"):
            self._sign_in()
            with gr.Column(visible=False, elem_id="admin-panel") as self.panel:
                with gr.Row(elem_id="admin-status-row"):
                    self.status_line = gr.Markdown(elem_id="admin-status")
                    self.refresh_btn = gr.Button("Refresh", size="sm", elem_id="admin-refresh")
                    self.logout_btn = gr.Button("Sign out", size="sm", elem_id="admin-logout")
                self.tiles = gr.HTML(elem_id="admin-tiles")
                self._retrain()
                self.reload_evidence, self.promoted = build_evidence(admin)
                self._charts()
                self._panels()
                gr.Markdown("## Run history")
                self.history = gr.Dataframe(headers=["at", "action", "version", "why"], label="Run history", wrap=True,
                                            interactive=False, elem_id="history", show_label=False)
                self._pool_and_export()
            self.timer = gr.Timer(POLL_S, active=False)
            self.watch = gr.Timer(WATCH_S, active=False)  # started by the overview once an admin is signed in
        self.dash = AdminDashboard(admin, DashboardParts(
            status_line=self.status_line, tiles=self.tiles, history=self.history, confusion=self.confusion,
            versions=self.versions, per_day=self.per_day, traffic_alert=self.traffic_alert,
            traffic_plot=self.traffic_plot, drift=self.drift, progress=self.progress, decision=self.decision,
            numbers=self.numbers, retrain_btn=self.retrain_btn, start_btn=self.start_btn,
            rollback_btn=self.rollback_btn, job_msg=self.job_msg, timer=self.timer, watch=self.watch))

    def _sign_in(self) -> None:
        with gr.Column() as self.signin:
            self.password = gr.Textbox(label="Admin password", type="password", elem_id="admin-password",
                                       info="Press Enter or Sign in.")
            self.login_btn = gr.Button("Sign in", elem_id="admin-login")
        self.login_msg = gr.Markdown(elem_id="admin-msg", elem_classes=["live"])
        self.ticket = gr.Textbox(visible=False)  # a sign-in/sign-out ticket on its way to REDEEM_JS

    def _retrain(self) -> None:
        gr.Markdown("## Retrain")
        self.progress = gr.HTML(elem_id="retrain-progress")
        self.decision = gr.Markdown(elem_id="retrain-decision", elem_classes=["live"])
        with gr.Accordion("The numbers behind the last decision", open=False, elem_id="retrain-numbers-panel"):
            self.numbers = gr.JSON(label="Last run: gate, rows, reasons", elem_id="retrain-numbers")
        with gr.Row():
            self.retrain_btn = gr.Button("Retrain…", variant="primary", elem_id="retrain-btn")
            self.rollback_btn = gr.Button("Roll back", variant="stop", elem_id="rollback-btn")
        self.job_msg = gr.Markdown(elem_id="job-msg", elem_classes=["live"])
        with gr.Column(visible=False, elem_id="retrain-confirm") as self.confirm:
            self.confirm_text = gr.Markdown(elem_id="retrain-confirm-text")
            with gr.Row():
                self.start_btn = gr.Button("Start the retrain", variant="primary", elem_id="retrain-start")
                self.cancel_btn = gr.Button("Cancel", elem_id="retrain-cancel")

    def _charts(self) -> None:
        """The models and answers' plots, then the champion on served traffic."""
        gr.Markdown("## Models and answers")
        with gr.Row(elem_id="admin-plots"):
            # Each figure carries its own title; Gradio's label box would cover it.
            self.versions = gr.Plot(label="Accuracy by version and evaluation set", elem_id="plot-versions",
                                    show_label=False, min_width=340, scale=3)
            self.confusion = gr.Plot(label="Champion confusion matrix (validation)", elem_id="plot-confusion",
                                     show_label=False, min_width=300, scale=2)
            self.per_day = gr.Plot(label="Answers per day", elem_id="plot-days", show_label=False, min_width=300,
                                   scale=2)
        gr.Markdown("## Served traffic")
        # Why a live region: the alert is what a maintainer must not miss when the view refreshes.
        self.traffic_alert = gr.Markdown(elem_id="traffic-alert", elem_classes=["live"])
        self.traffic_plot = gr.Plot(label="Champion on served traffic, per day", elem_id="plot-traffic",
                                    show_label=False)
        with gr.Accordion("Drift: what is served against the model's own data", open=False, elem_id="drift-panel"):
            self.drift = gr.Markdown(elem_id="traffic-drift")

    def _panels(self) -> None:
        """The panels of their own modules: review, label errors, people, guidelines, topics, pushed articles and
        "None of these"; each returns what the view reloads or follows."""
        admin = self.admin
        self.review = build_review(admin)
        label_errors = build_label_errors(admin)
        self.label_errors_changes = label_errors.changes
        # after_change is a method: it reads the dashboard, made once the whole layout is, when a settle happens.
        self.people, self.people_outputs = build_people(admin, after=self.after_change)
        self.reload_guidelines = build_guidelines_editor(admin)
        self.reload_topics = build_topics(admin, choosers=[(self.review.topic_filter, ("any label", ANY)),
                                                           (label_errors.topic_choice, ("the suggested topic", SUGGESTED))])
        self.reload_queue_search = build_queue_search(admin)
        self.unlisted_created = build_unlisted(admin)

    def _pool_and_export(self) -> None:
        admin = self.admin
        gr.Markdown("## Labelling pool and export")
        with gr.Row():
            self.pool_checks = gr.Checkbox(
                label="Known-answer checks: every row has a 'label'; annotators are tested on them",
                elem_id="pool-checks",
            )
            self.pool_skip = gr.Checkbox(label="Skip bad rows: import the good ones and list the others",
                                         elem_id="pool-skip-bad")
            # A button named by its own text (a drop zone's label and visible text differ, which axe flags).
            self.pool_file = gr.UploadButton("Add articles to the labelling queue (CSV or JSONL)",
                                             file_types=[".csv", ".jsonl"], elem_id="pool-upload")
            self.pool_msg = gr.Markdown(elem_id="pool-msg", elem_classes=["live"])
        with gr.Row():
            self.export_fmt = gr.Radio(list(EXPORTS), value="csv",
                                       label="Export feedback (parquet: a Hugging Face dataset)")
            self.export_btn = gr.Button("Export", elem_id="export-btn")
            # A one-time link for this browser (web.admin.routes), not a file Gradio would serve to anyone.
            self.export_file = gr.HTML(elem_id="export-file")
        if admin.can_push:
            push_btn = gr.Button(f"Push to the Hub ({admin.hub_dataset})", elem_id="push-btn")
            push_msg = gr.Markdown()
            push_btn.click(admin.push_to_hub, outputs=push_msg, **PRIVATE)

    def after_change(self, event: Any, relist: bool = True) -> Any:
        """After anything that changes answers, the pool or the champion: tiles, plots and people at once, and
        (`relist`) the review list under its filters as they stand."""
        then = event.then(self.dash.overview, outputs=self.dash.outputs, **PRIVATE).then(
            self.people.overview, outputs=self.people_outputs, **PRIVATE)
        review = self.review
        return then.then(review.panel.search, inputs=review.inputs, outputs=review.shown, **PRIVATE) if relist else then

    def whole_view(self, event: Any) -> Any:
        """After sign-in, a reload or Refresh: everything, the review list and the guidelines included."""
        self.reload_guidelines(event)
        self.reload_evidence(event)
        self.reload_topics(event)
        self.reload_queue_search(event)
        return self.review.reload(self.after_change(event, relist=False))

    def wire(self, demo: gr.Blocks) -> None:
        self.reload_topics(self.after_change(self.unlisted_created))  # a topic made from "None of these" answers
        self._wire_sign_in(demo)
        self._wire_retrain()
        self.reload_evidence(self.after_change(self.rollback_btn.click(self.admin.rollback, outputs=self.job_msg,
                                                                       **PRIVATE)))
        self.after_change(self.promoted)
        for event in [*self.review.changes, *self.label_errors_changes]:
            self.after_change(event, relist=False)  # the review events list again themselves
        self.after_change(self.pool_file.upload(self.admin.import_pool, inputs=[self.pool_file, self.pool_checks,
                                                                                self.pool_skip],
                                                outputs=self.pool_msg, **PRIVATE))
        self.export_btn.click(self.admin.export, inputs=self.export_fmt, outputs=self.export_file, **PRIVATE)

    def _wire_sign_in(self, demo: gr.Blocks) -> None:
        admin = self.admin
        signed = [self.login_msg, self.panel, self.signin]
        self.whole_view(self.refresh_btn.click(lambda: None, **PRIVATE))
        # Sign-in and sign-out end with a fresh browser id: the handler's ticket is redeemed by the tab (REDEEM_JS),
        # then the panel follows what the server now says about this browser.
        # Sign-ins have no concurrency limit: the global slow-down waits on the event loop (AdminActions.login), so
        # a guessing run's waiting attempts never hold a place the real admin's attempt needs.
        for trigger in (self.login_btn.click, self.password.submit):
            self.whole_view(trigger(admin.login, inputs=self.password, outputs=[self.login_msg, self.ticket],
                                    concurrency_limit=None, **PRIVATE).then(
                None, inputs=self.ticket, js=REDEEM_JS, **PRIVATE).then(admin.after_sign_in, outputs=signed, **PRIVATE))
        self.logout_btn.click(admin.logout, outputs=[*signed, self.ticket], **PRIVATE).then(
            None, inputs=self.ticket, js=REDEEM_JS, **PRIVATE)
        self.whole_view(demo.load(admin.restore, outputs=signed, **PRIVATE))

    def _wire_retrain(self) -> None:
        admin, dash = self.admin, self.dash
        # The ticks refresh quietly: no loading overlay over the whole panel every few seconds.
        self.timer.tick(dash.poll, outputs=dash.outputs, show_progress="hidden", **PRIVATE)
        self.watch.tick(dash.look_for_runs, outputs=dash.outputs, show_progress="hidden", **PRIVATE)
        self.retrain_btn.click(admin.retrain_preview, outputs=[self.confirm_text, self.confirm], **PRIVATE).then(
            dash.look_for_runs, outputs=dash.outputs, show_progress="hidden", **PRIVATE)  # a run the watch missed yet
        self.cancel_btn.click(lambda: gr.update(visible=False), outputs=self.confirm, **PRIVATE)
        self.start_btn.click(admin.launch_retrain, outputs=[self.job_msg, self.confirm, self.timer], **PRIVATE).then(
            dash.poll, outputs=dash.outputs, **PRIVATE)
