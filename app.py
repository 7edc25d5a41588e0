"""NewsLoop's browser app: classify pasted news, take one-click corrections, work a labelling queue.

The page is built around objects it is given (a classifier, a feedback store); it does not load
models itself. `main()` wires the real ones and bootstraps a first champion when there is none.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
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


def session_key(request: gr.Request | None) -> str:
    """Key of the per-session memory (last prediction, current queue item)."""
    return getattr(request, "session_hash", None) or client_id(request)


def client_address(request: gr.Request | None, trusted_proxy_hops: int = 0) -> str:
    """Who to rate limit: the user if signed in, else a hash of the client's address.

    Behind `trusted_proxy_hops` proxies, each appends the address it saw to X-Forwarded-For; only those
    entries, counted from the right, are believed, since anything to their left is written by the client.
    """
    if request is None:
        return "anonymous"
    if getattr(request, "username", None):
        return f"user:{request.username}"
    headers = getattr(request, "headers", None) or {}
    raw = headers.get("x-forwarded-for", "") if hasattr(headers, "get") else ""
    forwarded = [part.strip() for part in raw.split(",") if part.strip()]
    if trusted_proxy_hops and forwarded:
        address = forwarded[-min(trusted_proxy_hops, len(forwarded))]
    else:
        address = getattr(getattr(request, "client", None), "host", "") or ""
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
        self.queue_items: dict[str, dict[str, Any]] = {}
        self._scored_version: str | None = None
        self._rescore_lock = threading.Lock()

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
        wait = self.classify_limit.check(client_address(request, self.settings.trusted_proxy_hops))
        if wait:
            return None, f"Too many requests: try again in {wait:.0f} s."
        start = time.perf_counter()
        prediction = self.classifier.predict([raw])[0]
        elapsed_ms = (time.perf_counter() - start) * 1000.0
        key = session_key(request)
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
        key = session_key(request)
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

    # Labelling queue.
    def _rescore_if_needed(self) -> None:
        """Order the pool by the current champion's uncertainty (once per champion)."""
        version = self.classifier.version
        if self.store is None or version is None or version == self._scored_version:
            return
        with self._rescore_lock:
            if version != self._scored_version:
                self.store.rescore(lambda texts: _probabilities(self.classifier, texts), version)
                self._scored_version = version

    def queue_next(self, request: gr.Request | None = None) -> tuple[str, str]:
        if self.store is None:
            return "", "The labelling queue is not available on this server."
        annotator = client_id(request)
        self._rescore_if_needed()
        item = self.store.next_item(
            annotator, self.settings.labels_required,
            min_checks=self.settings.min_checks, check_share=self.settings.check_share,
        )
        done = self.store.progress(annotator)
        key = session_key(request)
        if item is None:
            self.queue_items.pop(key, None)
            return "", f"Nothing left to label. You have labelled **{done}** article(s). Thank you!"
        self.queue_items[key] = item
        return item["text"], f"You have labelled **{done}** article(s). Which topic is this one?"

    def queue_answer(self, label: str, request: gr.Request | None = None) -> tuple[str, str, str]:
        if self.store is None:
            return "", "", "The labelling queue is not available on this server."
        key = session_key(request)
        item = self.queue_items.get(key)
        if item is None:
            text, progress = self.queue_next(request)
            return text, progress, "Take an article from the queue first."
        prediction = self.classifier.predict([item["text"]])[0]
        try:
            self.store.record(
                text=item["text"], user_label=label, annotator=client_id(request), kind="queue",
                item_id=item["id"], predicted_label=prediction.label,
                probabilities=prediction.probabilities, model_version=prediction.model_version,
            )
        except FeedbackError as exc:
            return item["text"], "", f"Not saved: {exc}"
        text, progress = self.queue_next(request)
        return text, progress, f"Saved as **{label}**."

    def queue_skip(self, request: gr.Request | None = None) -> tuple[str, str, str]:
        if self.store is None:
            return "", "", "The labelling queue is not available on this server."
        key = session_key(request)
        item = self.queue_items.get(key)
        if item is not None:
            self.store.skip(client_id(request), item["id"])
        text, progress = self.queue_next(request)
        return text, progress, "Skipped." if item is not None else ""

    def undo(self, request: gr.Request | None = None) -> str:
        if self.store is None:
            return "Feedback is not being collected on this server."
        undone = self.store.undo_last(client_id(request))
        if undone is None:
            return "Nothing to undo."
        return f"Undone: your answer **{undone['user_label']}**."


