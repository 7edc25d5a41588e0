"""The admin view's "Answers with no topic" panel, an accordion that lists when opened: the "None of these" answers
labellers gave, grouped into candidate topics (by the names they typed, then by what the texts say:
`feedback.topics.unlisted_groups`). The maintainer picks a group, unticks the answers that do not belong, names the
topic and creates it: the ticked answers become its first labels (`FeedbackStore.place_unlisted`). A missing topic
is found by the people who meet it. Answers no topic is missing for are dismissed."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import gradio as gr

from core.taxonomy import TaxonomyConflict, TaxonomyError
from feedback.errors import FeedbackError
from feedback.topics.unlisted_groups import Group
from feedback.trust.rules import MAINTAINER
from web.admin.actions import AdminActions
from web.admin.guard import admin_only

PRIVATE: dict[str, Any] = {"api_visibility": "private"}
NOTHING = "No feedback database on this server."


def groups_table(groups: list[Group]) -> str:
    """The groups as an HTML table (escaped: names are data): suggested name, answers, people."""
    if not groups:
        return ""  # the summary above says there are none: once is enough
    rows = "".join(f"<tr><td>{html.escape(g.name)}{'' if g.named else ' <small>(from the texts)</small>'}</td>"
                   f"<td>{len(g.ids)}</td><td>{g.people}</td></tr>" for g in groups)
    return ('<table class="unlisted-groups"><thead><tr><th>Suggested topic</th><th>Answers</th><th>People</th></tr>'
            f"</thead><tbody>{rows}</tbody></table>")


def answer_label(row: dict[str, Any], group: Group) -> str:
    """One answer as its checkbox reads: id, its group, the name the labeller gave, who, and the text."""
    named = f"named “{row['name']}”" if row.get("name") else "no name given"
    text = " ".join(str(row["text"]).split())
    text = text if len(text) <= 200 else text[:199] + "…"
    return f"#{row['id']} · [{group.name}] · {named} · {row['annotator']}\n{text}"


@dataclass(frozen=True)
class Listing:
    """What the panel shows: the summary, the groups' table, the group chooser, the answers, the name box."""

    summary: str
    table: str
    chooser: Any
    answers: Any
    name: Any

    def as_tuple(self) -> tuple[Any, ...]:
        return self.summary, self.table, self.chooser, self.answers, self.name


