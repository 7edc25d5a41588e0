"""The labelling queue's buttons (next, answer, skip, undo), each acting only on the item the tab was shown."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.serving.limits import Limiter
from core.settings.policies import QueuePolicy
from feedback.errors import FeedbackError, RateLimited
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from feedback.topics.unlisted import UnlistedInput
from web.page.answer_rules import NONE_WORDS, RIGHT, names_shown, new_shown_id, snippet, topic_of, undone_words
from web.server.identity import Identity, IdentityService
from web.server.serving import Classifier
from web.server.session_memory import SessionMap
from web.server.topics import PageTopics, one_of

QUEUE_STALE = "that article is no longer on screen. Here is the one to label."
# What an empty queue says: where articles come from, and how the maintainer adds them (never "press again").
EMPTY = ("Nothing left to label for you. Articles to label come from this site's maintainer, who adds them with "
         "`newsloop import FILE` or the upload in the admin view.")
# The page's buffer (web/page/queue.js): how many items one tab may hold, unanswered, and what one sync may carry.
BUFFER = 5
MAX_OPS = 8
_DONE_KEPT = 32  # answered ids a tab's state remembers, so a resent answer is "saved" again, never stored twice
_LOCKS = 64


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
    never lands on an article that was not on that screen. The pool is scored in the background
    (`feedback.labelling.scoring`), never in a labeller's request."""

    def __init__(
        self,
        classifier: Classifier,
        store: FeedbackStore | None,
        *,
        policy: QueuePolicy,
        identities: IdentityService,
        limit: Limiter,
        items: SessionMap,
        topics: PageTopics | None = None,
    ) -> None:
        self.classifier = classifier
        self.topics = topics or PageTopics(classifier, store)
        self.store = store
        self.policy = policy
        self.identities = identities
        self.limit = limit
        self.items = items

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
        self.store.pool.release(who.session)  # what this tab was shown is answered, skipped or replaced
        return self._show(who, self.store.pool.next_item(who.annotator, self.policy, holder=who.session), message)

    def _show(self, who: Identity, item: dict[str, Any] | None, message: str = "") -> QueueView:
        """Put `item` on this tab's screen under a fresh id (None: nothing left)."""
        assert self.store is not None
        done = self.store.pool.progress(who.annotator)
        if item is None:
            self.items.pop(who.session)
            return QueueView("", f"{EMPTY} You have labelled **{done}** article(s). Thank you!", message, "")
        shown = new_shown_id()
        self.items.put(who.session, {"id": item["id"], "text": item["text"], "shown": shown})
        # Checks and ordinary items are counted together (`Pool.queue_left`): the count never tells them apart.
        left = max(self.store.pool.queue_left(who.annotator, self.policy), 1)
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
        taxonomy = self.topics.taxonomy()
        mismatch = self.topics.mismatch(taxonomy)
        if mismatch:
            return QueueView(item["text"], None, f"Not saved: {mismatch}", item["shown"])
        topic = topic_of(label, taxonomy)
        if topic is None or topic == RIGHT:
            return QueueView(item["text"], None, f"Not saved: {one_of(taxonomy)}", item["shown"])
        prediction = self.classifier.predict([item["text"]])[0]
        try:
            self.store.answers.record(AnswerInput(
                text=item["text"], user_label=topic, annotator=who.annotator, kind="queue",
                item_id=item["id"], predicted_label=prediction.label,
                probabilities=prediction.probabilities, model_version=prediction.model_version,
                verified=who.verified, address=who.address,
            ))
        except FeedbackError as exc:
            return QueueView(item["text"], None, f"Not saved: {exc}", item["shown"])
        return self._next(who, f"Saved as **{taxonomy.name_of(topic)}**: {snippet(item['text'])}.")

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
                self.store.pool.skip(who.annotator, item["id"], self.policy.max_skips)
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
        name = undone_words(undone, self.topics.taxonomy())
        message = f"Undone: **{name}** for {snippet(undone['text'])}. Label it again."
        self.store.pool.release(who.session)
        self.store.pool.hold(who.session, [int(undone["item_id"])], self.policy)
        return self._show(who, {"id": undone["item_id"], "text": undone["text"]}, message)


