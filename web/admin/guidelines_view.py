"""Labelling guidelines: the maintainer's editor in the admin view (labellers read them in `web.page.guidelines`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gradio as gr

from core.taxonomy import Taxonomy
from feedback.errors import FeedbackError
from feedback.labelling.guidelines import MAX_CHARS, Guidelines, changes_since, topics_section
from web.admin.actions import AdminActions
from web.admin.guard import NO_STORE, admin_only
from web.admin.tab_memory import TabMemory
from web.server.events import PRIVATE
from web.server.topics import PageTopics


def version_line(current: Guidelines, history: list[Guidelines], taxonomy: Taxonomy) -> str:
    """Which version is in force, since when, the earlier ones (answers match them by time), and how the topic list
    changed since it was written (its topics' section follows the list; its text may not)."""
    if current.version == 0:
        return ("In force: the built-in default (no version saved yet), written for the current topics. Answers are "
                "matched to guidelines by time.")
    earlier = ", ".join(f"v{g.version} ({g.saved_at[:16].replace('T', ' ')})" for g in history[1:6])
    line = (f"In force: **version {current.version}**, saved {current.saved_at[:16].replace('T', ' ')} UTC by "
            f"{current.saved_by}." + (f" Earlier: {earlier}." if earlier else "")
            + " Answers are matched to the version in force when they were given.")
    since = changes_since(taxonomy, current.saved_at)
    if since:
        line += (f"\n\n⚠️ **The topics changed since it was saved**: {'; '.join(since)}. The topics' section above "
                 "follows the list by itself; check that the text names the topics as they are now, then save.")
    return line


def topics_preview(taxonomy: Taxonomy) -> str:
    """The section labellers read first, drawn from the topic list, and where its descriptions are edited."""
    return (f"{topics_section(taxonomy)}\n*Labellers read this first, drawn from the topic list: describe a topic "
            "in the Topics panel below (Describe a topic). Your text follows it.*")


class GuidelinesEditor:
    """The admin's editor; each handler is wrapped in `admin_only`."""

    def __init__(self, admin: AdminActions) -> None:
        self.admin = admin
        self.sent = TabMemory()  # the version each tab's editor was last filled with

    def _taxonomy(self) -> Taxonomy:
        return (self.admin.topics or PageTopics(None, self.admin.store)).taxonomy()

    @admin_only(lambda _: (gr.skip(), gr.skip(), gr.skip()))
    def load(self, request: gr.Request, profile: gr.OAuthProfile | None = None) -> tuple[Any, str, str]:
        """The version in force, in the editor unless the tab already holds it (the maintainer's draft stays); the
        topics' section as labellers read it."""
        store = self.admin.store
        if store is None:
            return gr.skip(), gr.skip(), gr.skip()
        taxonomy = self._taxonomy()
        current = store.guidelines.current(taxonomy)
        held = self.sent.swap(request, current.version) == current.version
        return (gr.skip() if held else current.text, version_line(current, store.guidelines.history(), taxonomy),
                topics_preview(taxonomy))

    @admin_only(lambda _: ("Sign in first.", gr.skip()))
    def save(self, text: str, request: gr.Request, profile: gr.OAuthProfile | None = None) -> tuple[str, str]:
        store = self.admin.store
        if store is None:
            return NO_STORE, gr.skip()
        by = self.admin.signed_in_as(request, profile)
        try:
            saved, new = store.guidelines.save(text, by)
        except FeedbackError as exc:
            return f"Not saved: {exc}", gr.skip()
        line = version_line(saved, store.guidelines.history(), self._taxonomy())
        self.sent.swap(request, saved.version)  # the editor holds it: typed, then saved
        if not new:
            return "Not saved: the text is the same as the version in force.", line
        return f"Saved as version {saved.version}: labellers see it the next time their page loads.", line


def build_guidelines_editor(admin: AdminActions) -> Callable[[Any], Any]:
    """The admin's editor. Returns `reload(event)`, which fills it (the version in force) after `event`."""
    editor = GuidelinesEditor(admin)
    with gr.Column(elem_id="guidelines-editor"):
        gr.Markdown("## Labelling guidelines")
        topics = gr.Markdown(elem_id="guidelines-topics")
        text = gr.Textbox(label="Guidelines (markdown): general rules and hard cases, shown to labellers after the "
                          "topics, beside the queue and Classify", lines=14, max_lines=40, max_length=MAX_CHARS,
                          elem_id="guidelines-text")
        versions = gr.Markdown(elem_id="guidelines-version")
        save = gr.Button("Save the guidelines", elem_id="guidelines-save")
        message = gr.Markdown(elem_id="guidelines-msg", elem_classes=["live"])
    save.click(editor.save, inputs=text, outputs=[message, versions], **PRIVATE)

    def reload(event: Any) -> Any:
        return event.then(editor.load, outputs=[text, versions, topics], **PRIVATE)

    return reload