class UnlistedPanel:
    """The panel's handlers, each wrapped in `admin_only`."""

    def __init__(self, admin: AdminActions) -> None:
        self.admin = admin

    def _who(self, request: gr.Request, profile: gr.OAuthProfile | None) -> str:
        who = self.admin.identities.identify(request, profile)
        return who.annotator if who.verified else MAINTAINER

    def _listing(self, chosen: int | None = None) -> Listing:
        """Every waiting answer, grouped; the group whose first id is `chosen` (else the largest) ticked and named."""
        store = self.admin.store
        assert store is not None
        groups = store.unlisted_groups()
        rows = {int(r["id"]): r for r in store.unlisted.rows()}
        group = next((g for g in groups if g.ids[0] == chosen), groups[0] if groups else None)
        choices = [(answer_label(rows[i], g), i) for g in groups for i in g.ids if i in rows]
        summary = (f"**{len(rows)}** answer(s) where no topic fitted, in **{len(groups)}** group(s), the largest first. "
                   "Choose a group: its answers are ticked; untick those that do not belong, name the topic and "
                   "create it." if groups else 'No "None of these" answers are waiting.')
        return Listing(
            summary, groups_table(groups),
            gr.update(choices=[(f"{g.name} ({len(g.ids)} answers, {g.people} people)", g.ids[0]) for g in groups],
                      value=group.ids[0] if group else None),
            gr.update(choices=choices, value=list(group.ids) if group else []),
            group.name if group else "",
        )

    @admin_only(lambda _: ("Sign in first.", gr.skip(), gr.skip(), gr.skip(), gr.skip()))
    def show(self, request: gr.Request, profile: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """The groups, the largest chosen: its answers ticked, its suggested name in the name box."""
        if self.admin.store is None:
            return NOTHING, gr.skip(), gr.skip(), gr.skip(), gr.skip()
        return self._listing().as_tuple()

    @admin_only(lambda _: ("Sign in first.", gr.skip(), gr.skip(), gr.skip(), gr.skip()))
    def choose(self, chosen: Any, request: gr.Request, profile: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """Tick the chosen group's answers (only those) and put its suggested name in the name box."""
        if self.admin.store is None:
            return NOTHING, gr.skip(), gr.skip(), gr.skip(), gr.skip()
        return self._listing(int(chosen) if isinstance(chosen, int | str) and str(chosen).isdecimal() else None
                             ).as_tuple()

    @admin_only(lambda _: ("Sign in first.", gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()))
    def create(self, ids: list[Any] | None, name: str, request: gr.Request,
               profile: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """Create the topic `name` (or use the current one of that name) with the ticked answers as its first labels."""
        store = self.admin.store
        if store is None:
            return NOTHING, gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
        if not ids:
            return "Tick one or more answers first.", gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
        try:
            placed = store.place_unlisted([int(i) for i in ids], name or "", by=self._who(request, profile))
        except TaxonomyConflict as exc:
            return f"Not created: {exc}.", *self._listing().as_tuple()
        except (TaxonomyError, FeedbackError) as exc:
            return f"Refused: {exc}.", gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
        words = placed.words()
        return (f"{words[:1].upper()}{words[1:]}. Labellers see the topic the next time their page loads.",
                *self._listing().as_tuple())

    @admin_only(lambda _: ("Sign in first.", gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()))
    def dismiss(self, ids: list[Any] | None, request: gr.Request,
                profile: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """Set the ticked answers aside: no topic is missing for them."""
        store = self.admin.store
        if store is None:
            return NOTHING, gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
        if not ids:
            return "Tick one or more answers first.", gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
        try:
            n = store.dismiss_unlisted([int(i) for i in ids], by=self._who(request, profile))
        except FeedbackError as exc:
            return f"Nothing changed: {exc}.", gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
        return f"Dismissed {n} answer(s).", *self._listing().as_tuple()


def build_unlisted(admin: AdminActions) -> Any:
    """The panel and its own events; returns the create event, for follow-ups (the topics' list, the tiles)."""
    panel = UnlistedPanel(admin)
    with gr.Accordion("Answers with no topic", open=False, elem_id="unlisted-panel") as box:
        summary = gr.Markdown(elem_id="unlisted-summary", elem_classes=["live"])
        table = gr.HTML(elem_id="unlisted-groups")
        with gr.Row():
            chooser = gr.Dropdown([], label="Group", elem_id="unlisted-group")
            refresh = gr.Button("List again", size="sm", elem_id="unlisted-refresh")
        answers = gr.CheckboxGroup(label="Its answers (untick those that do not belong)", choices=[], value=[],
                                   elem_id="unlisted-list")
        name = gr.Textbox(label="Topic name", max_length=100, elem_id="unlisted-name")
        with gr.Row():
            create_btn = gr.Button("Create topic from ticked", variant="primary", elem_id="unlisted-create")
            dismiss_btn = gr.Button("Dismiss ticked", elem_id="unlisted-dismiss")
        message = gr.Markdown(elem_id="unlisted-msg", elem_classes=["live"])
    shown = [summary, table, chooser, answers, name]
    box.expand(panel.show, outputs=shown, **PRIVATE)
    refresh.click(panel.show, outputs=shown, **PRIVATE)
    chooser.input(panel.choose, inputs=chooser, outputs=shown, **PRIVATE)
    dismiss_btn.click(panel.dismiss, inputs=answers, outputs=[message, *shown], **PRIVATE)
    return create_btn.click(panel.create, inputs=[answers, name], outputs=[message, *shown], **PRIVATE)