class BufferedQueue:
    """The page's buffered queue (web/page/queue.js): one `sync` carries the tab's answers, skips and undos, in
    the order they were made, and tops its buffer up to `BUFFER` items. Each item is put in the tab's state under
    a server-issued id; an answer naming any other id is refused, so the rules of `LabellingQueue` hold
    unchanged: every op counts against the queue's rate limit (a refill costs one only when it comes alone).
    The items a tab holds are held for it in the feedback database (`Pool.hold`), so no tab on any replica
    is handed them while others remain."""

    def __init__(self, queue: LabellingQueue) -> None:
        self.queue = queue
        self._locks = [threading.Lock() for _ in range(_LOCKS)]

    def sync(self, payload: object, request: Any = None, profile: Any = None) -> dict[str, Any]:
        """`payload` (JSON): {"ops": [{"op": "answer", "shown", "label"} | {"op": "none", "shown", "missing"} |
        {"op": "skip", "shown"} | {"op": "undo"}] ("none": no topic fits; "missing": the topic's name, optional),
        "have": [ids the tab still holds, unanswered, ops not yet sent included], "want": items it wants held}.
        Returns {"results": [one per op: shown, status, message (+ item for an undo)], "items": [{shown, text}],
        "progress", "retry_s", "error", "empty"}. Status: saved, skipped, undone, refused, stale, retry, nothing."""
        q = self.queue
        who = q.identities.identify(request, profile)
        ops, have, want = _read_payload(payload)
        out: dict[str, Any] = {"results": [], "items": [], "progress": "", "retry_s": 0.0, "error": "", "empty": False}
        if q.store is None or not who.session:
            refusal = q._queue_refusal(who)
            out["error"] = refusal.message if refusal else "The labelling queue is not available."
            return out
        key = f"{who.session}#buffer"
        with self._locks[hash(key) % _LOCKS]:
            state = q.items.get(key) or {}
            done: list[list[str]] = [d for d in state.get("done", []) if isinstance(d, list) and len(d) == 2]
            held: list[dict[str, Any]] = [h for h in state.get("held", []) if isinstance(h, dict)]
            keep = have | {op.get("shown") for op in ops}
            dropped = [int(item["id"]) for item in held if item["shown"] not in keep]
            if dropped:
                q.store.pool.release(key, dropped)
            held = [item for item in held if item["shown"] in keep]
            if held:  # still this tab's: renewed, so a tab that keeps asking never loses what it holds
                q.store.pool.hold(key, [int(item["id"]) for item in held], q.policy)
            charged = False
            for n, op in enumerate(ops):
                wait = q.limit.check(who.address)
                charged = True
                if wait:
                    out["retry_s"] = round(wait, 1)
                    out["results"] += [{"shown": o.get("shown", ""), "status": "retry",
                                        "message": f"Too many requests: trying again in {wait:.0f} s."} for o in ops[n:]]
                    break
                result = self._apply(who, key, op, held, done)
                out["results"].append(result)
                if result["status"] == "retry":  # the store's own answer limit: this op and the rest wait
                    out["retry_s"] = result["retry_s"]
                    out["results"] += [{"shown": o.get("shown", ""), "status": "retry", "message": result["message"]}
                                       for o in ops[n + 1:]]
                    break
            before = {item["shown"] for item in held}
            room = min(want, BUFFER) - len(held)
            if room > 0 and not out["retry_s"]:
                wait = 0.0 if charged else q.limit.check(who.address)
                if wait:
                    out["retry_s"] = round(wait, 1)
                else:
                    out["empty"] = not self._refill(who, key, held, room)
            q.items.put(key, {"held": held, "done": done[-_DONE_KEPT:]})
        out["items"] = [{"shown": item["shown"], "text": item["text"]} for item in held if item["shown"] not in before]
        done_n = q.store.pool.progress(who.annotator)
        left = q.store.pool.queue_left(who.annotator, q.policy)
        out["progress"] = (f"You have labelled **{done_n}**, **{max(left, 1)}** left." if left or held
                           else f"{EMPTY} You have labelled **{done_n}** article(s). Thank you!")
        return out

    def _refill(self, who: Identity, key: str, held: list[dict[str, Any]], room: int) -> bool:
        """Add up to `room` items to `held`; False when none was left to add."""
        q = self.queue
        assert q.store is not None
        mine = {int(item["id"]) for item in held}
        # Held for this tab as they are chosen; one another tab holds comes only when nothing else is left.
        items = q.store.pool.next_items(who.annotator, q.policy, room, exclude=mine, ahead=len(held), holder=key)
        held.extend({"id": int(item["id"]), "text": item["text"], "shown": new_shown_id()} for item in items)
        return len(items) == room

    def _apply(
        self, who: Identity, key: str, op: dict[str, Any], held: list[dict[str, Any]], done: list[list[str]]
    ) -> dict[str, Any]:
        q = self.queue
        assert q.store is not None
        shown = op.get("shown", "")
        if op["op"] == "undo":
            undone = q.store.undo_last(who.annotator, ("queue",))
            if undone is None or undone.get("item_id") is None:
                return {"shown": "", "status": "nothing", "message": "Nothing to undo in the queue."}
            item = {"id": int(undone["item_id"]), "text": undone["text"], "shown": new_shown_id()}
            held.insert(0, item)
            q.store.pool.hold(key, [item["id"]], q.policy)
            name = undone_words(undone, q.topics.taxonomy())
            return {"shown": "", "status": "undone", "item": {"shown": item["shown"], "text": item["text"]},
                    "message": f"Undone: **{name}** for {snippet(undone['text'])}. Label it again."}
        found = next((item for item in held if names_shown(shown, item["shown"])), None)
        if found is None:
            earlier = next((d for d in done if names_shown(shown, d[0])), None)
            if earlier is not None:  # a resent op (its first answer was lost on the way back)
                status = "skipped" if earlier[1] == "" else "saved"
                return {"shown": shown, "status": status, "message": f"Already saved: **{earlier[1]}**."
                        if earlier[1] else "Skipped."}
            return {"shown": shown, "status": "stale", "message": "Not saved: this page no longer holds that article."}
        if op["op"] == "skip":
            try:
                q.store.pool.skip(who.annotator, found["id"], q.policy.max_skips)
            except FeedbackError as exc:
                return {"shown": shown, "status": "refused", "message": f"Not skipped: {exc}."}
            held.remove(found)
            q.store.pool.release(key, [found["id"]])
            done.append([found["shown"], ""])
            return {"shown": shown, "status": "skipped", "message": f"Skipped {snippet(found['text'])}."}
        taxonomy = q.topics.taxonomy()
        mismatch = q.topics.mismatch(taxonomy)
        if mismatch:
            return {"shown": shown, "status": "refused", "message": f"Not saved: {mismatch}"}
        if op["op"] == "none":
            return self._none(who, key, op, found, held, done)
        topic = topic_of(op.get("label"), taxonomy)
        if topic is None or topic == RIGHT:
            return {"shown": shown, "status": "refused", "message": f"Not saved: {one_of(taxonomy)}"}
        prediction = q.classifier.predict([found["text"]])[0]
        store = q.store  # narrowed above; the closure below would not see the narrowing

        def save() -> tuple[str, str]:
            store.answers.record(AnswerInput(
                text=found["text"], user_label=topic, annotator=who.annotator, kind="queue", item_id=found["id"],
                predicted_label=prediction.label, probabilities=prediction.probabilities,
                model_version=prediction.model_version, verified=who.verified, address=who.address,
            ))
            return taxonomy.name_of(topic), ""

        return self._save(key, shown, found, held, done, save)

    def _none(self, who: Identity, key: str, op: dict[str, Any], found: dict[str, Any], held: list[dict[str, Any]],
              done: list[list[str]]) -> dict[str, Any]:
        """Key 0: no topic fits the article (`UnlistedAnswers.record`), with the missing topic's name if typed."""
        q = self.queue
        store = q.store
        assert store is not None
        prediction = q.classifier.predict([found["text"]])[0]

        def save() -> tuple[str, str]:
            result = store.unlisted.record(UnlistedInput(
                text=found["text"], annotator=who.annotator, kind="queue", item_id=found["id"], name=op["missing"],
                predicted_label=prediction.label, model_version=prediction.model_version, verified=who.verified,
                address=who.address,
            ))
            return NONE_WORDS, f" (missing topic: {result.name})" if result.name else ""

        return self._save(key, op["shown"], found, held, done, save)

    def _save(self, key: str, shown: str, found: dict[str, Any], held: list[dict[str, Any]], done: list[list[str]],
              save: Callable[[], tuple[str, str]]) -> dict[str, Any]:
        """Store one answer to the held item `found` by `save`, which returns the words it is saved as and what the
        message adds after them; then the tab no longer holds the item, and remembers it answered. One path for a
        topic and for "None of these", so both word a refusal alike; a rate limit asks the tab to retry later."""
        q = self.queue
        assert q.store is not None
        try:
            words, more = save()
        except RateLimited as exc:
            return {"shown": shown, "status": "retry", "retry_s": round(max(exc.retry_after_s, 1.0), 1),
                    "message": f"Not saved yet: {exc}."}
        except FeedbackError as exc:
            return {"shown": shown, "status": "refused", "message": f"Not saved: {exc}."}
        held.remove(found)
        q.store.pool.release(key, [found["id"]])
        done.append([found["shown"], words])
        return {"shown": shown, "status": "saved", "message": f"Saved as **{words}**{more}: {snippet(found['text'])}."}


