"""The labelling queue's buttons (next, answer, skip, undo), each acting only on the item the tab was shown."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.labels import LABELS
from core.serving.limits import Limiter
from core.settings.policies import QueuePolicy
from feedback.errors import FeedbackError
from feedback.store import FeedbackStore
from web.page.answer_rules import RIGHT, names_shown, new_shown_id, snippet, topic_of
from web.page.session_memory import SessionMap
from web.server.identity import Identity, IdentityService

QUEUE_STALE = "that article is no longer on screen. Here is the one to label."


@dataclass(frozen=True)
class QueueView:
    """What the queue shows after a request; None = leave that part of the screen as it is."""

    text: str | None
    progress: str | None
    message: str
    shown: str | None  # the server-issued id of the item on screen ("" when none): answers must name it

    def as_tuple(self) -> tuple[str, str, str, str]:
        """(text, progress, message, shown) for API callers, with "" for what did not change."""
        return self.text or "", self.progress or "", self.message, self.shown or ""



class LabellingQueue:
    """The queue's actions for one server. Each item a tab is shown gets a server-issued id, kept in `items`
    with the item; an answer or skip must name it, so a key pressed twice, or a request from a stale page,
    never lands on an article that was not on that screen. `before_next` runs before an item is picked
    (the page orders the pool by its champion's uncertainty there)."""

    def __init__(
        self,
        classifier: Any,
        store: FeedbackStore | None,
        *,
        policy: QueuePolicy,
        identities: IdentityService,
        limit: Limiter,
        items: SessionMap,
        before_next: Callable[[], None] = lambda: None,
    ) -> None:
        self.classifier = classifier
        self.store = store
        self.policy = policy
        self.identities = identities
        self.limit = limit
        self.items = items
        self.before_next = before_next

    def _queue_refusal(self, who: Identity) -> QueueView | None:
        if self.store is None:
            return QueueView(None, None, "The labelling queue is not available on this server.", None)
        if not who.session:
            return QueueView(None, None, "Your browser did not send its NewsLoop id: reload the page (cookies must be on).",
                             None)
        wait = self.limit.check(who.address)
        return QueueView(None, None, f"Too many requests: try again in {wait:.0f} s.", None) if wait else None

    def _next(self, who: Identity, message: str = "") -> QueueView:
        assert self.store is not None
        self.before_next()
        return self._show(who, self.store.next_item(who.annotator, self.policy), message)

    def _show(self, who: Identity, item: dict[str, Any] | None, message: str = "") -> QueueView:
        """Put `item` on this tab's screen under a fresh id (None: nothing left)."""
        assert self.store is not None
        done = self.store.progress(who.annotator)
        if item is None:
            self.items.pop(who.session)
            return QueueView("", f"Nothing left to label. You have labelled **{done}** article(s). Thank you!", message, "")
        shown = new_shown_id()
        self.items.put(who.session, {"id": item["id"], "text": item["text"], "shown": shown})
        # Checks and ordinary items are counted together (feedback.progress): the count never tells them apart.
        left = max(self.store.queue_left(who.annotator, self.policy), 1)
        return QueueView(item["text"], f"You have labelled **{done}**, **{left}** left.", message, shown)

    def next(self, request: Any = None, profile: Any = None) -> QueueView:
        who = self.identities.identify(request, profile)
        return self._queue_refusal(who) or self._next(who)

    def answer(self, label: object, shown: object, request: Any = None, profile: Any = None) -> QueueView:
        """Store `label` for the queue item on this tab's screen, if `shown` names it; then show the next one."""
        who = self.identities.identify(request, profile)
        refusal = self._queue_refusal(who)
        if refusal:
            return refusal
        assert self.store is not None
        item = self.items.get(who.session)
        if item is None:
            return self._next(who, "Here is an article: choose its topic.")
        if not names_shown(shown, item.get("shown")):
            return QueueView(item["text"], None, f"Not saved: {QUEUE_STALE}", item.get("shown"))
        topic = topic_of(label)
        if topic is None or topic == RIGHT:
            return QueueView(item["text"], None, f"Not saved: the topic must be one of {', '.join(LABELS)}.", item["shown"])
        prediction = self.classifier.predict([item["text"]])[0]
        try:
            self.store.record(
                text=item["text"], user_label=topic, annotator=who.annotator, kind="queue",
                item_id=item["id"], predicted_label=prediction.label,
                probabilities=prediction.probabilities, model_version=prediction.model_version,
                verified=who.verified, address=who.address,
            )
        except FeedbackError as exc:
            return QueueView(item["text"], None, f"Not saved: {exc}", item["shown"])
        return self._next(who, f"Saved as **{topic}**: {snippet(item['text'])}.")

    def skip(self, shown: object, request: Any = None, profile: Any = None) -> QueueView:
        """Skip the queue item on this tab's screen, if `shown` names it; then show the next one."""
        who = self.identities.identify(request, profile)
        refusal = self._queue_refusal(who)
        if refusal:
            return refusal
        assert self.store is not None
        item = self.items.get(who.session)
        if item is not None:
            if not names_shown(shown, item.get("shown")):
                return QueueView(item["text"], None, f"Not skipped: {QUEUE_STALE}", item.get("shown"))
            try:
                self.store.skip(who.annotator, item["id"], self.policy.max_skips)
            except FeedbackError as exc:
                return QueueView(item["text"], None, f"Not skipped: {exc}.", item["shown"])
        return self._next(who, "Skipped." if item is not None else "")

    def undo(self, request: Any = None, profile: Any = None) -> QueueView:
        """Withdraw this annotator's last queue answer and show that article again, to label it anew."""
        who = self.identities.identify(request, profile)
        refusal = self._queue_refusal(who)
        if refusal:
            return refusal
        assert self.store is not None
        undone = self.store.undo_last(who.annotator, ("queue",))
        if undone is None or undone.get("item_id") is None:
            return QueueView(None, None, "Nothing to undo in the queue.", None)
        message = f"Undone: **{undone['user_label']}** for {snippet(undone['text'])}. Label it again."
        return self._show(who, {"id": undone["item_id"], "text": undone["text"]}, message)
