"""The admin view's "Answers with no topic" panel, an accordion that lists when opened: the "None of these" answers
labellers gave, grouped into candidate topics (by the names they typed, then by what the texts say:
`feedback.topics.unlisted_groups`). The maintainer picks a group, unticks the answers that do not belong, names the
topic and creates it: the ticked answers become its first labels (`UnlistedAnswers.place`). A missing topic
is found by the people who meet it. Answers no topic is missing for are dismissed.

What the panel shows is bounded whatever waits: the store groups a fair sample (`UnlistedAnswers.listing`), the
groups are shown a page at a time, a group's answers at most ANSWERS_SHOWN at a time, and nothing is chosen, ticked or
named until the maintainer picks a group: the largest group may be a stranger's flood."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import gradio as gr

from core.taxonomy import TaxonomyConflict, TaxonomyError
from feedback.errors import FeedbackError
from feedback.store import FeedbackStore
from feedback.topics.unlisted import Listing
from feedback.topics.unlisted_groups import Group
from feedback.trust.rules import MAINTAINER
from web.admin.actions import AdminActions
from web.admin.guard import NO_STORE, admin_only
from web.server.events import PRIVATE

GROUPS_PER_PAGE = 20
ANSWERS_SHOWN = 100  # a group's answers listed (and tickable) at once; the rest after these are decided


def groups_table(groups: list[Group], first: int = 0) -> str:
    """The groups as an HTML table (escaped: names are data), numbered from `first` + 1: suggested name, answers,
    people."""
    if not groups:
        return ""  # the summary above says there are none: once is enough
    rows = "".join(f"<tr><td>{first + n}</td><td>{html.escape(g.name)}"
                   f"{'' if g.named else ' <small>(from the texts)</small>'}</td>"
                   f"<td>{len(g.ids)}</td><td>{g.people}</td></tr>" for n, g in enumerate(groups, start=1))
    return ('<table class="unlisted-groups"><thead><tr><th>#</th><th>Suggested topic</th><th>Answers</th>'
            f"<th>People</th></tr></thead><tbody>{rows}</tbody></table>")


def answer_label(row: dict[str, Any], group: Group) -> str:
    """One answer as its checkbox reads: id, its group, the name the labeller gave, who, and the text."""
    named = f"named “{row['name']}”" if row.get("name") else "no name given"
    text = " ".join(str(row["text"]).split())
    text = text if len(text) <= 200 else text[:199] + "…"
    return f"#{row['id']} · [{group.name}] · {named} · {row['annotator']}\n{text}"


def page_count(groups: list[Group]) -> int:
    return max(1, -(-len(groups) // GROUPS_PER_PAGE))


def summary(listing: Listing) -> str:
    """The panel's first line: how many wait, in how many groups, and whether only a sample of them is grouped."""
    if not listing.groups:
        return 'No "None of these" answers are waiting.'
    sampled = (f" These groups are of **{len(listing.rows):,}** of them, a fair share of each person's: decide them, "
               "then List again for the rest." if listing.sampled else "")
    return (f"**{listing.waiting:,}** answer(s) where no topic fitted, in **{len(listing.groups):,}** group(s), the "
            f"largest first.{sampled} Choose a group: its answers are ticked; untick those that do not belong, name "
            "the topic and create it.")


@dataclass(frozen=True)
class Shown:
    """What the panel shows: the summary, one page of the groups' table, the page's number, the group chooser, the
    chosen group's answers, the name box."""

    summary: Any
    table: Any
    page: Any
    chooser: Any
    answers: Any
    name: Any

    def as_tuple(self) -> tuple[Any, ...]:
        return self.summary, self.table, self.page, self.chooser, self.answers, self.name


