"""The admin view's layout and wiring: sign-in, tiles, retrain, plots, review, label errors, people, guidelines, topics,
pool, export.

What each part shows comes from its own module: `web.admin.dashboard` (tiles, plots, decision, progress),
`web.admin.review_view`, `web.admin.label_errors_view`, `web.admin.people_view`, `web.admin.guidelines_view` and
`web.admin.topics_view`; what the buttons do from `web.admin.actions`.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from web.admin.actions import EXPORTS, AdminActions
from web.admin.dashboard import POLL_S, WATCH_S, AdminDashboard, DashboardParts
from web.admin.evidence_view import build_evidence
from web.admin.guidelines_view import build_guidelines_editor
from web.admin.label_errors_view import SUGGESTED, build_label_errors
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
    with gr.Column(elem_id="admin"):
        with gr.Column() as signin:
            password = gr.Textbox(label="Admin password", type="password", elem_id="admin-password",
                                  info="Press Enter or Sign in.")
            login_btn = gr.Button("Sign in", elem_id="admin-login")
        login_msg = gr.Markdown(elem_id="admin-msg", elem_classes=["live"])
        ticket = gr.Textbox(visible=False)  # a sign-in/sign-out ticket on its way to REDEEM_JS
        with gr.Column(visible=False, elem_id="admin-panel") as panel:
            with gr.Row(elem_id="admin-status-row"):
                status_line = gr.Markdown(elem_id="admin-status")
                refresh_btn = gr.Button("Refresh", size="sm", elem_id="admin-refresh")
                logout_btn = gr.Button("Sign out", size="sm", elem_id="admin-logout")
            tiles = gr.HTML(elem_id="admin-tiles")
            gr.Markdown("## Retrain")
            progress = gr.HTML(elem_id="retrain-progress")
            decision = gr.Markdown(elem_id="retrain-decision", elem_classes=["live"])
            with gr.Accordion("The numbers behind the last decision", open=False, elem_id="retrain-numbers-panel"):
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
            reload_evidence, promoted = build_evidence(admin)
            gr.Markdown("## Models and answers")
            with gr.Row(elem_id="admin-plots"):
                # Each figure carries its own title; Gradio's label box would cover it.
                versions = gr.Plot(label="Accuracy by version and evaluation set", elem_id="plot-versions",
                                   show_label=False, min_width=340, scale=3)
                confusion = gr.Plot(label="Champion confusion matrix (validation)", elem_id="plot-confusion",
                                    show_label=False, min_width=300, scale=2)
                per_day = gr.Plot(label="Answers per day", elem_id="plot-days", show_label=False, min_width=300,
                                  scale=2)
            gr.Markdown("## Served traffic")
            # Why a live region: the alert is what a maintainer must not miss when the view refreshes.
            traffic_alert = gr.Markdown(elem_id="traffic-alert", elem_classes=["live"])
            traffic_plot = gr.Plot(label="Champion on served traffic, per day", elem_id="plot-traffic",
                                   show_label=False)
            with gr.Accordion("Drift: what is served against the model's own data", open=False, elem_id="drift-panel"):
                drift = gr.Markdown(elem_id="traffic-drift")
            review = build_review(admin)
            label_errors = build_label_errors(admin)
            people, people_outputs = build_people(admin, after=lambda event: after_change(event))
            reload_guidelines = build_guidelines_editor(admin)
            reload_topics = build_topics(admin, choosers=[(review.topic_filter, ("any label", ANY)),
                                                          (label_errors.topic_choice, ("the suggested topic", SUGGESTED))])
            reload_queue_search = build_queue_search(admin)
            unlisted_created = build_unlisted(admin)
            gr.Markdown("## Run history")
            history = gr.Dataframe(headers=["at", "action", "version", "why"], label="Run history", wrap=True,
                                   interactive=False, elem_id="history", show_label=False)
            gr.Markdown("## Labelling pool and export")
            with gr.Row():
                pool_checks = gr.Checkbox(
                    label="Known-answer checks: every row has a 'label'; annotators are tested on them",
                    elem_id="pool-checks",
                )
                pool_skip = gr.Checkbox(label="Skip bad rows: import the good ones and list the others",
                                        elem_id="pool-skip-bad")
                # A button named by its own text (a drop zone's label and visible text differ, which axe flags).
                pool_file = gr.UploadButton("Add articles to the labelling queue (CSV or JSONL)",
                                            file_types=[".csv", ".jsonl"], elem_id="pool-upload")
                pool_msg = gr.Markdown(elem_id="pool-msg", elem_classes=["live"])
            with gr.Row():
                export_fmt = gr.Radio(list(EXPORTS), value="csv", label="Export feedback (parquet: a Hugging Face dataset)")
                export_btn = gr.Button("Export", elem_id="export-btn")
                # A one-time link for this browser (web.admin.routes), not a file Gradio would serve to anyone.
                export_file = gr.HTML(elem_id="export-file")
            if admin.can_push:
                push_btn = gr.Button(f"Push to the Hub ({admin.hub_dataset})", elem_id="push-btn")
                push_msg = gr.Markdown()
                push_btn.click(admin.push_to_hub, outputs=push_msg, **PRIVATE)
        timer = gr.Timer(POLL_S, active=False)
        watch = gr.Timer(WATCH_S, active=False)  # started by the overview once an admin is signed in
    parts = DashboardParts(status_line=status_line, tiles=tiles, history=history, confusion=confusion,
                           versions=versions, per_day=per_day, traffic_alert=traffic_alert,
                           traffic_plot=traffic_plot, drift=drift, progress=progress, decision=decision, numbers=numbers,
                           retrain_btn=retrain_btn, start_btn=start_btn, rollback_btn=rollback_btn, job_msg=job_msg,
                           timer=timer, watch=watch)
    dash = AdminDashboard(admin, parts)

    def after_change(event: Any, relist: bool = True) -> Any:
        """After anything that changes answers, the pool or the champion: tiles, plots and people at once, and
        (`relist`) the review list under its filters as they stand."""
        then = event.then(dash.overview, outputs=dash.outputs, **PRIVATE).then(
            people.overview, outputs=people_outputs, **PRIVATE)
        return then.then(review.panel.search, inputs=review.inputs, outputs=review.shown, **PRIVATE) if relist else then

    def whole_view(event: Any) -> Any:
        """After sign-in, a reload or Refresh: everything, the review list and the guidelines included."""
        reload_guidelines(event)
        reload_evidence(event)
        reload_topics(event)
        reload_queue_search(event)
        return review.reload(after_change(event, relist=False))

    reload_topics(after_change(unlisted_created))  # a topic made from "None of these" answers, with its labels

    signed = [login_msg, panel, signin]
    whole_view(refresh_btn.click(lambda: None, **PRIVATE))
    # Sign-in and sign-out end with a fresh browser id: the handler's ticket is redeemed by the tab (REDEEM_JS),
    # then the panel follows what the server now says about this browser.
    # Sign-ins have no concurrency limit: the global slow-down waits on the event loop (AdminActions.login), so
    # a guessing run's waiting attempts never hold a place the real admin's attempt needs.
    for trigger in (login_btn.click, password.submit):
        whole_view(trigger(admin.login, inputs=password, outputs=[login_msg, ticket], concurrency_limit=None,
                           **PRIVATE).then(
            None, inputs=ticket, js=REDEEM_JS, **PRIVATE).then(admin.after_sign_in, outputs=signed, **PRIVATE))
    logout_btn.click(admin.logout, outputs=[*signed, ticket], **PRIVATE).then(
        None, inputs=ticket, js=REDEEM_JS, **PRIVATE)
    whole_view(demo.load(admin.restore, outputs=signed, **PRIVATE))
    # The ticks refresh quietly: no loading overlay over the whole panel every few seconds.
    timer.tick(dash.poll, outputs=dash.outputs, show_progress="hidden", **PRIVATE)
    watch.tick(dash.look_for_runs, outputs=dash.outputs, show_progress="hidden", **PRIVATE)
    retrain_btn.click(admin.retrain_preview, outputs=[confirm_text, confirm], **PRIVATE).then(
        dash.look_for_runs, outputs=dash.outputs, show_progress="hidden", **PRIVATE)  # a run the watch missed yet
    cancel_btn.click(lambda: gr.update(visible=False), outputs=confirm, **PRIVATE)
    start_btn.click(admin.launch_retrain, outputs=[job_msg, confirm, timer], **PRIVATE).then(
        dash.poll, outputs=dash.outputs, **PRIVATE)
    reload_evidence(after_change(rollback_btn.click(admin.rollback, outputs=job_msg, **PRIVATE)))
    after_change(promoted)
    for event in [*review.changes, *label_errors.changes]:
        after_change(event, relist=False)  # the review events list again themselves
    after_change(pool_file.upload(admin.import_pool, inputs=[pool_file, pool_checks, pool_skip], outputs=pool_msg, **PRIVATE))
    export_btn.click(admin.export, inputs=export_fmt, outputs=export_file, **PRIVATE)
