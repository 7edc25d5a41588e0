"""The labellers' page: Classify and the Label queue as tabs (web.page.classify_view); no behaviour of its own."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import gradio as gr

from web.page.actions import NewsLoopActions
from web.page.classify_view import (
    build_api_events,
    build_classify,
    build_queue,
    build_queue_sync,
    topic_parts,
)
from web.server.events import PRIVATE

__all__ = ["SCRIPTS", "build_page"]

# The page's own <head> scripts (web.server.theme adds the shared ones): counter, answer buttons, label queue, phone
# layout.
SCRIPTS = tuple(Path(__file__).with_name(name) for name in ("keys.js", "answers.js", "queue.js", "layout.js"))
# Where the maintainers' page is, relative to this one (mounted beside it by web.server.asgi).
ADMIN_LINK = "admin/"


def build_page(actions: NewsLoopActions, *, examples: Sequence[str], hf_sign_in: bool = False,
               admin_link: bool = False) -> gr.Blocks:
    """The page. Every handler goes through `actions`; `examples` are Classify's (the data's: `core.samples`);
    `hf_sign_in` adds Hugging Face's sign-in button (on a Space with OAuth), so a labeller's work counts; `admin_link`
    a small link to the maintainers' page (when there is one). Nothing of the admin's is in it: that page is its own
    app (web.admin.page)."""
    with gr.Blocks(title="NewsLoop") as demo:
        gr.Markdown("# NewsLoop\nPaste a news article to see its topic. Tell us when it is wrong: the model learns.")
        if hf_sign_in:
            gr.LoginButton()
        with gr.Tabs():
            answer_buttons = build_classify(actions, examples)
            queue_parts = build_queue(actions)
        build_api_events(actions)
        build_queue_sync(actions)
        model_note = gr.Markdown(actions.model_note(), elem_id="model-note")
        if admin_link:
            # gr.HTML, not Markdown: Gradio opens a Markdown link in a new tab.
            gr.HTML(f'<a href="{ADMIN_LINK}" id="maintainers-link">Maintainers</a>', elem_id="maintainers")
        # One load event draws what changes without a restart: the footer's model and the taxonomy's topics.
        demo.load(lambda: (actions.model_note(), *topic_parts(actions)),
                  outputs=[model_note, answer_buttons, *queue_parts], **PRIVATE)
    return demo
