"""What each user button does (classify, feedback, the labelling queue, undo), independent of the page layout."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import gradio as gr
import numpy as np

from core.limits import RateLimiter
from core.policies import QueuePolicy
from core.text import clean_text
from feedback.errors import FeedbackError
from feedback.store import FeedbackStore
from web.identity import LastPrediction, SessionMemory, client_address, client_id, session_key

RIGHT = "Right"


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
    trusted_proxy_hops: int  # proxies whose X-Forwarded-For entries are believed (see web.identity)


class NewsLoopActions:
    """What each button does, independent of the page layout."""

    def __init__(
        self,
        classifier: Classifier,
        store: FeedbackStore | None,
        *,
        limits: PageLimits,
        queue: QueuePolicy,
    ) -> None:
        self.classifier = classifier
        self.store = store
        self.limits = limits
        self.queue = queue
        self.memory = SessionMemory()
        self.classify_limit = RateLimiter(limits.classify_per_minute, 60.0)
        self.queue_items: dict[str, dict[str, Any]] = {}
        self._scored_version: str | None = None
        self._rescore_lock = threading.Lock()

    # Classify.
    def classify(self, text: str | None, request: gr.Request | None = None) -> tuple[dict[str, float] | None, str]:
        raw = text or ""
        if len(raw) > self.limits.max_input_chars:
            return None, (
                f"This text is {len(raw):,} characters long; the limit is {self.limits.max_input_chars:,}. "
                "Paste the headline and first paragraphs instead."
            )
        if not clean_text(raw):
            return None, "Paste a news headline or article to classify."
        wait = self.classify_limit.check(client_address(request, self.limits.trusted_proxy_hops))
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
                text=last.text[: self.store.limits.max_text_chars],
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
                self.store.rescore(self.classifier.proba_in_label_order, version)
                self._scored_version = version

    def queue_next(self, request: gr.Request | None = None) -> tuple[str, str]:
        if self.store is None:
            return "", "The labelling queue is not available on this server."
        annotator = client_id(request)
        self._rescore_if_needed()
        item = self.store.next_item(annotator, self.queue)
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

    # The footer.
    def model_note(self) -> str:
        model = getattr(self.classifier, "model", None)
        meta = getattr(model, "meta", {}) if model is not None else {}
        version = getattr(self.classifier, "version", None) or "none"
        data = meta.get("data", "unknown data")
        trained = str(meta.get("trained_at") or meta.get("committed_at") or "")[:10]
        return f"Serving model **{version}**, trained on {data}" + (f" ({trained})." if trained else ".")
