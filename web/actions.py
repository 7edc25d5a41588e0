"""What each user button does (classify, feedback, the labelling queue, undo), independent of the page layout."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import gradio as gr
import numpy as np

from core.labels import LABELS
from core.limits import Limiter, RateLimiter
from core.policies import QueuePolicy
from core.text import clean_text
from feedback.errors import FeedbackError
from feedback.store import FeedbackStore
from web.identity import BoundedMap, Gatekeeper, Identity, LastPrediction, SessionMap

RIGHT = "Right"
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\\/]?[\w.~-]+)*[\\/]([\w.-]+)")  # a file path; group 1 is its last part


class Classifier(Protocol):
    """What the page needs from a model: predictions, batch probabilities, and the version that made them."""

    version: str | None

    def predict(self, texts: Sequence[str]) -> list[Any]: ...

    def proba_in_label_order(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class PageLimits:
    """What the page accepts from one client; built from settings at the edge (app.py)."""

    max_input_chars: int  # longer input is refused with a message
    classify_per_minute: int  # per client address
    queue_per_minute: int = 120  # queue requests (next, answer, skip) per client address
    session_capacity: int = 10_000  # sessions whose last prediction and queue item are remembered


def storable(text: str) -> str:
    """`text` with anything UTF-8 cannot hold (a lone surrogate) replaced, so what is shown can be saved."""
    return text.encode("utf-8", "replace").decode("utf-8")


def snippet(text: str, words: int = 8) -> str:
    """The first words of an article, quoted, so a message names the article it is about."""
    parts = " ".join(text.split()).split(" ")
    return "“" + " ".join(parts[:words]) + ("…" if len(parts) > words else "") + "”"


def _topic(label: object) -> str | None:
    """A button's or API caller's label, if it names a topic (or RIGHT)."""
    if not isinstance(label, str) or len(label) > 40:
        return None
    return label if label == RIGHT or label in LABELS else None


class NewsLoopActions:
    """What each button does, independent of the page layout.

    Who is asking comes from `gate` (web.identity): a server-issued identity, never the client's choice.
    """

    def __init__(
        self,
        classifier: Classifier,
        store: FeedbackStore | None,
        *,
        limits: PageLimits,
        queue: QueuePolicy,
        gate: Gatekeeper,
        classify_limit: Limiter | None = None,
        queue_limit: Limiter | None = None,
        queue_items: SessionMap | None = None,
    ) -> None:
        """The limiters and the queue-item map default to this process's memory; replicas pass ones kept in
        the shared database (see `app.shared_web_state`)."""
        self.classifier = classifier
        self.store = store
        self.limits = limits
        self.queue = queue
        self.gate = gate
        self.memory: BoundedMap[LastPrediction] = BoundedMap(limits.session_capacity)
        self.queue_items: SessionMap = queue_items or BoundedMap(limits.session_capacity)
        self.classify_limit: Limiter = classify_limit or RateLimiter(limits.classify_per_minute, 60.0)
        self.queue_limit: Limiter = queue_limit or RateLimiter(limits.queue_per_minute, 60.0)
        self._scored_version: str | None = None
        self._rescore_lock = threading.Lock()

    # Classify.
    def classify(self, text: str | None, request: gr.Request | None = None) -> tuple[dict[str, float] | None, str]:
        if text is not None and not isinstance(text, str):
            return None, "Send the text to classify as a string."
        raw = storable(text or "")
        if len(raw) > self.limits.max_input_chars:
            return None, (
                f"This text is {len(raw):,} characters long; the limit is {self.limits.max_input_chars:,}. "
                "Paste the headline and first paragraphs instead."
            )
        if not clean_text(raw):
            return None, "Paste a news headline or article to classify."
        who = self.gate.identify(request)
        wait = self.classify_limit.check(who.address)
        if wait:
            return None, f"Too many requests: try again in {wait:.0f} s."
        start = time.perf_counter()
        prediction = self.classifier.predict([raw])[0]
        elapsed_ms = (time.perf_counter() - start) * 1000.0
        if who.session:
            last = LastPrediction(raw, prediction.label, prediction.probabilities, prediction.model_version)
            self.memory.put(who.session, last)
        note = f"Model **{prediction.model_version}** · {elapsed_ms:.0f} ms"
        if prediction.truncated:
            note += " · long text: only its first part was read"
        return prediction.probabilities, note

    # Feedback on the last prediction.
    def feedback(self, label: str, request: gr.Request | None = None) -> str:
        if self.store is None:
            return "Feedback is not being collected on this server."
        topic = _topic(label)
        if topic is None:
            return f"Not saved: the topic must be one of {', '.join(LABELS)}."
        who = self.gate.identify(request)
        last = self.memory.get(who.session) if who.session else None
        if last is None:
            return "Classify a text first, then tell us whether the topic is right."
        user_label = last.label if topic == RIGHT else topic
        try:
            result = self.store.record(
                # The model reads only the start of a long text; keep what fits the store's limit.
                text=last.text[: self.store.limits.max_text_chars],
                user_label=user_label,
                annotator=who.annotator,
                kind="confirm" if user_label == last.label else "correct",
                predicted_label=last.label,
                probabilities=last.probabilities,
                model_version=last.model_version,
                verified=who.verified,
                address=who.address,
            )
        except FeedbackError as exc:
            return f"Not saved: {exc}"
        if user_label != last.label and not result.duplicate:
            self._queue_candidate(last.text)
        if result.duplicate:
            return f"Already saved: **{user_label}** for {snippet(last.text)}."
        return f"Thanks, saved as **{user_label}**: {snippet(last.text)}." + (" You can undo it." if result.id else "")

    def _queue_candidate(self, text: str) -> None:
        """A corrected text goes to the labelling queue, so others (whose answers may train) label it too."""
        assert self.store is not None
        try:
            if self.store.add_to_pool([text[: self.store.limits.max_text_chars]], source="correction").added:
                self._scored_version = None  # score the new item before the queue serves it
        except FeedbackError:
            pass  # a text the pool refuses stays a stored answer only

    # Labelling queue.
    def _rescore_if_needed(self) -> None:
        """Order the pool by the current champion's uncertainty (once per champion)."""
        version = self.classifier.version
        if self.store is None or version is None or version == self._scored_version:
            return
        with self._rescore_lock:
            if version != self._scored_version:
                self.store.rescore(self.classifier.proba_in_label_order, version)
                self._scored_version = version

    def _queue_refusal(self, who: Identity) -> str | None:
        if self.store is None:
            return "The labelling queue is not available on this server."
        if not who.session:
            return "Your browser did not send its NewsLoop id: reload the page (cookies must be on)."
        wait = self.queue_limit.check(who.address)
        return f"Too many requests: try again in {wait:.0f} s." if wait else None

    def _next(self, who: Identity) -> tuple[str, str]:
        assert self.store is not None
        self._rescore_if_needed()
        item = self.store.next_item(who.annotator, self.queue)
        return self._show(who, item)

    def _show(self, who: Identity, item: dict[str, Any] | None) -> tuple[str, str]:
        assert self.store is not None
        done = self.store.progress(who.annotator)
        if item is None:
            self.queue_items.pop(who.session)
            return "", f"Nothing left to label. You have labelled **{done}** article(s). Thank you!"
        self.queue_items.put(who.session, item)
        # Checks and ordinary items are counted together (feedback.progress): the count never tells them apart.
        left = max(self.store.queue_left(who.annotator, self.queue), 1)
        return item["text"], f"You have labelled **{done}**, **{left}** left."

    def queue_next(self, request: gr.Request | None = None) -> tuple[str, str]:
        who = self.gate.identify(request)
        refusal = self._queue_refusal(who)
        return ("", refusal) if refusal else self._next(who)

    def queue_answer(self, label: str, request: gr.Request | None = None) -> tuple[str, str, str]:
        who = self.gate.identify(request)
        refusal = self._queue_refusal(who)
        if refusal:
            return "", "", refusal
        assert self.store is not None
        topic = _topic(label)
        item = self.queue_items.get(who.session)
        if item is None:
            text, progress = self._next(who)
            return text, progress, "Here is an article: choose its topic."
        if topic is None or topic == RIGHT:
            return item["text"], "", f"Not saved: the topic must be one of {', '.join(LABELS)}."
        prediction = self.classifier.predict([item["text"]])[0]
        try:
            self.store.record(
                text=item["text"], user_label=topic, annotator=who.annotator, kind="queue",
                item_id=item["id"], predicted_label=prediction.label,
                probabilities=prediction.probabilities, model_version=prediction.model_version,
                verified=who.verified, address=who.address,
            )
        except FeedbackError as exc:
            return item["text"], "", f"Not saved: {exc}"
        text, progress = self._next(who)
        return text, progress, f"Saved as **{topic}**: {snippet(item['text'])}."

    def queue_skip(self, request: gr.Request | None = None) -> tuple[str, str, str]:
        who = self.gate.identify(request)
        refusal = self._queue_refusal(who)
        if refusal:
            return "", "", refusal
        assert self.store is not None
        item = self.queue_items.get(who.session)
        if item is not None:
            try:
                self.store.skip(who.annotator, item["id"], self.queue.max_skips)
            except FeedbackError as exc:
                return item["text"], "", f"Not skipped: {exc}."
        text, progress = self._next(who)
        return text, progress, "Skipped." if item is not None else ""

    def undo(self, request: gr.Request | None = None) -> str:
        if self.store is None:
            return "Feedback is not being collected on this server."
        who = self.gate.identify(request)
        if not who.annotator:
            return "Nothing to undo."
        # Only this tab's answers: the queue has its own undo.
        undone = self.store.undo_last(who.annotator, ("confirm", "correct"))
        if undone is None:
            return "Nothing to undo."
        return f"Undone: your answer **{undone['user_label']}** for {snippet(undone['text'])}."

    def queue_undo(self, request: gr.Request | None = None) -> tuple[str, str, str]:
        """Withdraw this annotator's last queue answer and show that article again, to label it anew."""
        who = self.gate.identify(request)
        refusal = self._queue_refusal(who)
        if refusal:
            return "", "", refusal
        assert self.store is not None
        undone = self.store.undo_last(who.annotator, ("queue",))
        if undone is None or undone.get("item_id") is None:
            item = self.queue_items.get(who.session)
            return (item or {}).get("text", ""), "", "Nothing to undo in the queue."
        text, progress = self._show(who, {"id": undone["item_id"], "text": undone["text"]})
        return text, progress, f"Undone: **{undone['user_label']}** for {snippet(undone['text'])}. Label it again."

    # The footer.
    def model_note(self) -> str:
        model = getattr(self.classifier, "model", None)
        meta = getattr(model, "meta", {}) if model is not None else {}
        version = getattr(self.classifier, "version", None) or "none"
        # Never a server path on the page: a local data folder is named by its last part only.
        data = _PATH.sub(r"\1", str(meta.get("data", "unknown data")))
        trained = str(meta.get("trained_at") or meta.get("committed_at") or "")[:10]
        return f"Serving model **{version}**, trained on {data}" + (f" ({trained})." if trained else ".")
