"""The admin view's people panel: who labels (names, not hashes), how well, and the texts they disagree on,
each settled with one click on the right label."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr

from feedback.errors import FeedbackError
from feedback.trust.agreement import agreement
from feedback.trust.people import Disagreement, Person, disagreements, people
from web.admin.actions import AdminActions
from web.admin.guard import NO_STORE, admin_only, guarded_by
from web.server.events import PRIVATE

HEADERS = ["annotator", "signed in", "answers", "last 7 days", "last active (UTC)", "checks right",
           "agrees with others", "trained on"]
SHOWN_DISAGREEMENTS = 10  # the newest; the line above them says how many more there are


def person_row(person: Person, min_shared: int) -> list[Any]:
    """One table row; agreement only where there is enough overlap to mean something."""
    checks = f"{person.checks_right} of {person.checks_answered}" if person.checks_answered else "none answered"
    if person.agrees is None:
        agrees = f"not enough overlap ({person.shared} shared; {min_shared} needed)"
    else:
        agrees = f"{person.agrees:.0%} on {person.shared} shared texts"
    return [person.name, "yes" if person.signed_in else "no", person.answers, person.last_week, person.last_active,
            checks, agrees, person.trains]


def alpha_line(rows: Sequence[dict[str, Any]]) -> str:
    result = agreement(rows, max_annotators=0)
    if result.alpha is None:
        return (f"Not enough overlap to measure agreement yet: {result.texts} text(s) have labels from two or more "
                "annotators.")
    return (f"Krippendorff's alpha **{result.alpha:.2f}** over {result.texts} texts labelled by two or more "
            "annotators (1 = full agreement, 0 = chance).")


def _quote(text: str, words: int = 40) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + ("…" if len(parts) > words else "")


class PeoplePanel:
    """The panel's handlers, each wrapped in `admin_only`."""

    def __init__(self, admin: AdminActions) -> None:
        self.admin = admin

    @admin_only(lambda _: (gr.skip(), gr.skip(), gr.skip(), gr.skip()))
    def overview(self, request: gr.Request, profile: gr.OAuthProfile | None = None) -> tuple[Any, Any, Any, Any]:
        """The annotator table, the alpha line, how many disagreements there are, and the newest to settle."""
        store = self.admin.store
        if store is None:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        # Counts by the database; the answers read one by one are only those on texts two or more people answered.
        shared = store.crowd.shared_answers()
        gold = store.pool.gold_labels()
        policy = self.admin.trust
        found_people = people(store.crowd.counts(), store.crowd.check_scores(), shared, policy)
        table = [person_row(p, policy.min_answers_for_agreement) for p in found_people]
        found = disagreements(shared, gold, limit=len(shared))
        more = f" {len(found) - SHOWN_DISAGREEMENTS:,} more wait below these." if len(found) > SHOWN_DISAGREEMENTS else ""
        count = f"**{len(found):,}** text(s) people disagree on, newest first.{more}" if found else ""
        return table, alpha_line(shared), count, [d.__dict__ for d in found[:SHOWN_DISAGREEMENTS]]

    @admin_only()
    def resolve(self, text_hash: str, label: str, request: gr.Request, profile: gr.OAuthProfile | None = None) -> str:
        store = self.admin.store
        if store is None:
            return NO_STORE
        try:
            done = store.reviews.resolve(text_hash, label)
        except FeedbackError as exc:
            return f"Not settled: {exc}"
        accepted = ", ".join(f"#{i}" for i in done.accepted) or "none"
        rejected = ", ".join(f"#{i}" for i in done.rejected) or "none"
        return (f"Settled as **{label}** (your answer #{done.maintainer_answer}, which training uses): "
                f"accepted {accepted}; rejected {rejected}.")


def build_people(admin: AdminActions, after: Callable[[Any], Any]) -> tuple[PeoplePanel, list[Any]]:
    """The panel. Returns its handlers and the outputs of `PeoplePanel.overview`; `after(event)` chains the
    view's refresh (the tiles, and this panel through `PeoplePanel.overview`) after each settle."""
    panel = PeoplePanel(admin)
    with gr.Column(elem_id="people-panel"):
        gr.Markdown("## Annotators")
        alpha = gr.Markdown(elem_id="agreement")
        table = gr.Dataframe(headers=HEADERS, label="Annotators, most answers first", interactive=False, wrap=True,
                             elem_id="annotators")
        gr.Markdown("## Texts people disagree on\nClick the right label to settle a text: its answers with that "
                    "label are accepted, the others rejected, and your label trains.")
        message = gr.Markdown(elem_id="settle-msg", elem_classes=["live"])
        count = gr.Markdown(elem_id="disagreement-count")
        found = gr.State([])
        outputs = [table, alpha, count, found]

        @gr.render(inputs=found)
        def _listed(items: list[dict[str, Any]]) -> None:
            if not items:
                gr.Markdown("No disagreements to settle.", elem_id="no-disagreements")
                return
            topics = panel.admin.topic_names()
            for i, item in enumerate(items):
                d = Disagreement(**item)
                votes = " · ".join(f"{label}: {', '.join(names)}" for label, names in d.votes.items())
                with gr.Column(elem_classes=["disagreement"]):
                    # Escaped HTML, not markdown: an article's text is data, never markup or links.
                    gr.HTML(f"<p>“{html.escape(_quote(d.text))}”</p><p><em>{html.escape(votes)}</em></p>",
                            elem_classes=["disagreement-text"])
                    with gr.Row():
                        for j, name in enumerate(topics):  # the taxonomy's, as it is when the list is drawn
                            btn = gr.Button(name, size="sm", min_width=56, elem_id=f"settle-{i}-{j}")
                            settled = btn.click(_settle(panel, d.text_hash, name), outputs=message, **PRIVATE)
                            after(settled)  # the view's refresh: tiles, then this panel
    return panel, outputs


def _settle(panel: PeoplePanel, text_hash: str, label: str) -> Any:
    @guarded_by(panel)
    def handler(request: gr.Request, profile: gr.OAuthProfile | None = None) -> str:
        return panel.resolve(text_hash, label, request, profile)

    return handler
