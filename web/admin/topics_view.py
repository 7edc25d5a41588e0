"""The Topics panel of the admin view: the taxonomy (its version, each topic with its description and whether the
served model predicts it yet), and a maintainer's changes to it: add, rename, describe, merge, split.

A change is shown first (what it does, and what it touches), then made when the maintainer confirms, as a
compare-and-swap on the version they saw (`TopicBook.commit`): if another admin changed the topics meanwhile, they
are told and shown the new list. Refusals are the taxonomy's own messages (core.taxonomy).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr

from core.taxonomy import LEARNING, Taxonomy, TaxonomyConflict, TaxonomyError
from feedback.topics.changes import BaseData, impact
from web.admin.actions import AdminActions
from web.admin.guard import admin_only
from web.admin.tab_memory import TabMemory
from web.server.events import PRIVATE
from web.server.topics import PageTopics

CHANGES = {"add": "Add a topic", "rename": "Rename a topic", "describe": "Describe a topic",
           "merge": "Merge a topic into another", "split": "Split a topic in two"}
NO_STORE_HERE = "No feedback database on this server: the topics are the served model's."


@dataclass(frozen=True)
class Plan:
    """A change as the maintainer previewed it, on the version they saw; what Confirm makes."""

    version: int
    kind: str
    topic: str
    into: str
    name: str
    description: str
    why: str


def apply(taxonomy: Taxonomy, plan: Plan, by: str = "") -> Taxonomy:
    """`taxonomy` with `plan`'s change made (raises TaxonomyError with the taxonomy's message when refused)."""
    who = {"by": by, "why": " ".join(plan.why.split())}
    if plan.kind == "add":
        return taxonomy.add(plan.name, plan.description, **who)
    if plan.kind == "rename":
        return taxonomy.rename(_topic(plan.topic), plan.name, **who)
    if plan.kind == "describe":
        return taxonomy.describe(_topic(plan.topic), plan.description, **who)
    if plan.kind == "merge":
        return taxonomy.merge(_topic(plan.topic), _topic(plan.into, "the topic to merge into"), **who)
    if plan.kind == "split":
        return taxonomy.split(_topic(plan.topic), plan.name, plan.description, **who)
    raise TaxonomyError(f"choose a change: one of {', '.join(CHANGES)}")


def _topic(value: str, what: str = "a topic") -> str:
    if not value:
        raise TaxonomyError(f"choose {what}")
    return value


# What a change means for training, beyond what it touches (feedback.topics.changes.Impact says that).
TRAINING = {"merge": "It is no longer offered, and the next challenger has one output fewer.",
            "split": "New answers are exact; the next challenger has one output more.",
            "add": "The next challenger has one output more, judged on its own held-out answers."}


def topics_table(taxonomy: Taxonomy, topics: PageTopics) -> str:
    """The taxonomy as an HTML table (escaped: names and descriptions are data), with its version line."""
    v = taxonomy.current
    since = f", since {html.escape(v.at[:16].replace('T', ' '))} UTC" if v.at else ""
    by = f" by {html.escape(v.by)}" if v.by else ""
    why = f": {html.escape(v.why)}" if v.why else ""
    rows = "".join(
        f"<tr><td>{i + 1}</td><td>{html.escape(t.name)}</td><td>{html.escape(t.description)}</td>"
        f"<td>{LEARNING if t.learning else 'predicts it'}</td></tr>"
        for i, t in enumerate(topics.offered(taxonomy)))
    return (f'<p class="topics-version">Version <strong>{v.version}</strong>{since}{by}{why}.</p>'
            '<table class="topics-table"><thead><tr><th>#</th><th>Topic</th><th>Description</th>'
            f"<th>Served model</th></tr></thead><tbody>{rows}</tbody></table>")


class TopicsEditor:
    """The panel's handlers; each is wrapped in `admin_only`. `base_data()` gives the base data's label keys, one
    per row, which a change's preview counts, and its name, which the preview says (none: no base rows counted)."""

    def __init__(self, admin: AdminActions, base_data: Callable[[], BaseData] | None = None,
                 choosers: Sequence[tuple[str, str]] = ()) -> None:
        self.admin = admin
        self.topics = admin.topics or PageTopics(None, admin.store)
        self.base_data = base_data or BaseData
        self.choosers = tuple(choosers)  # other panels' topic dropdowns: each one's first (label, value) option
        self.sent = TabMemory()  # the taxonomy version each tab's dropdowns were last given

    def _listed(self, taxonomy: Taxonomy, request: gr.Request | None, keep: bool = False) -> tuple[Any, ...]:
        """The table, this panel's two topic dropdowns, then the other panels' (their first option kept). `keep`:
        where the tab's dropdowns already offer this version's topics, they are left as the maintainer set them."""
        names = list(taxonomy.names)
        table = topics_table(taxonomy, self.topics)  # always: it also says which topics the served model predicts
        held = self.sent.swap(request, taxonomy.version) == taxonomy.version  # recorded whether kept or not
        if keep and held:
            return (table, *(gr.skip() for _ in range(2 + len(self.choosers))))
        return (table, gr.update(choices=names, value=None),
                gr.update(choices=names, value=None),
                *(gr.update(choices=[first, *names], value=first[1]) for first in self.choosers))

    def _skipped(self) -> tuple[Any, ...]:
        return tuple(gr.skip() for _ in range(3 + len(self.choosers)))

    @admin_only(lambda self: self._skipped())
    def load(self, request: gr.Request, profile: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        return self._listed(self.topics.taxonomy(), request, keep=True)

    @admin_only(lambda _: ("Sign in first.", None, gr.update(visible=False), gr.skip()))
    def preview(self, kind: str, topic: str | None, into: str | None, name: str, description: str, why: str,
                request: gr.Request, profile: gr.OAuthProfile | None = None) -> tuple[str, Plan | None, Any, str]:
        """What the change would do and touch, and the plan Confirm makes; nothing is changed yet. The last change's
        message ("Changed: ...") is cleared: it is about another change."""
        if self.admin.store is None:
            return NO_STORE_HERE, None, gr.update(visible=False), ""
        before = self.topics.taxonomy()
        plan = Plan(before.version, kind or "", topic or "", into or "", name or "", description or "", why or "")
        try:
            after = apply(before, plan)
        except TaxonomyError as exc:
            return f"Refused: {exc}.", None, gr.update(visible=False), ""
        base = self.base_data()
        words = impact(self.admin.store.database, before, after, base.labels, base.description).words()
        text = f"{words[:1].upper()}{words[1:]}. {TRAINING.get(after.current.change.kind, '')}".strip()
        return (f"{text}\n\nConfirm to make it (version {before.version} → {after.version}).", plan,
                gr.update(visible=True), "")

    @admin_only(lambda self: ("Sign in first.", None, gr.update(visible=False), *self._skipped()))
    def confirm(self, plan: Plan | None, request: gr.Request,
                profile: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """Make the previewed change, if the topics are still the version it was planned on: (message, plan, the
        confirm row, then what `_listed` updates)."""
        hidden = gr.update(visible=False)
        if self.admin.store is None:
            return (NO_STORE_HERE, None, hidden, *self._skipped())
        if plan is None:
            return ("Preview a change first.", None, hidden, *self._skipped())
        now = self.topics.taxonomy()
        # Made on the version the maintainer saw; the store refuses it if that is no longer the newest.
        seen = Taxonomy(now.versions[: plan.version]) if 0 < plan.version <= now.version else now
        try:
            by = self.admin.signed_in_as(request, profile)
            changed = self.admin.store.topics.commit(apply(seen, plan, by), plan.version)
        except TaxonomyConflict as exc:
            return (f"Not changed: {exc}.", None, hidden, *self._listed(self.topics.taxonomy(), request))
        except TaxonomyError as exc:
            return (f"Refused: {exc}.", None, hidden, *self._skipped())
        return (f"Changed: the topics are now version {changed.version}. Labellers see them the next time their page "
                "loads.", None, hidden, *self._listed(changed, request))


def build_topics(admin: AdminActions, choosers: Sequence[tuple[Any, tuple[str, str]]] = ()) -> Callable[[Any], Any]:
    """The Topics panel. Returns `reload(event)`, which lists the taxonomy after `event`. `choosers`: other panels'
    topic dropdowns, each with its first option, offered the current topics on each reload and change."""
    editor = TopicsEditor(admin, admin.base_data, [first for _, first in choosers])
    others = [dropdown for dropdown, _ in choosers]
    with gr.Column(elem_id="topics-panel"):
        gr.Markdown("## Topics")
        listed = gr.HTML(elem_id="topics-list")
        with gr.Accordion("Change the topics", open=False, elem_id="topics-change"):
            kind = gr.Radio([(text, key) for key, text in CHANGES.items()], value="add", label="Change",
                            elem_id="topics-kind")
            with gr.Row():
                topic = gr.Dropdown([], label="Topic (to rename, describe, merge or split)", elem_id="topics-topic")
                into = gr.Dropdown([], label="Merge into", elem_id="topics-into")
            with gr.Row():
                name = gr.Textbox(label="Name (the new topic's, or the new name)", max_length=100,
                                  elem_id="topics-name")
                description = gr.Textbox(label="Description (one line)", max_length=400, elem_id="topics-description")
            why = gr.Textbox(label="Why (optional: kept with the change)", max_length=400, elem_id="topics-why")
            preview_btn = gr.Button("Preview the change", elem_id="topics-preview")
            shown = gr.Markdown(elem_id="topics-shown", elem_classes=["live"])
            plan = gr.State(None)
            with gr.Row(visible=False, elem_id="topics-confirm") as confirm_row:
                confirm_btn = gr.Button("Make the change", variant="primary", elem_id="topics-confirm-btn")
                cancel_btn = gr.Button("Cancel", elem_id="topics-cancel")
            message = gr.Markdown(elem_id="topics-msg", elem_classes=["live"])
    preview_btn.click(editor.preview, inputs=[kind, topic, into, name, description, why],
                      outputs=[shown, plan, confirm_row, message], **PRIVATE)
    confirm_btn.click(editor.confirm, inputs=plan,
                      outputs=[message, plan, confirm_row, listed, topic, into, *others], **PRIVATE)
    cancel_btn.click(lambda: ("", None, gr.update(visible=False)), outputs=[shown, plan, confirm_row], **PRIVATE)

    def reload(event: Any) -> Any:
        return event.then(editor.load, outputs=[listed, topic, into, *others], **PRIVATE)

    return reload
