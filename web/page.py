"""The Gradio layout: tabs, components and their wiring to the actions; no behaviour of its own."""

from __future__ import annotations

from collections.abc import Callable

import gradio as gr

from core.labels import LABELS
from web.actions import RIGHT, NewsLoopActions
from web.admin import AdminActions

EXAMPLES = [
    "Ceasefire talks resume as envoys arrive in the capital. Diplomats from three neighbouring countries "
    "met rebel leaders on Sunday in a new attempt to end months of fighting.",
    "Late goal sends champions through to the semi-finals. A header in stoppage time gave the holders a "
    "2-1 win on aggregate and set up a meeting with their oldest rivals.",
    "Shares slide as the retailer cuts its profit forecast. The company blamed weaker holiday spending "
    "and higher shipping costs, and said it would close forty stores next year.",
    "New chip promises longer battery life for laptops. The processor, built on a smaller manufacturing "
    "process, uses a third less power while running common office software, the maker said.",
]


def build_admin(admin: AdminActions) -> None:
    """The admin tab: sign-in, then statistics, review, history, retrain and rollback."""
    with gr.Tab("Admin"):
        password = gr.Textbox(label="Admin password", type="password", elem_id="admin-password")
        login_btn = gr.Button("Sign in", elem_id="admin-login")
        login_msg = gr.Markdown()
        with gr.Column(visible=False) as panel:
            refresh_btn = gr.Button("Refresh", variant="primary")
            summary = gr.Code(label="Champion and feedback", language="json")
            progress = gr.Textbox(label="Retrain progress", lines=6, interactive=False)
            with gr.Row():
                retrain_btn = gr.Button("Launch retrain")
                rollback_btn = gr.Button("Roll back to the previous champion", variant="stop")
            job_msg = gr.Markdown()
            confusion = gr.Dataframe(headers=["true \\ predicted", *LABELS], label="Champion confusion matrix (validation)")
            history = gr.Dataframe(headers=["at", "action", "version", "reason"], label="Run history")
            suspicious = gr.Dataframe(
                headers=["id", "annotator", "label", "model said", "why suspicious", "text"], label="Suspicious answers"
            )
            with gr.Row():
                answer_id = gr.Number(label="Answer id", precision=0)
                accept_btn = gr.Button("Accept")
                reject_btn = gr.Button("Reject")
            review_msg = gr.Markdown()
            with gr.Row():
                pool_checks = gr.Checkbox(
                    label="Known-answer checks: every row has a 'label'; annotators are tested on them",
                    elem_id="pool-checks",
                )
                pool_file = gr.File(label="Add articles to the labelling queue (CSV or JSONL)", file_types=[".csv", ".jsonl"])
                pool_msg = gr.Markdown()
            with gr.Row():
                export_fmt = gr.Radio(["csv", "jsonl"], value="csv", label="Export feedback")
                export_btn = gr.Button("Export")
                export_file = gr.File(label="Download")
    private = {"api_visibility": "private"}
    login_btn.click(admin.login, inputs=password, outputs=[login_msg, panel], **private)
    outputs = [summary, suspicious, history, confusion, progress]
    refresh_btn.click(admin.overview, outputs=outputs, **private)
    retrain_btn.click(admin.launch_retrain, outputs=job_msg, **private)
    rollback_btn.click(admin.rollback, outputs=job_msg, **private)
    accept_btn.click(lambda i, r: admin.review(i, "accepted", r), inputs=answer_id, outputs=review_msg, **private)
    reject_btn.click(lambda i, r: admin.review(i, "rejected", r), inputs=answer_id, outputs=review_msg, **private)
    pool_file.upload(admin.import_pool, inputs=[pool_file, pool_checks], outputs=pool_msg, **private)
    export_btn.click(admin.export, inputs=export_fmt, outputs=export_file, **private)


def build_page(actions: NewsLoopActions, admin: AdminActions | None = None) -> gr.Blocks:
    """The page. Every handler goes through `actions` (and `admin`, whose tab appears only when given)."""
    with gr.Blocks(title="NewsLoop") as demo:
        gr.Markdown("# NewsLoop\nPaste a news article to see its topic. Tell us when it is wrong: the model learns.")
        with gr.Tab("Classify"), gr.Row():
            with gr.Column(scale=3):
                text = gr.Textbox(
                    label="News text", lines=7, max_length=actions.limits.max_input_chars,
                    placeholder="Paste a headline and/or the article body", elem_id="news-text",
                )
                classify_btn = gr.Button("Classify", variant="primary", elem_id="classify-btn")
                gr.Examples(EXAMPLES, inputs=text, label="Examples (one per topic)")
            with gr.Column(scale=2):
                label = gr.Label(num_top_classes=len(LABELS), label="Topic", elem_id="topic-label")
                info = gr.Markdown(elem_id="classify-info")
                gr.Markdown("**Is this right?**")
                with gr.Row():
                    right_btn = gr.Button("Right", variant="secondary", elem_id="fb-right")
                with gr.Row():
                    topic_btns = [
                        gr.Button(f"It's actually {name}", size="sm", elem_id=f"fb-{i}")
                        for i, name in enumerate(LABELS)
                    ]
                ack = gr.Markdown(elem_id="feedback-ack")
                undo_btn = gr.Button("Undo my last answer", size="sm", elem_id="fb-undo")
        with gr.Tab("Label queue"):
            gr.Markdown("Articles the model is least sure about come first. One click per article.")
            queue_text = gr.Textbox(label="Article", lines=6, interactive=False, elem_id="queue-text")
            with gr.Row():
                queue_btns = [gr.Button(name, elem_id=f"q-{i}") for i, name in enumerate(LABELS)]
            with gr.Row():
                skip_btn = gr.Button("Skip", size="sm", elem_id="q-skip")
                start_btn = gr.Button("Start / refresh", size="sm", variant="primary", elem_id="q-start")
            queue_progress = gr.Markdown(elem_id="queue-progress")
            queue_ack = gr.Markdown(elem_id="queue-ack")
        if admin is not None:
            build_admin(admin)
        model_note = gr.Markdown(actions.model_note())

        classify_btn.click(actions.classify, inputs=text, outputs=[label, info], api_name="classify")
        text.submit(actions.classify, inputs=text, outputs=[label, info], api_visibility="private")
        for name, btn in [(RIGHT, right_btn), *zip(LABELS, topic_btns, strict=True)]:
            btn.click(_bind(actions.feedback, name), outputs=ack, api_visibility="private")
        undo_btn.click(actions.undo, outputs=ack, api_name="undo")
        gr.api(actions.feedback, api_name="feedback")
        start_btn.click(actions.queue_next, outputs=[queue_text, queue_progress], api_name="queue_next")
        for name, btn in zip(LABELS, queue_btns, strict=True):
            btn.click(
                _bind(actions.queue_answer, name), outputs=[queue_text, queue_progress, queue_ack],
                api_visibility="private",
            )
        gr.api(actions.queue_answer, api_name="queue_answer")
        skip_btn.click(actions.queue_skip, outputs=[queue_text, queue_progress, queue_ack], api_name="queue_skip")
        demo.load(lambda: actions.model_note(), outputs=model_note, api_visibility="private")
    return demo


def _bind(fn: Callable[..., object], label: str) -> Callable[[gr.Request], object]:
    """A click handler that calls `fn(label, request)`: one button per label, one action for all of them."""

    def handler(request: gr.Request):  # type: ignore[no-untyped-def]
        return fn(label, request)

    return handler
