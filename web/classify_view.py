"""The Classify and Label queue tabs: layout and the page-side wiring of their buttons to `NewsLoopActions`."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import gradio as gr

from core.labels import LABELS
from web.actions import RIGHT, NewsLoopActions

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
CHOICES = [RIGHT, *LABELS]
PRIVATE: dict[str, Any] = {"api_visibility": "private"}


def _button_text(choice: str) -> str:
    return "Right" if choice == RIGHT else f"It's actually {choice}"


def _buttons(chosen: str | None) -> list[dict[str, Any]]:
    """The answer buttons, the chosen one marked (variant and a check mark), the others plain."""
    return [
        gr.update(variant="primary" if c == chosen else "secondary",
                  value=("✓ " if c == chosen else "") + _button_text(c))
        for c in CHOICES
    ]


def build_classify(actions: NewsLoopActions) -> None:
    """The Classify tab: text, counter, result, one-click answer, undo."""
    limit = actions.limits.max_input_chars
    with gr.Tab("Classify", id="classify"), gr.Row(elem_id="classify-row"):
        with gr.Column(scale=3, elem_id="classify-input"):
            text = gr.Textbox(
                label="News text", lines=7, max_length=limit,
                placeholder="Paste a headline and/or the article body", elem_id="news-text",
            )
            gr.HTML(f'<span class="count">0 / {limit:,} characters</span> <span class="warn" role="alert"></span>',
                    elem_id="char-count")
            classify_btn = gr.Button("Classify", variant="primary", elem_id="classify-btn")
            gr.HTML('<p class="kbd-hint"><kbd>Shift</kbd>+<kbd>Enter</kbd> classifies; <kbd>Enter</kbd> starts a '
                    "new line.</p>", elem_id="classify-hint")
            with gr.Column(elem_id="classify-examples"):
                gr.Examples(EXAMPLES, inputs=text, label="Examples (one per topic)")
        with gr.Column(scale=2, elem_id="classify-result"):
            label = gr.Label(num_top_classes=len(LABELS), label="Topic", elem_id="topic-label")
            info = gr.Markdown(elem_id="classify-info")
            gr.Markdown("**Is this right?**")
            right_btn = gr.Button(_button_text(RIGHT), variant="secondary", elem_id="fb-right")
            with gr.Row():
                topic_btns = [gr.Button(_button_text(n), elem_id=f"fb-{i}") for i, n in enumerate(LABELS)]
            ack = gr.Markdown(elem_id="feedback-ack", container=True, elem_classes=["live"])
            undo_btn = gr.Button("Undo my last answer on this tab", size="sm", elem_id="fb-undo")
    buttons = [right_btn, *topic_btns]

    def cleared() -> list[Any]:
        return ["", *_buttons(None)]

    # A new prediction starts clean: no confirmation or chosen button from the previous one is left over.
    classify_btn.click(actions.classify, inputs=text, outputs=[label, info], api_name="classify").then(
        cleared, outputs=[ack, *buttons], **PRIVATE)
    text.submit(actions.classify, inputs=text, outputs=[label, info], **PRIVATE).then(
        cleared, outputs=[ack, *buttons], **PRIVATE)
    for choice, btn in zip(CHOICES, buttons, strict=True):
        btn.click(_answer(actions.feedback, choice), outputs=[ack, *buttons], **PRIVATE)
    undo_btn.click(actions.undo, outputs=ack, api_name="undo").then(
        lambda: _buttons(None), outputs=buttons, **PRIVATE)


def _answer(fn: Callable[..., str], choice: str) -> Callable[[gr.Request], list[Any]]:
    """A click handler for one answer button: saves through `fn`, then marks that button as chosen."""

    def handler(request: gr.Request) -> list[Any]:
        message = fn(choice, request)
        saved = message.startswith(("Thanks, saved", "Already saved"))
        return [message, *_buttons(choice if saved else None)]

    return handler


def article_html(text: str | None) -> str:
    """The queue article as a focusable, labelled region (escaped: articles are data, never markup)."""
    if not text:
        return '<article tabindex="-1" aria-label="Article to label"><p>No article to show.</p></article>'
    return (f'<article tabindex="0" aria-label="Article to label">'
            f'<p>{html.escape(text).replace(chr(10), "<br>")}</p></article>')


def build_queue(actions: NewsLoopActions) -> gr.Tab:
    """The Label queue tab: the article loads when the tab opens; keys 1-4, S and U work without a mouse."""
    with gr.Tab("Label queue", id="queue") as tab:
        gr.HTML('<p class="kbd-hint">Articles the model is least sure about come first. Keys: <kbd>1</kbd>-'
                '<kbd>4</kbd> choose a topic, <kbd>S</kbd> skips, <kbd>U</kbd> undoes your last queue answer.</p>')
        queue_ack = gr.Markdown(elem_id="queue-ack", container=True, elem_classes=["live"])
        queue_progress = gr.Markdown(elem_id="queue-progress")
        # The raw text travels in a hidden field (the events' first output, for API callers); people read
        # the article region below it, rendered from that text.
        queue_raw = gr.Textbox(visible=False, elem_id="queue-raw")
        article = gr.HTML(article_html(""), elem_id="queue-article")
        with gr.Row(elem_id="queue-buttons"):
            queue_btns = [gr.Button(f"{i + 1} · {name}", elem_id=f"q-{i}") for i, name in enumerate(LABELS)]
        with gr.Row():
            skip_btn = gr.Button("S · Skip", size="sm", elem_id="q-skip")
            undo_btn = gr.Button("U · Undo last queue answer", size="sm", elem_id="q-undo")
    tab.select(actions.queue_next, outputs=[queue_raw, queue_progress], api_name="queue_next")
    outputs = [queue_raw, queue_progress, queue_ack]
    for name, btn in zip(LABELS, queue_btns, strict=True):
        btn.click(_bind(actions.queue_answer, name), outputs=outputs, **PRIVATE)
    skip_btn.click(actions.queue_skip, outputs=outputs, api_name="queue_skip")
    undo_btn.click(actions.queue_undo, outputs=outputs, api_name="queue_undo")
    queue_raw.change(article_html, inputs=queue_raw, outputs=article, **PRIVATE)
    return tab


def build_api_events(actions: NewsLoopActions) -> None:
    """API-only events (no button of their own) for scripts: answer the last prediction or the queue item.

    Called outside `gr.Tabs`: a `gr.api` inside it would be rendered as an extra tab.
    """
    gr.api(actions.feedback, api_name="feedback")
    gr.api(actions.queue_answer, api_name="queue_answer")


def _bind(fn: Callable[..., object], label: str) -> Callable[[gr.Request], object]:
    """A click handler that calls `fn(label, request)`: one button per label, one action for all of them."""

    def handler(request: gr.Request):  # type: ignore[no-untyped-def]
        return fn(label, request)

    return handler
