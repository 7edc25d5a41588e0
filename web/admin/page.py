"""The maintainers' page at /admin/: its own Gradio app over the same services as the labellers' page, with the admin
view (`web.admin.view.build_admin`) and nothing of the labellers'. A browser that is not a signed-in admin's gets the
sign-in form only, and every event of the panel refuses it (`web.admin.guard`)."""

from __future__ import annotations

from pathlib import Path

import gradio as gr

from web.admin.actions import AdminActions
from web.admin.view import build_admin

__all__ = ["MOUNT_PATH", "SCRIPTS", "build_admin_page"]

MOUNT_PATH = "/admin"  # served at /admin/; its plain routes (web.admin.routes) live under the same prefix
# The page's own <head> scripts (web.server.theme adds the shared ones): the review list's keys.
SCRIPTS = (Path(__file__).with_name("review_keys.js"),)
PAGE_LINK = "../"  # the labellers' page, relative to this one


def build_admin_page(admin: AdminActions, *, hf_sign_in: bool = False) -> gr.Blocks:
    """The maintainers' page, wired to `admin`. `hf_sign_in` adds Hugging Face's sign-in button (on a Space with OAuth):
    an account on NEWSLOOP_ADMIN_USERS is an admin without the password."""
    with gr.Blocks(title="NewsLoop: maintainers") as demo:
        gr.Markdown("# NewsLoop: maintainers")
        # gr.HTML, not Markdown: Gradio opens a Markdown link in a new tab.
        gr.HTML(f'<a href="{PAGE_LINK}" id="labellers-link">Labellers\' page</a>', elem_id="labellers")
        if hf_sign_in:
            gr.LoginButton()
        build_admin(admin, demo)
    return demo
