"""NewsLoop's browser app: classify pasted news, take one-click corrections, work a labelling queue.

The page is built around objects it is given (a classifier, a feedback store); it does not load
models itself. `main()` wires the real ones and bootstraps a first champion when there is none.
"""

from __future__ import annotations

import hashlib
import logging
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import gradio as gr

from core.config import Settings, ensure_home, load_settings
from core.labels import LABELS
from core.limits import RateLimiter
from core.text import clean_text
from feedback.store import FeedbackError, FeedbackStore

log = logging.getLogger("newsloop.app")

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
RIGHT = "Right"


class Classifier(Protocol):
    """What the page needs from a model: predictions and the version that made them."""

    version: str | None

    def predict(self, texts: Sequence[str]) -> list[Any]: ...


@dataclass
class LastPrediction:
    text: str
    label: str
    probabilities: dict[str, float]
    model_version: str


class SessionMemory:
    """The last prediction each session saw, so feedback refers to what the user was shown."""

    def __init__(self, capacity: int = 10_000) -> None:
        self._items: OrderedDict[str, LastPrediction] = OrderedDict()
        self._lock = threading.Lock()
        self.capacity = capacity

    def put(self, key: str, value: LastPrediction) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def get(self, key: str) -> LastPrediction | None:
        with self._lock:
            return self._items.get(key)


def client_id(request: gr.Request | None) -> str:
    """A pseudonymous id: the signed-in user's name if the host provides one, else the browser session."""
    if request is None:
        return "anonymous"
    if getattr(request, "username", None):
        return f"user:{request.username}"
    session = getattr(request, "session_hash", None) or "none"
    return "session:" + hashlib.sha256(session.encode()).hexdigest()[:16]


def client_address(request: gr.Request | None) -> str:
    """Who to rate limit: the user if signed in, else a hash of the address the host's proxy saw."""
    if request is None:
        return "anonymous"
    if getattr(request, "username", None):
        return f"user:{request.username}"
    headers = getattr(request, "headers", None) or {}
    forwarded = headers.get("x-forwarded-for", "") if hasattr(headers, "get") else ""
    address = forwarded.split(",")[0].strip() if forwarded else ""
    if not address and getattr(request, "client", None) is not None:
        address = getattr(request.client, "host", "") or ""
    return "addr:" + hashlib.sha256(address.encode()).hexdigest()[:16]


class NewsLoopActions:
    """What each button does, independent of the page layout."""

    def __init__(self, classifier: Classifier, settings: Settings, store: FeedbackStore | None) -> None:
        self.classifier = classifier
        self.settings = settings
        self.store = store
        self.memory = SessionMemory()
        self.classify_limit = RateLimiter(settings.classify_per_minute, 60.0)
        self.login_limit = RateLimiter(5, 60.0)

    # Classify.
    def classify(self, text: str | None, request: gr.Request | None = None) -> tuple[dict[str, float] | None, str]:
        raw = text or ""
        if len(raw) > self.settings.max_input_chars:
            return None, (
                f"This text is {len(raw):,} characters long; the limit is {self.settings.max_input_chars:,}. "
                "Paste the headline and first paragraphs instead."
            )
        if not clean_text(raw):
            return None, "Paste a news headline or article to classify."
        wait = self.classify_limit.check(client_address(request))
        if wait:
            return None, f"Too many requests: try again in {wait:.0f} s."
        start = time.perf_counter()
        prediction = self.classifier.predict([raw])[0]
        elapsed_ms = (time.perf_counter() - start) * 1000.0
        key = getattr(request, "session_hash", None) or client_id(request)
        self.memory.put(
            key, LastPrediction(raw, prediction.label, prediction.probabilities, prediction.model_version)
        )
        note = f"Model **{prediction.model_version}** · {elapsed_ms:.0f} ms"
        if prediction.truncated:
            note += " · long text: only its first part was read"
        return prediction.probabilities, note

    # Feedback on the last prediction.
    def feedback(self, label: str, request: gr.Request | None = None) -> str:
        if self.store is None:
            return "Feedback is not being collected on this server."
        key = getattr(request, "session_hash", None) or client_id(request)
        last = self.memory.get(key)
        if last is None:
            return "Classify a text first, then tell us whether the topic is right."
        user_label = last.label if label == RIGHT else label
        try:
            result = self.store.record(
                # The model reads only the start of a long text; keep what fits the store's limit.
                text=last.text[: self.settings.max_feedback_chars],
                user_label=user_label,
                annotator=client_id(request),
                kind="confirm" if user_label == last.label else "correct",
                predicted_label=last.label,
                probabilities=last.probabilities,
                model_version=last.model_version,
            )
        except FeedbackError as exc:
            return f"Not saved: {exc}"
        if result.duplicate:
            return f"Already saved: **{user_label}**."
        return f"Thanks, saved as **{user_label}**." + (" You can undo it." if result.id else "")

    def undo(self, request: gr.Request | None = None) -> str:
        if self.store is None:
            return "Feedback is not being collected on this server."
        undone = self.store.undo_last(client_id(request))
        if undone is None:
            return "Nothing to undo."
        return f"Undone: your answer **{undone['user_label']}**."


