"""The admin view's review panel: filter answers, read them in full, tick many, accept or reject them at once.

Keyboard: Tab or the arrow keys move between answers, Space ticks one, A accepts the ticked answers and R
rejects them (web/admin_keys.js). Every action says which ids it changed and how many.

A tick is never undone by a list the maintainer did not ask to change: a relist (after sign-in, Refresh, another
panel's change) that still holds every answer the tab was shown leaves the tab's ticks alone, and one that drops some
keeps the ticked answers still listed. Only an accept or a reject unticks, since it acted on them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr

from feedback.errors import FeedbackError
from feedback.trust.bulk import ANY, narrowing
from feedback.trust.people import nickname
from feedback.trust.review import HELD, ReviewFilter, review_message
from feedback.validate import STATUSES
from web.admin.actions import AdminActions
from web.admin.guard import NO_STORE, admin_only, guarded_by
from web.admin.tab_memory import TabMemory
from web.server.events import PRIVATE

SHOWN = 200  # answers listed at once; the summary says how many more match


def choice_label(row: dict[str, Any]) -> str:
    """One answer as its checkbox reads: id, label, what the model said, who, when, why suspicious, full text."""
    probs = row.get("probabilities") or {}
    said = row.get("predicted_label") or "–"
    if said in probs:
        said = f"{said} {probs[said]:.0%}"
    why = f" · {row['suspicious_reason']}" if row.get("suspicious_reason") else ""
    when = str(row.get("created_at", ""))[:16].replace("T", " ")
    # The first line says what and who, the text follows in full (CSS keeps the line break: white-space).
    return (f"#{row['id']} · {row['user_label']} (model: {said}) · {nickname(row['annotator'])} · {when} · "
            f"{row['status']}{why}\n{' '.join(str(row['text']).split())}")


def _filter(status: str, reason: str, label: str, annotator: str, text: str) -> ReviewFilter:
    return ReviewFilter(status=narrowing(status), reason=narrowing(reason), label=narrowing(label),
                        annotator=narrowing(annotator),
                        text=text if isinstance(text, str) else "", limit=SHOWN)


class ReviewPanel:
    """The panel's handlers, each wrapped in `admin_only`."""

    def __init__(self, admin: AdminActions) -> None:
        self.admin = admin
        self.listed = TabMemory()  # the answer ids each tab was last sent

    def listing(self, request: gr.Request | None, choices: list[tuple[str, int]], ticked: Sequence[Any] | None) -> Any:
        """The list's update for one tab: its choices, and its ticks only where a ticked answer may have left (the
        ticks given were read when the relist was sent; the page's may be newer)."""
        ids = frozenset(value for _, value in choices)
        before = self.listed.swap(request, ids)
        if before is not None and before <= ids:
            return gr.update(choices=choices)
        return gr.update(choices=choices, value=[value for value in ticked or () if value in ids])

    @admin_only(lambda _: ("Sign in first.", gr.skip()))
    def search(self, ticked: list[Any] | None, status: str, reason: str, label: str, annotator: str, text: str,
               request: gr.Request, profile: gr.OAuthProfile | None = None) -> tuple[str, Any]:
        """A line saying how many answers the filters match, and the list of them, the ticked ones still ticked."""
        store = self.admin.store
        if store is None:
            return NO_STORE, gr.skip()
        try:
            rows, total = store.reviews.find(_filter(status, reason, label, annotator, text), self.admin.trust)
        except FeedbackError as exc:
            return f"Cannot filter: {exc}", self.listing(request, [], ticked)
        choices = [(choice_label(row), int(row["id"])) for row in rows]
        more = f"; {len(rows)} are listed" if total > len(rows) else ""
        summary = (f"**{total:,}** answer(s) match{more}: signed-in or checked people's first, newest first."
                   if total else "No answers match these filters.")
        return summary, self.listing(request, choices, ticked)

    @admin_only(lambda _: ("Sign in first.", gr.skip()))
    def select_all(self, ticked: list[Any] | None, status: str, reason: str, label: str, annotator: str, text: str,
                   request: gr.Request, profile: gr.OAuthProfile | None = None) -> tuple[str, Any]:
        """Tick every listed answer (the list is read again, so what is ticked is what is shown)."""
        summary, update = self.search(ticked, status, reason, label, annotator, text, request, profile)
        if isinstance(update, dict) and "choices" in update:
            update["value"] = [value for _, value in update["choices"]]
            summary += f" All {len(update['value'])} listed are ticked."
        return summary, update

    @admin_only(lambda _: (gr.skip(), gr.skip()))
    def options(self, request: gr.Request, profile: gr.OAuthProfile | None = None) -> tuple[Any, Any]:
        """The reason and annotator filters' choices, from what the database holds now."""
        store = self.admin.store
        if store is None:
            return gr.skip(), gr.skip()
        reasons = [("any reason", ANY), *store.reviews.reason_choices()]
        people = [("anyone", ANY), *((nickname(a), a) for a in store.reviews.annotator_ids())]
        return gr.update(choices=reasons), gr.update(choices=people)

    def act(self, verdict: str) -> Callable[..., tuple[str, str, Any]]:
        """Accept or reject every ticked answer, then list the filters' answers again, none ticked."""

        @guarded_by(self, lambda _: ("Sign in first.", gr.skip(), gr.skip()))
        def handler(ids: list[Any] | None, status: str, reason: str, label: str, annotator: str, text: str,
                    request: gr.Request, profile: gr.OAuthProfile | None = None) -> tuple[str, str, Any]:
            store = self.admin.store
            if store is None:
                return NO_STORE, gr.skip(), gr.skip()
            if not ids:
                return "Tick one or more answers first (Space ticks the focused one).", gr.skip(), gr.skip()
            try:
                message = review_message(store.reviews.set_statuses(ids, verdict))
            except FeedbackError as exc:
                return f"Nothing changed: {exc}", gr.skip(), gr.skip()
            summary, update = self.search([], status, reason, label, annotator, text, request, profile)
            if isinstance(update, dict) and "choices" in update:
                update["value"] = []  # acted on: a tick left would act on them again
            return message, summary, update

        return handler