def _read_payload(payload: object) -> tuple[list[dict[str, Any]], set[str], int]:
    """(ops, ids held, items wanted) from a sync's JSON, anything malformed dropped; at most MAX_OPS ops."""
    try:
        data = json.loads(payload) if isinstance(payload, str) and len(payload) < 64_000 else {}
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    ops: list[dict[str, Any]] = []
    for op in data.get("ops", [])[:MAX_OPS] if isinstance(data.get("ops"), list) else []:
        if not isinstance(op, dict) or op.get("op") not in ("answer", "skip", "undo", "none"):
            continue
        shown = op.get("shown", "")
        label = op.get("label", "")
        missing = op.get("missing", "")
        ops.append({"op": op["op"], "shown": shown if isinstance(shown, str) else "",
                    "label": label if isinstance(label, str) else "",
                    # the store checks the name (at most 40 characters): a longer one is refused, not cut
                    "missing": missing[:200] if isinstance(missing, str) else ""})
    have = data.get("have", [])
    ids = {h for h in have[: BUFFER + MAX_OPS * 2] if isinstance(h, str)} if isinstance(have, list) else set()
    want = data.get("want", 0)
    return ops, ids, min(max(want, 0), BUFFER) if isinstance(want, int) and not isinstance(want, bool) else 0