def build_app(classifier: Classifier, settings: Settings, store: FeedbackStore | None = None) -> gr.Blocks:
    """The page. Every handler goes through `NewsLoopActions`."""
    actions = NewsLoopActions(classifier, settings, store)
    with gr.Blocks(title="NewsLoop") as demo:
        gr.Markdown("# NewsLoop\nPaste a news article to see its topic. Tell us when it is wrong: the model learns.")
        with gr.Tab("Classify"), gr.Row():
            with gr.Column(scale=3):
                text = gr.Textbox(
                    label="News text", lines=7, max_length=settings.max_input_chars,
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
        model_note = gr.Markdown(_model_note(classifier))

        classify_btn.click(actions.classify, inputs=text, outputs=[label, info], api_name="classify")
        text.submit(actions.classify, inputs=text, outputs=[label, info], api_visibility="private")
        for name, btn in [(RIGHT, right_btn), *zip(LABELS, topic_btns, strict=True)]:
            btn.click(_bind(actions.feedback, name), outputs=ack, api_visibility="private")
        undo_btn.click(actions.undo, outputs=ack, api_name="undo")
        gr.api(actions.feedback, api_name="feedback")
        demo.load(lambda: _model_note(classifier), outputs=model_note, api_visibility="private")
    return demo


def _bind(fn, label: str):  # type: ignore[no-untyped-def]
    def handler(request: gr.Request) -> str:
        return fn(label, request)

    return handler


def _model_note(classifier: Classifier) -> str:
    model = getattr(classifier, "model", None)
    meta = getattr(model, "meta", {}) if model is not None else {}
    version = getattr(classifier, "version", None) or "none"
    data = meta.get("data", "unknown data")
    return f"Serving model **{version}**, trained on {data}."


def ensure_champion(settings: Settings) -> None:
    """Bootstrap a first champion in a child process, so this serving process never imports torch."""
    from core.registry import ModelRegistry

    if ModelRegistry(settings.models_dir).champion() is not None:
        return
    log.info("no champion model yet: training one now (progress below); this runs once")
    subprocess.run([sys.executable, "-m", "retrain", "bootstrap"], check=True)


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = load_settings()
    ensure_home(settings)
    ensure_champion(settings)
    from core.registry import ModelRegistry
    from core.serving import ChampionService

    service = ChampionService(
        ModelRegistry(settings.models_dir), threads=settings.onnx_threads, check_interval_s=settings.reload_interval_s
    )
    service.refresh()
    service.start_watching()
    store = FeedbackStore(
        settings.feedback_db, max_text_chars=settings.max_feedback_chars, writes_per_minute=settings.feedback_per_minute
    )
    demo = build_app(service, settings, store)
    demo.queue(default_concurrency_limit=8, max_size=256)
    demo.launch(server_name=settings.host, server_port=settings.port)


if __name__ == "__main__":
    main()