@dataclass
class ReviewWidgets:
    """What the admin view wires beyond the panel itself."""

    panel: ReviewPanel
    inputs: list[Any]  # the list's ticks, then status, reason, label, annotator, text: inputs of every search
    shown: list[Any]  # the summary line and the list: outputs of every search
    options: list[Any]  # the reason and annotator filters, whose choices come from the database
    changes: list[Any]  # the accept and reject events, for follow-ups (the tiles' refresh)
    topic_filter: Any  # the label filter, whose choices are the taxonomy's topics

    def reload(self, event: Any) -> Any:
        """After `event`: the filters' choices, then the list under the filters as they stand."""
        return event.then(self.panel.options, outputs=self.options, **PRIVATE).then(
            self.panel.search, inputs=self.inputs, outputs=self.shown, **PRIVATE)


def build_review(admin: AdminActions) -> ReviewWidgets:
    """The review panel and its own events."""
    panel = ReviewPanel(admin)
    with gr.Column(elem_id="review-panel"):
        gr.Markdown("## Review answers")
        gr.HTML('<p class="kbd-hint">Filter, tick answers, then accept (they may train) or reject them (they never '
                "will). Keys in the list: <kbd>↑</kbd>/<kbd>↓</kbd> move, <kbd>Space</kbd> ticks, <kbd>A</kbd> "
                "accepts the ticked answers, <kbd>R</kbd> rejects them.</p>")
        with gr.Row(elem_id="review-filters"):
            status = gr.Dropdown([*STATUSES, ("held corrections (wait for you)", HELD), ("any status", ANY)],
                                 value="suspicious", label="Status", elem_id="review-status")
            reason = gr.Dropdown([("any reason", ANY)], value=ANY, label="Why suspicious", elem_id="review-reason")
            # The taxonomy's topics when the page was built; the Topics panel offers the current ones on each load.
            label = gr.Dropdown([("any label", ANY), *admin.topic_names()], value=ANY, label="Label given",
                                elem_id="review-label")
            annotator = gr.Dropdown([("anyone", ANY)], value=ANY, label="Annotator", elem_id="review-annotator")
            text = gr.Textbox(label="Text contains", elem_id="review-text", info="Press Enter to filter.")
        summary = gr.Markdown(elem_id="review-summary", elem_classes=["live"])
        listing = gr.CheckboxGroup(label="Answers (full text)", elem_id="review-list", choices=[], value=[])
        with gr.Row(elem_id="review-actions"):
            all_btn = gr.Button("Tick all listed", size="sm", elem_id="review-all")
            none_btn = gr.Button("Untick all", size="sm", elem_id="review-none")
            accept_btn = gr.Button("Accept ticked", variant="primary", elem_id="review-accept")
            reject_btn = gr.Button("Reject ticked", variant="stop", elem_id="review-reject")
        message = gr.Markdown(elem_id="review-msg", elem_classes=["live"])
    inputs = [listing, status, reason, label, annotator, text]
    shown = [summary, listing]
    for dropdown in (status, reason, label, annotator):
        dropdown.input(panel.search, inputs=inputs, outputs=shown, **PRIVATE)
    text.submit(panel.search, inputs=inputs, outputs=shown, api_name="review_search", **PRIVATE)
    all_btn.click(panel.select_all, inputs=inputs, outputs=shown, **PRIVATE)
    none_btn.click(lambda: gr.update(value=[]), outputs=listing, **PRIVATE)
    # Named events (private: scripts cannot see them; the attack tests call them as a browser would).
    changes = [btn.click(panel.act(verdict), inputs=inputs, outputs=[message, *shown], api_name=name,
                         **PRIVATE)
               for btn, verdict, name in ((accept_btn, "accepted", "accept"), (reject_btn, "rejected", "reject"))]
    return ReviewWidgets(panel, inputs, shown, [reason, annotator], changes, label)
