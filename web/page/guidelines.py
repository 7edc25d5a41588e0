"""The labelling guidelines labellers read beside the queue and Classify: the topics' section (drawn from the topic
list) and the maintainer's text in force, rendered as their page loads (the maintainer edits the text in
`web.admin.guidelines_view`, the topics' descriptions in `web.admin.topics_view`)."""

from __future__ import annotations

from collections.abc import Callable

import gradio as gr


def guidelines_panel(text: Callable[[], str] | None, elem_id: str) -> None:
    """The guidelines for labellers, as a closed accordion; `text()` is read each time the page loads (None: no
    feedback store, no guidelines)."""
    if text is None:
        return
    with gr.Accordion("Labelling guidelines: how to choose a topic", open=False, elem_id=elem_id,
                      elem_classes=["guidelines"]):
        gr.Markdown(text, elem_id=f"{elem_id}-text")
