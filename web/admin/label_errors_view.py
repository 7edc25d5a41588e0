"""The admin view's "Possible label errors" panel, an accordion that lists when opened: the rows a search doubts
(base rows and trusted answers), with the label they have, the topic the data suggests and how sure, and where each
came from; tick them and relabel, keep or exclude them at once; undo recent decisions.

Keyboard (web/admin/review_keys.js): the arrows move (K is keep here, not up), Space ticks, L relabels the ticked
rows, K keeps them, X excludes them; in the decisions list U undoes the ticked ones. The search itself runs as a
child process (`newsloop label-errors` through `web.admin.jobs`), so torch never loads in the server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from core.taxonomy import Taxonomy
from feedback.errors import FeedbackError
from feedback.meaning import label_in_words
from feedback.trust.bulk import ANY, narrowing
from feedback.trust.label_errors import Action, Source
from feedback.trust.rules import MAINTAINER
from web.admin.actions import AdminActions
from web.admin.guard import NO_STORE, admin_only, guarded_by
from web.server.events import PRIVATE

SUGGESTED = "suggested"  # relabel each ticked row to its own suggested topic
SHOWN = 100  # candidates listed at once
DECISIONS_SHOWN = 20  # recent decisions offered for undo
SEARCH = "label-errors"  # the job a search runs: `python -m retrain label-errors`
POLL_S = 3.0  # how often the panel looks whether its search ended


def candidate_label(row: dict[str, Any], taxonomy: Taxonomy) -> str:
    """One candidate as its checkbox reads: id, the label it has (a split's earlier label as "B or C"), the suggested
    one and how sure, where from, the text; topics by their current names."""
    given = label_in_words(taxonomy, row["given_label"])
    suggested = label_in_words(taxonomy, row["suggested_label"])
    return (f"#{row['id']} · {given} → {suggested} {row['probability']:.0%} · "
            f"{row['origin']}\n{' '.join(str(row['text']).split())}")


def decision_label(row: dict[str, Any], taxonomy: Taxonomy) -> str:
    """One decision as its checkbox reads: what, on which label, who, when, and the text's start."""
    before = label_in_words(taxonomy, row["label_before"])
    after = label_in_words(taxonomy, row["label_after"]) if row["label_after"] else ""
    what = {Action.RELABEL: f"relabelled {before} → {after}",
            Action.KEEP: f"kept {before}", Action.EXCLUDE: f"excluded ({before})"}
    when = str(row.get("decided_at", ""))[:16].replace("T", " ")
    text = " ".join(str(row["text"]).split())
    text = text if len(text) <= 160 else text[:159] + "…"
    return f"#{row['id']} · {what[Action(row['action'])]} · {row['decided_by']} · {when}\n{text}"


class LabelErrorsPanel:
    """The panel's handlers, each wrapped in `admin_only`."""

    def __init__(self, admin: AdminActions) -> None:
        self.admin = admin

    def _who(self, request: gr.Request, profile: gr.OAuthProfile | None) -> str:
        who = self.admin.identities.identify(request, profile)
        return who.annotator if who.verified else MAINTAINER

    @admin_only(lambda _: ("Sign in first.", gr.skip(), gr.skip()))
    def search(self, source: str, request: gr.Request, profile: gr.OAuthProfile | None = None) -> tuple[str, Any, Any]:
        """A line saying how many candidates are waiting, the list of them (none ticked), and the recent decisions."""
        store = self.admin.store
        if store is None:
            return NO_STORE, gr.skip(), gr.skip()
        try:
            rows, total = store.label_errors.open_candidates(SHOWN, narrowing(source))
        except (FeedbackError, ValueError) as exc:
            return f"Cannot list: {exc}", gr.update(choices=[], value=[]), gr.skip()
        search = store.label_errors.latest_search()
        if search is None:
            summary = "No search yet: press **Search for label errors** (or run `newsloop label-errors`)."
        else:
            when = str(search["created_at"])[:16].replace("T", " ")
            read = f"{search['rows']:,} rows read, " if search["rows"] else ""
            data = f" of {search['data']} and the trusted answers" if search.get("data") else ""
            which = f"the search of {when} UTC{data} ({read}{search['candidates']:,} found)"
            if total:
                more = f"; the first {len(rows)} are listed" if total > len(rows) else ""
                summary = (f"**{total:,}** possible label error(s) to decide, from {which}{more}, the likeliest first. "
                           "Relabel sets the suggested topic (or the one chosen beside it); keep hides a row while it "
                           "has that label; exclude leaves it out of training.")
            elif search["candidates"]:
                summary = f"Every candidate of {which} has been decided."
            else:
                summary = f"No label looks wrong to {which}."
            if search.get("left_out"):
                summary += f" Left aside: {search['left_out']}."
        if self.searching():
            summary = f"**Searching for label errors…** the list refreshes itself when it ends. {summary}"
        decisions = store.label_errors.decisions(DECISIONS_SHOWN, live_only=True)
        taxonomy = store.topics.current()
        return (summary, gr.update(choices=[(candidate_label(r, taxonomy), int(r["id"])) for r in rows], value=[]),
                gr.update(choices=[(decision_label(r, taxonomy), int(r["id"])) for r in decisions], value=[]))

    @admin_only(lambda _: ("Sign in first.", gr.skip(), gr.skip()))
    def select_all(self, source: str, request: gr.Request, profile: gr.OAuthProfile | None = None) -> tuple[str, Any, Any]:
        """Tick every listed candidate (the list is read again, so what is ticked is what is shown)."""
        summary, listing, decisions = self.search(source, request, profile)
        if isinstance(listing, dict) and "choices" in listing:
            listing["value"] = [value for _, value in listing["choices"]]
        return summary, listing, decisions

    def act(self, action: Action | str) -> Callable[..., tuple[str, str, Any, Any]]:
        """Relabel, keep or exclude every ticked candidate, then list again."""
        action = Action(action)

        @guarded_by(self, lambda _: ("Sign in first.", gr.skip(), gr.skip(), gr.skip()))
        def handler(ids: list[Any] | None, new_label: str, source: str, request: gr.Request,
                    profile: gr.OAuthProfile | None = None) -> tuple[str, str, Any, Any]:
            store = self.admin.store
            if store is None:
                return NO_STORE, gr.skip(), gr.skip(), gr.skip()
            if not ids:
                return "Tick one or more rows first (Space ticks the focused one).", gr.skip(), gr.skip(), gr.skip()
            label = new_label if action is Action.RELABEL and new_label and new_label != SUGGESTED else None
            try:
                message = store.label_errors.decide(ids, action, self._who(request, profile), label).message()
            except FeedbackError as exc:
                return f"Nothing changed: {exc}", gr.skip(), gr.skip(), gr.skip()
            return (message, *self.search(source, request, profile))

        return handler

    @admin_only(lambda _: ("Sign in first.", gr.skip(), gr.skip(), gr.skip()))
    def undo(self, ids: list[Any] | None, source: str, request: gr.Request,
             profile: gr.OAuthProfile | None = None) -> tuple[str, str, Any, Any]:
        """Take back the ticked decisions: their rows train as before and are listed again."""
        store = self.admin.store
        if store is None:
            return NO_STORE, gr.skip(), gr.skip(), gr.skip()
        if not ids:
            return "Tick one or more decisions to undo.", gr.skip(), gr.skip(), gr.skip()
        try:
            undone = store.label_errors.undo(ids, self._who(request, profile))
        except FeedbackError as exc:
            return f"Nothing changed: {exc}", gr.skip(), gr.skip(), gr.skip()
        message = (f"Undid {len(undone)} decision(s): {', '.join(f'#{i}' for i in undone)}." if undone
                   else "Those decisions were undone already.")
        return (message, *self.search(source, request, profile))

    def searching(self) -> bool:
        """Whether a search started from this view is running."""
        job = self.admin.jobs.status()
        return job.running and job.command.split(" ")[0] == SEARCH

    @admin_only(lambda _: ("Sign in first.", gr.skip(), gr.Timer(active=False)))
    def find(self, request: gr.Request, profile: gr.OAuthProfile | None = None) -> tuple[str, Any, gr.Timer]:
        """Start a search as a child process (`newsloop label-errors`), one job at a time; the summary says it is
        searching, and the panel polls until it ends (`poll`)."""
        started = self.admin.jobs.start(SEARCH)
        if not started.startswith("Started"):
            return started, gr.skip(), gr.Timer(active=False)
        return ("", "**Searching for label errors…** minutes on a first search, seconds later: the list refreshes "
                "itself when it ends.", gr.Timer(active=True))

    @admin_only(lambda _: (gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.Timer(active=False)))
    def poll(self, source: str, request: gr.Request,
             profile: gr.OAuthProfile | None = None) -> tuple[Any, Any, Any, str, gr.Timer]:
        """While the search runs: nothing changes. Once it ended: the new list, how it ended, and no more polling."""
        if self.searching():
            return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.Timer(active=True)
        job = self.admin.jobs.status()
        ended = "" if job.exit_code in (None, 0) else (
            f"The search stopped (exit code {job.exit_code}): {(job.log_tail.strip().splitlines() or ['no output'])[-1]}")
        return (*self.search(source, request, profile), ended, gr.Timer(active=False))


@dataclass
class LabelErrorsWidgets:
    """What the admin view wires beyond the panel itself."""

    panel: LabelErrorsPanel
    changes: list[Any]  # the relabel, keep, exclude and undo events, for follow-ups (the tiles' refresh)
    topic_choice: Any  # "Relabel to", whose choices are the taxonomy's topics


def build_label_errors(admin: AdminActions) -> LabelErrorsWidgets:
    """The panel and its own events."""
    panel = LabelErrorsPanel(admin)
    # An accordion that lists when opened: a fresh page (every visitor's, signed in or not) sends no event for it.
    with gr.Accordion("Possible label errors", open=False, elem_id="label-errors-panel") as box:
        gr.HTML('<p class="kbd-hint">Rows whose label the data doubts, from the base data and from trusted answers. '
                "Keys in the list: <kbd>↑</kbd>/<kbd>↓</kbd> move, <kbd>Space</kbd> ticks, <kbd>L</kbd> relabels "
                "the ticked rows, <kbd>K</kbd> keeps them, <kbd>X</kbd> excludes them; in the decisions, "
                "<kbd>U</kbd> undoes the ticked ones.</p>")
        with gr.Row(elem_id="label-errors-filters"):
            source = gr.Dropdown([("base rows and answers", ANY), ("base rows", Source.BASE.value),
                                  ("trusted answers", Source.ANSWER.value)], value=ANY, label="From",
                                 elem_id="label-errors-source")
            new_label = gr.Dropdown([("the suggested topic", SUGGESTED), *admin.topic_names()], value=SUGGESTED,
                                    label="Relabel to", elem_id="label-errors-new-label")
            list_btn = gr.Button("List again", size="sm", elem_id="label-errors-refresh")
            find_btn = gr.Button("Search for label errors", size="sm", elem_id="label-errors-find")
        summary = gr.Markdown(elem_id="label-errors-summary", elem_classes=["live"])
        listing = gr.CheckboxGroup(label="Candidates (full text)", elem_id="label-errors-list", choices=[], value=[])
        with gr.Row(elem_id="label-errors-actions"):
            all_btn = gr.Button("Tick all listed", size="sm", elem_id="label-errors-all")
            none_btn = gr.Button("Untick all", size="sm", elem_id="label-errors-none")
            relabel_btn = gr.Button("Relabel ticked", variant="primary", elem_id="label-errors-relabel")
            keep_btn = gr.Button("Keep ticked", elem_id="label-errors-keep")
            exclude_btn = gr.Button("Exclude ticked", variant="stop", elem_id="label-errors-exclude")
        message = gr.Markdown(elem_id="label-errors-msg", elem_classes=["live"])
        timer = gr.Timer(POLL_S, active=False)  # on while a search started here runs
        with gr.Accordion("Recent decisions (undo)", open=False, elem_id="label-fixes-panel"):
            decisions = gr.CheckboxGroup(label="Decisions, newest first", elem_id="label-fixes-list", choices=[],
                                         value=[])
            undo_btn = gr.Button("Undo ticked", size="sm", elem_id="label-fixes-undo")
    shown = [summary, listing, decisions]
    box.expand(panel.search, inputs=source, outputs=shown, **PRIVATE)
    source.input(panel.search, inputs=source, outputs=shown, **PRIVATE)
    list_btn.click(panel.search, inputs=source, outputs=shown, **PRIVATE)
    all_btn.click(panel.select_all, inputs=source, outputs=shown, **PRIVATE)
    none_btn.click(lambda: gr.update(value=[]), outputs=listing, **PRIVATE)
    find_btn.click(panel.find, outputs=[message, summary, timer], **PRIVATE)
    timer.tick(panel.poll, inputs=source, outputs=[*shown, message, timer], show_progress="hidden", **PRIVATE)
    changes = [btn.click(panel.act(action), inputs=[listing, new_label, source], outputs=[message, *shown],
                         api_name=f"label_errors_{action.value}", **PRIVATE)
               for btn, action in ((relabel_btn, Action.RELABEL), (keep_btn, Action.KEEP),
                                   (exclude_btn, Action.EXCLUDE))]
    changes.append(undo_btn.click(panel.undo, inputs=[decisions, source], outputs=[message, *shown],
                                  api_name="label_errors_undo", **PRIVATE))
    return LabelErrorsWidgets(panel, changes, new_label)
