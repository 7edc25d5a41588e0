"""What each user button does (classify, feedback, the labelling queue, undo), independent of the page layout."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from core.serving.limits import Limiter, RateLimiter
from core.settings.policies import QueuePolicy
from core.text import clean_text
from feedback.errors import FeedbackError
from feedback.labelling.answers import AnswerInput
from feedback.labelling.guidelines import render as render_guidelines
from feedback.store import FeedbackStore
from feedback.topics.unlisted import UnlistedInput
from web.page.answer_rules import NONE, NONE_WORDS, RIGHT, names_shown, new_shown_id, snippet, topic_of, undone_words
from web.page.labelling import BufferedQueue, LabellingQueue
from web.server.identity import Identity, IdentityService
from web.server.serving import Classifier, PageLimits, storable
from web.server.session_memory import BoundedMap, LastPrediction, SessionMap, queue_item_bytes, text_digest
from web.server.topics import PageTopics, one_of

__all__ = ["NO_MODEL_NOTE", "RIGHT", "AnswerOutcome", "Classifier", "NewsLoopActions", "PageLimits", "storable"]
STALE = "This result is no longer on screen: classify the text again."
NO_MODEL_NOTE = "No model is served yet."  # the footer while there is no champion
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\\/]?[\w.~-]+)*[\\/]([\w.-]+)")  # a file path; group 1 is its last part


@dataclass(frozen=True)
class AnswerOutcome:
    """What became of a one-click answer: the message to show, whether it is stored (now or before), and
    whether it named a prediction no longer on screen (the page then makes the result unanswerable)."""

    message: str
    saved: bool = False
    stale: bool = False


@dataclass(frozen=True)
class PageShared:
    """What replicas over one database must agree on for the page (app.shared_web_state): the rate limiters of
    classifications and queue requests, and each tab's queue item. None: this process's own, in memory."""

    classify_limit: Limiter | None = None
    queue_limit: Limiter | None = None
    queue_items: SessionMap | None = None


class NewsLoopActions:
    """What each button does, independent of the page layout.

    Who is asking comes from `identities` (web.server.identity): a server-issued identity, never the client's choice;
    `profile` is the `gr.OAuthProfile` Gradio injects when a Hugging Face account is signed in. Every
    answer names what was on screen by the id the server issued when it showed it (a prediction, a queue
    item); an answer naming anything else is refused. The queue's buttons are `labelling` (web.page.labelling).
    """

    def __init__(
        self,
        classifier: Classifier,
        store: FeedbackStore | None,
        *,
        limits: PageLimits,
        queue: QueuePolicy,
        identities: IdentityService,
        shared: PageShared | None = None,
        refused: Callable[[str], None] | None = None,
        pool_added: Callable[[], None] | None = None,
    ) -> None:
        """The limiters and the queue-item map default to this process's memory; replicas pass ones kept in
        the shared database (`shared`; see `app.shared_web_state`). `refused` hears why each classification is
        refused ("invalid", "too_long", "empty", "rate_limited": the server's metrics count them); `pool_added` hears
        that a correction joined the pool (the background scorer then scores it at once)."""
        shared = shared or PageShared()
        self.classifier = classifier
        self.store = store
        self.refused = refused or (lambda reason: None)
        self.pool_added = pool_added or (lambda: None)
        self.limits = limits
        self.queue = queue
        self.identities = identities
        self.topics = PageTopics(classifier, store)  # what the buttons offer and the names shown, read on each use
        budget, capacity = limits.session_memory_bytes, limits.session_capacity
        self.memory: BoundedMap[LastPrediction] = BoundedMap(capacity, budget, lambda last: last.nbytes)
        self.queue_items: SessionMap = shared.queue_items or BoundedMap(capacity, budget, queue_item_bytes)
        self.classify_limit: Limiter = shared.classify_limit or RateLimiter(limits.classify_per_minute, 60.0)
        self.queue_limit: Limiter = shared.queue_limit or RateLimiter(limits.queue_per_minute, 60.0)
        self.labelling = LabellingQueue(classifier, store, policy=queue, identities=identities, limit=self.queue_limit,
                                        items=self.queue_items, topics=self.topics)
        self.buffered = BufferedQueue(self.labelling)  # the page's queue tab: items held ahead, answers sent behind

    # Classify.
    def classify(
        self, text: str | None, request: gr.Request | None = None, profile: gr.OAuthProfile | None = None
    ) -> tuple[dict[str, float] | None, str, str]:
        """(probabilities by the topics' current names, note, prediction id): the id names this result in answers
        ("" when none can be given)."""
        who = self.identities.identify(request, profile)
        if who.session:
            self.memory.pop(who.session)  # whatever this tab showed is replaced, by a result or by a message
        if text is not None and not isinstance(text, str):
            self.refused("invalid")
            return None, "Send the text to classify as a string.", ""
        raw = storable(text or "")
        if len(raw) > self.limits.max_input_chars:
            self.refused("too_long")
            return None, (
                f"This text is {len(raw):,} characters long; the limit is {self.limits.max_input_chars:,}. "
                "Paste the headline and first paragraphs instead."
            ), ""
        if not clean_text(raw):
            self.refused("empty")
            return None, "Paste a news headline or article to classify.", ""
        wait = self.classify_limit.check(who.address)
        if wait:
            self.refused("rate_limited")
            return None, f"Too many requests: try again in {wait:.0f} s.", ""
        start = time.perf_counter()
        prediction = self.classifier.predict([raw])[0]
        elapsed_ms = (time.perf_counter() - start) * 1000.0
        note = f"Model **{prediction.model_version}** · {elapsed_ms:.0f} ms"
        if prediction.truncated:
            note += " · long text: only its first part was read"
        return self.topics.named(prediction.probabilities), note, self._remember(who, raw, prediction)

    def classify_refusal(self, request: Any) -> str | None:
        """Why a classification from this request's address is refused before it joins the page's queue (over
        its rate limit: `web.server.asgi.RequestGuard` answers 429 at once), or None. The handler still counts it."""
        wait = self.classify_limit.peek(self.identities.address_of(request))
        return f"Too many requests: try again in {wait:.0f} s." if wait else None

    def _remember(self, who: Identity, raw: str, prediction: Any) -> str:
        """Keep what an answer to this prediction needs, under a fresh id; "" when no answer can be stored."""
        if self.store is None or not who.session:
            return ""
        shown = LastPrediction(
            id=new_shown_id(),
            # The model reads only the start of a long text; keep what fits the store's limit.
            text=raw[: self.store.limits.max_text_chars],
            text_digest=text_digest(raw),
            label=prediction.label,
            probabilities=prediction.probabilities,
            model_version=prediction.model_version,
        )
        self.memory.put(who.session, shown)
        return shown.id

    # Feedback on the prediction on screen.
    def feedback(
        self, label: str, prediction: str, text: str,
        request: gr.Request | None = None, profile: gr.OAuthProfile | None = None,
    ) -> str:
        """Answer the prediction `prediction` (its id) made for `text` (the box's content): the API's form."""
        return self.answer(label, prediction, text, request, profile).message

    def answer(
        self, label: object, prediction: object, text: object, request: Any = None, profile: Any = None
    ) -> AnswerOutcome:
        """Store `label` for the prediction on this tab's screen, if `prediction` names it and the box still
        holds the text it was made for; a different label than this person's earlier one replaces it."""
        if self.store is None:
            return AnswerOutcome("Feedback is not being collected on this server.")
        taxonomy = self.topics.taxonomy()
        mismatch = self.topics.mismatch(taxonomy)
        if mismatch:
            return AnswerOutcome(f"Not saved: {mismatch}")
        if isinstance(label, str) and label.startswith(NONE):
            return self.answer_none(label[len(NONE):], prediction, text, request, profile)
        topic = topic_of(label, taxonomy)
        if topic is None:
            return AnswerOutcome(f"Not saved: {one_of(taxonomy)}")
        who = self.identities.identify(request, profile)
        last = self._on_screen(who, prediction, text)
        if isinstance(last, AnswerOutcome):
            return last
        # "Right" confirms the model's topic as it is now: a topic since merged away means the one it joined.
        user_label = (last.label if last.label in taxonomy.keys else taxonomy.exact(last.label)) if topic == RIGHT else topic
        if user_label is None:
            return AnswerOutcome(f"Not saved: the model's topic was split since; choose one of {', '.join(taxonomy.names)}.")
        try:
            result = self.store.answers.record(AnswerInput(
                text=last.text,
                user_label=user_label,
                annotator=who.annotator,
                kind="confirm" if user_label == last.label else "correct",
                predicted_label=last.label,
                probabilities=last.probabilities,
                model_version=last.model_version,
                verified=who.verified,
                address=who.address,
            ))
        except FeedbackError as exc:
            return AnswerOutcome(f"Not saved: {exc}")
        if user_label != last.label and not result.duplicate:
            self._queue_candidate(last.text, who, result.id)
        name = taxonomy.name_of(user_label)
        if result.duplicate:
            return AnswerOutcome(f"Already saved: **{name}** for {snippet(last.text)}.", saved=True)
        done = "Changed your answer: saved as" if result.replaced else "Thanks, saved as"
        return AnswerOutcome(f"{done} **{name}**: {snippet(last.text)}. You can undo it.", saved=True)

    def answer_none(
        self, missing: object, prediction: object, text: object, request: Any = None, profile: Any = None
    ) -> AnswerOutcome:
        """Say that no topic fits the text of the prediction on this tab's screen ("None of these"), naming the
        missing topic if `missing` is not empty; kept apart from the answers (`UnlistedAnswers.record`)."""
        assert self.store is not None
        who = self.identities.identify(request, profile)
        last = self._on_screen(who, prediction, text)
        if isinstance(last, AnswerOutcome):
            return last
        try:
            result = self.store.unlisted.record(UnlistedInput(
                text=last.text, annotator=who.annotator, kind="correct", name=missing, predicted_label=last.label,
                model_version=last.model_version, verified=who.verified, address=who.address,
            ))
        except FeedbackError as exc:
            return AnswerOutcome(f"Not saved: {exc}.")
        named = f" (missing topic: **{result.name}**)" if result.name else ""
        done = "Already saved" if result.duplicate else "Thanks, saved"
        return AnswerOutcome(f"{done}: **{NONE_WORDS}**{named} for {snippet(last.text)}. You can undo it.", saved=True)

    def _on_screen(self, who: Identity, prediction: object, text: object) -> LastPrediction | AnswerOutcome:
        """The prediction this tab's screen shows, from the session's memory, or the AnswerOutcome that says why an
        answer to it cannot be taken (nothing classified yet, or the screen no longer shows it)."""
        last = self.memory.get(who.session) if who.session else None
        if last is None:
            return AnswerOutcome("Classify a text first, then tell us whether the topic is right.", stale=True)
        box = storable(text) if isinstance(text, str) else None
        if not names_shown(prediction, last.id) or box is None or text_digest(box) != last.text_digest:
            return AnswerOutcome(STALE, stale=True)
        return last

    def _queue_candidate(self, text: str, who: Identity, answer_id: int) -> None:
        """A corrected text goes to the labelling pool, so others (whose answers may train) label it too.

        Anyone can paste anything, so a correction from someone the host did not sign in is held: the queue
        serves it to nobody until a maintainer accepts an answer on it (`Pool.held` lists them)."""
        assert self.store is not None
        held = None if who.verified else (who.annotator, f"answer {answer_id}: a correction by a visitor not signed in")
        try:
            added = self.store.pool.add([text[: self.store.limits.max_text_chars]], source="correction", held=held)
            if added.added:
                self.pool_added()
        except FeedbackError:
            pass  # a text the pool refuses stays a stored answer only

    def undo(self, request: gr.Request | None = None, profile: gr.OAuthProfile | None = None) -> str:
        """Withdraw this person's last answer given on the Classify tab (the queue has its own undo)."""
        if self.store is None:
            return "Feedback is not being collected on this server."
        who = self.identities.identify(request, profile)
        if not who.annotator:
            return "Nothing to undo."
        undone = self.store.undo_last(who.annotator, ("confirm", "correct"))
        if undone is None:
            return "Nothing to undo."
        name = undone_words(undone, self.topics.taxonomy())
        return f"Undone: your answer **{name}** for {snippet(undone['text'])}."

    def guidelines(self) -> str:
        """The labelling guidelines as labellers read them: the topics' section, then the text in force."""
        assert self.store is not None
        taxonomy = self.topics.taxonomy()
        return render_guidelines(self.store.guidelines.current(taxonomy).text, taxonomy)

    # The footer.
    def model_note(self) -> str:
        """The footer's line: the model served and what it was trained on, or that there is none yet."""
        # core.serving.classifier loads ONNX Runtime; imported here, once the page asks, as web.server.api does.
        from core.serving.classifier import NoChampionError

        try:
            # A service's `model` loads the champion if it can, and raises when there is none.
            meta = self.classifier.model.meta
        except NoChampionError:
            return NO_MODEL_NOTE
        version = self.classifier.version
        if version is None:  # a classifier without a model (a test's fake) serves nothing either
            return NO_MODEL_NOTE
        # Never a server path on the page: a local data folder is named by its last part only.
        data = _PATH.sub(r"\1", str(meta.get("data", "unknown data")))
        trained = str(meta.get("trained_at") or meta.get("committed_at") or "")[:10]
        return f"Serving model **{version}**, trained on {data}" + (f" ({trained})." if trained else ".")
