"""The Gradio layout: the tabs (web.page.classify_view, web.admin.view) under one page; no behaviour of its own."""

from __future__ import annotations

import gradio as gr

from web.admin.actions import AdminActions
from web.admin.view import build_admin
from web.page.actions import NewsLoopActions
from web.page.classify_view import EXAMPLES, build_api_events, build_classify, build_queue, build_queue_sync

__all__ = ["EXAMPLES", "build_page"]


def build_page(actions: NewsLoopActions, admin: AdminActions | None = None, *, hf_sign_in: bool = False) -> gr.Blocks:
    """The page. Every handler goes through `actions` (and `admin`, whose tab appears only when given);
    `hf_sign_in` adds Hugging Face's sign-in button (on a Space with OAuth), so a labeller's work counts."""
    with gr.Blocks(title="NewsLoop") as demo:
        gr.Markdown("# NewsLoop\nPaste a news article to see its topic. Tell us when it is wrong: the model learns.")
        if hf_sign_in:
            gr.LoginButton()
        with gr.Tabs():
            build_classify(actions)
            build_queue(actions)
            if admin is not None:
                build_admin(admin, demo)
        build_api_events(actions)
        build_queue_sync(actions)
        model_note = gr.Markdown(actions.model_note(), elem_id="model-note")
        demo.load(lambda: actions.model_note(), outputs=model_note, api_visibility="private")
    return demo