class AdminActions:
    """The maintainer's view. Every handler checks the session server-side: hiding the panel is not security."""

    def __init__(self, classifier: Classifier, settings: Settings, store: FeedbackStore | None) -> None:
        self.classifier = classifier
        self.settings = settings
        self.store = store
        self.sessions: set[str] = set()
        self.login_limit = RateLimiter(5, 300.0)
        self._job: subprocess.Popen[bytes] | None = None
        self._job_lock = threading.Lock()

    def _authorized(self, request: gr.Request | None) -> bool:
        return bool(request is not None and request.session_hash in self.sessions)

    def login(self, password: str, request: gr.Request) -> tuple[str, dict[str, Any]]:
        if not self.settings.admin_enabled:
            return "The admin view is disabled on this server.", gr.update(visible=False)
        wait = self.login_limit.check(client_address(request, self.settings.trusted_proxy_hops))
        if wait:
            return f"Too many attempts: try again in {wait:.0f} s.", gr.update(visible=False)
        expected = self.settings.admin_password.get_secret_value()  # type: ignore[union-attr]
        if not hmac.compare_digest((password or "").encode(), expected.encode()):
            log.warning("admin login refused for %s", client_address(request, self.settings.trusted_proxy_hops))
            return "Wrong password.", gr.update(visible=False)
        self.sessions.add(request.session_hash or "")
        return "Signed in.", gr.update(visible=True)

    def overview(self, request: gr.Request) -> tuple[str, list[list[Any]], list[list[Any]], list[list[Any]], str]:
        """Feedback statistics, suspicious answers, run history, the champion's confusion matrix, retrain progress."""
        if not self._authorized(request):
            return "Sign in first.", [], [], [], ""
        from core.registry import ModelRegistry

        stats = self.store.stats() if self.store else {}
        suspicious = [
            [r["id"], r["annotator"], r["user_label"], r["predicted_label"], r["suspicious_reason"], r["text"][:200]]
            for r in (self.store.answers(status="suspicious", limit=200) if self.store else [])
        ]
        status = ModelRegistry(self.settings.models_dir).status()
        history = [
            [e.get("at"), e.get("action"), e.get("version"), e.get("reason") or "; ".join(e.get("reasons", []))]
            for e in reversed(status["events"])
        ]
        meta = status.get("champion_meta") or {}
        matrix = meta.get("validation", {}).get("confusion_matrix") or []
        confusion = [[LABELS[i], *row] for i, row in enumerate(matrix)]
        summary = {
            "champion": status["champion"],
            "previous": status["previous"],
            "champion_validation": {k: v for k, v in meta.get("validation", {}).items() if k != "confusion_matrix"},
            "feedback": stats,
        }
        return json.dumps(summary, indent=2), suspicious, history, confusion, self._progress()

    def review(self, answer_id: float | None, verdict: str, request: gr.Request) -> str:
        if not self._authorized(request):
            return "Sign in first."
        if self.store is None or answer_id is None:
            return "Enter the id of an answer."
        try:
            self.store.set_status(int(answer_id), verdict)
        except FeedbackError as exc:
            return f"Not changed: {exc}"
        return f"Answer {int(answer_id)} {verdict}."

    def _spawn(self, *args: str) -> str:
        with self._job_lock:
            if self._job is not None and self._job.poll() is None:
                return "A job is already running."
            logs = self.settings.home / "logs"
            logs.mkdir(parents=True, exist_ok=True)
            log_file = (logs / f"{args[0]}-{time.strftime('%Y%m%d-%H%M%S')}.log").open("wb")
            # A child process, so the training code (torch) never loads into the serving process.
            self._job = subprocess.Popen(
                [sys.executable, "-m", "retrain", *args], stdout=log_file, stderr=subprocess.STDOUT,
                cwd=Path(__file__).resolve().parent,
            )
            self._job_log = Path(log_file.name)
            return f"Started `retrain {' '.join(args)}`."

    def launch_retrain(self, request: gr.Request) -> str:
        if not self._authorized(request):
            return "Sign in first."
        return self._spawn("run")

    def rollback(self, request: gr.Request) -> str:
        if not self._authorized(request):
            return "Sign in first."
        return self._spawn("rollback", "--reason", "admin view")

    def _progress(self) -> str:
        progress_file = self.settings.home / "retrain_progress.json"
        lines = []
        if progress_file.is_file():
            lines.append("Last retrain stage: " + json.loads(progress_file.read_text()).get("stage", "?"))
        job = self._job
        if job is not None:
            state = "running" if job.poll() is None else f"finished (exit {job.returncode})"
            tail = self._job_log.read_text(errors="replace")[-1500:] if self._job_log.is_file() else ""
            lines.append(f"Job {state}.\n{tail}")
        return "\n".join(lines)

    def import_pool(self, file: str | None, checks: bool, request: gr.Request) -> str:
        if not self._authorized(request):
            return "Sign in first."
        if self.store is None or not file:
            return "Choose a CSV or JSONL file."
        try:
            report = self.store.import_pool(Path(file), source=Path(file).name, checks=bool(checks))
        except FeedbackError as exc:
            return f"Nothing imported: {exc}"
        what = "known-answer check(s)" if checks else "article(s)"
        return f"Imported {report.added} {what} ({report.duplicates} already in the pool)."

    def export(self, fmt: str, request: gr.Request) -> str | None:
        if not self._authorized(request) or self.store is None:
            return None
        fd, path = tempfile.mkstemp(prefix="newsloop-feedback-", suffix=f".{fmt}")
        os.close(fd)
        self.store.export(Path(path), fmt)
        return path


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
        if settings.admin_enabled:
            build_admin(AdminActions(classifier, settings, store))
        model_note = gr.Markdown(_model_note(classifier))

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
        demo.load(lambda: _model_note(classifier), outputs=model_note, api_visibility="private")
    return demo