def page_of(groups: list[Group], page: int, words: Any = None) -> Shown:
    """Page `page` (0-based, kept in range) of the groups, none chosen: the chooser offers that page's groups, the
    answers and the name are empty. `words` is the summary (None: left as it is)."""
    page = min(max(page, 0), page_count(groups) - 1)
    shown = groups[page * GROUPS_PER_PAGE:(page + 1) * GROUPS_PER_PAGE]
    first = page * GROUPS_PER_PAGE
    return Shown(
        gr.skip() if words is None else words,
        groups_table(shown, first) + (f'<p class="unlisted-pages">Page {page + 1} of {page_count(groups)}</p>'
                                      if len(groups) > GROUPS_PER_PAGE else ""),
        page,
        gr.update(choices=[(f"{first + n}. {g.name} ({len(g.ids)} answers, {g.people} people)", g.ids[0])
                           for n, g in enumerate(shown, start=1)], value=None),
        gr.update(choices=[], value=[]),
        "",
    )


class UnlistedPanel:
    """The panel's handlers, each wrapped in `admin_only`. The groups of the last listing are the tab's (a gr.State),
    so paging and choosing a group never group the answers again."""

    def __init__(self, admin: AdminActions) -> None:
        self.admin = admin

    def _who(self, request: gr.Request, profile: gr.OAuthProfile | None) -> str:
        who = self.admin.identities.identify(request, profile)
        return who.annotator if who.verified else MAINTAINER

    def _list(self) -> tuple[Any, ...]:
        """Group what waits again: the first page, none chosen; and the groups, for the tab's state."""
        store = self.admin.store
        assert store is not None
        listing = store.unlisted.listing()
        return (*page_of(listing.groups, 0, summary(listing)).as_tuple(), listing.groups)

    @admin_only(lambda _: ("Sign in first.", *[gr.skip()] * 6))
    def show(self, request: gr.Request, profile: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """The groups' first page, largest first, none chosen (so nothing is ticked or named)."""
        if self.admin.store is None:
            return NO_STORE, *[gr.skip()] * 6
        return self._list()

    @admin_only(lambda _: ("Sign in first.", *[gr.skip()] * 5))
    def earlier(self, groups: list[Group] | None, page: Any, request: gr.Request,
                profile: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """The listed groups' previous page, none chosen."""
        return page_of(list(groups or []), (page if isinstance(page, int) else 0) - 1).as_tuple()

    @admin_only(lambda _: ("Sign in first.", *[gr.skip()] * 5))
    def later(self, groups: list[Group] | None, page: Any, request: gr.Request,
              profile: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """The listed groups' next page, none chosen."""
        return page_of(list(groups or []), (page if isinstance(page, int) else 0) + 1).as_tuple()

    @admin_only(lambda _: ("Sign in first.", gr.skip(), gr.skip()))
    def choose(self, chosen: Any, groups: list[Group] | None, request: gr.Request,
               profile: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """Tick the chosen group's answers (its first ANSWERS_SHOWN) and put its suggested name in the name box."""
        store = self.admin.store
        if store is None:
            return NO_STORE, gr.skip(), gr.skip()
        first = int(chosen) if isinstance(chosen, int | str) and str(chosen).isdecimal() else None
        group = next((g for g in groups or [] if g.ids[0] == first), None)
        if group is None:
            return "", gr.update(choices=[], value=[]), ""
        rows = store.unlisted.rows(ids=list(group.ids[:ANSWERS_SHOWN]))  # those still waiting
        ids = [int(r["id"]) for r in rows]
        more = len(group.ids) - ANSWERS_SHOWN
        words = (f"Showing the first {ANSWERS_SHOWN} of this group's {len(group.ids):,} answers: create or dismiss "
                 "them, then List again for the rest." if more > 0 else "")
        return words, gr.update(choices=[(answer_label(r, group), int(r["id"])) for r in rows], value=ids), group.name

    def _ticked(self, ids: list[Any] | None) -> tuple[FeedbackStore | None, str]:
        """The store to act on, and why nothing can be done with the ticked answers ("" when something can)."""
        store = self.admin.store
        if store is None:
            return None, NO_STORE
        return store, "" if ids else "Tick one or more answers first."

    @admin_only(lambda _: ("Sign in first.", *[gr.skip()] * 7))
    def create(self, ids: list[Any] | None, name: str, request: gr.Request,
               profile: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """Create the topic `name` (or use the current one of that name) with the ticked answers as its first labels."""
        store, refused = self._ticked(ids)
        if store is None or refused:
            return refused or NO_STORE, *[gr.skip()] * 7
        try:
            placed = store.unlisted.place([int(i) for i in ids or []], name or "", by=self._who(request, profile))
        except TaxonomyConflict as exc:
            return f"Not created: {exc}.", *self._list()
        except (TaxonomyError, FeedbackError) as exc:
            return f"Refused: {exc}.", *[gr.skip()] * 7
        words = placed.words()
        return f"{words[:1].upper()}{words[1:]}. Labellers see the topic the next time their page loads.", *self._list()

    @admin_only(lambda _: ("Sign in first.", *[gr.skip()] * 7))
    def dismiss(self, ids: list[Any] | None, request: gr.Request,
                profile: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """Set the ticked answers aside: no topic is missing for them."""
        store, refused = self._ticked(ids)
        if store is None or refused:
            return refused or NO_STORE, *[gr.skip()] * 7
        try:
            n = store.unlisted.dismiss([int(i) for i in ids or []], by=self._who(request, profile))
        except FeedbackError as exc:
            return f"Nothing changed: {exc}.", *[gr.skip()] * 7
        return f"Dismissed {n} answer(s).", *self._list()


def build_unlisted(admin: AdminActions) -> Any:
    """The panel and its own events; returns the create event, for follow-ups (the topics' list, the tiles)."""
    panel = UnlistedPanel(admin)
    with gr.Accordion("Answers with no topic", open=False, elem_id="unlisted-panel") as box:
        summary_md = gr.Markdown(elem_id="unlisted-summary", elem_classes=["live"])
        table = gr.HTML(elem_id="unlisted-groups")
        listed = gr.State([])  # the groups of the last listing (ids only: the texts stay in the store)
        page = gr.State(0)
        with gr.Row():
            previous = gr.Button("Previous groups", size="sm", elem_id="unlisted-previous")
            following = gr.Button("Next groups", size="sm", elem_id="unlisted-next")
            refresh = gr.Button("List again", size="sm", elem_id="unlisted-refresh")
        chooser = gr.Dropdown([], label="Group", elem_id="unlisted-group")
        note = gr.Markdown(elem_id="unlisted-note")
        answers = gr.CheckboxGroup(label="Its answers (untick those that do not belong)", choices=[], value=[],
                                   elem_id="unlisted-list")
        name = gr.Textbox(label="Topic name", max_length=100, elem_id="unlisted-name")
        with gr.Row():
            create_btn = gr.Button("Create topic from ticked", variant="primary", elem_id="unlisted-create")
            dismiss_btn = gr.Button("Dismiss ticked", elem_id="unlisted-dismiss")
        message = gr.Markdown(elem_id="unlisted-msg", elem_classes=["live"])
    shown = [summary_md, table, page, chooser, answers, name]
    box.expand(panel.show, outputs=[*shown, listed], **PRIVATE)
    refresh.click(panel.show, outputs=[*shown, listed], **PRIVATE)
    previous.click(panel.earlier, inputs=[listed, page], outputs=shown, **PRIVATE)
    following.click(panel.later, inputs=[listed, page], outputs=shown, **PRIVATE)
    chooser.input(panel.choose, inputs=[chooser, listed], outputs=[note, answers, name], **PRIVATE)
    dismiss_btn.click(panel.dismiss, inputs=answers, outputs=[message, *shown, listed], **PRIVATE)
    return create_btn.click(panel.create, inputs=[answers, name], outputs=[message, *shown, listed], **PRIVATE)
