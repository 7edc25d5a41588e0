"""The labelling guidelines labellers read beside the queue and Classify, rendered from the version in force when
their page loads (the maintainer edits them in `web.admin.guidelines_view`)."""

from __future__ import annotations

import gradio as gr

from feedback.store import FeedbackStore


def guidelines_panel(store: FeedbackStore | None, elem_id: str) -> None:
    """The guidelines for labellers, as a closed accordion; the text is read each time the page loads."""
    if store is None:
        return
    with gr.Accordion("Labelling guidelines: how to choose a topic", open=False, elem_id=elem_id,
                      elem_classes=["guidelines"]):
        gr.Markdown(lambda: store.guidelines.current().text, elem_id=f"{elem_id}-text")