def _bind(fn, label: str):  # type: ignore[no-untyped-def]
    def handler(request: gr.Request):  # type: ignore[no-untyped-def]
        return fn(label, request)

    return handler


def _probabilities(classifier: Classifier, texts: list[str]):  # type: ignore[no-untyped-def]
    import numpy as np

    predictions = classifier.predict(texts)
    return np.array([[p.probabilities[name] for name in LABELS] for p in predictions])


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


def start_schedule(settings: Settings) -> threading.Thread | None:
    """In-app retrain schedule: every interval, a child process retrains if enough feedback has arrived."""
    if settings.retrain_interval_min <= 0:
        return None

    def loop() -> None:
        while True:
            time.sleep(settings.retrain_interval_min * 60)
            # `watch --once` checks the count of new answers itself; the retrain lock prevents overlap.
            subprocess.run([sys.executable, "-m", "retrain", "watch", "--once"], check=False)

    thread = threading.Thread(target=loop, name="retrain-schedule", daemon=True)
    thread.start()
    return thread


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = load_settings()
    ensure_home(settings)
    ensure_champion(settings)
    from core.registry import ModelRegistry
    from core.serving import ChampionService

    service = ChampionService(
        ModelRegistry(settings.models_dir),
        threads=settings.onnx_threads,
        check_interval_s=settings.reload_interval_s,
        max_batch=settings.max_batch,
        batch_wait_ms=settings.batch_wait_ms,
    )
    service.refresh()
    service.start_watching()
    store = FeedbackStore(
        settings.feedback_db,
        max_text_chars=settings.max_feedback_chars,
        writes_per_minute=settings.feedback_per_minute,
        contradiction_confidence=settings.suspicious_confidence,
    )
    start_schedule(settings)
    demo = build_app(service, settings, store)
    demo.queue(default_concurrency_limit=8, max_size=256)
    # State (database, models, MLflow store) must never be downloadable, whatever Gradio allows by default.
    demo.launch(server_name=settings.host, server_port=settings.port, blocked_paths=[str(settings.home)])


if __name__ == "__main__":
    main()
