"""The admin view's "Find articles for a topic" box: a maintainer's words, or a pasted article ("more like this"),
push the nearest pool articles to the front of every annotator's queue (`Pool.push_search`), for a new
topic the model cannot find yet; "Clear pushed" takes them back out. It says how many pushed articles wait."""

from __future__ import annotations

from typing import Any

import gradio as gr

from feedback.errors import FeedbackError
from web.admin.actions import AdminActions
from web.admin.guard import NO_STORE, admin_only
from web.server.events import PRIVATE

DEFAULT_COUNT = 50


class QueueSearch:
    """The box's handlers; each is wrapped in `admin_only`."""

    def __init__(self, admin: AdminActions) -> None:
        self.admin = admin

    def waiting(self) -> str:
        store = self.admin.store
        if store is None:
            return NO_STORE
        return f"{store.pool.pushed_waiting()} pushed articles wait at the front of the queue."

    @admin_only()
    def load(self, request: gr.Request, profile: gr.OAuthProfile | None = None) -> str:
        return self.waiting()

    @admin_only()
    def push(self, query: str, count: float | None, request: gr.Request,
             profile: gr.OAuthProfile | None = None) -> str:
        """Push the `count` articles nearest `query` to the front of the queue; says how many, and how many wait."""
        store = self.admin.store
        if store is None:
            return NO_STORE
        by = self.admin.signed_in_as(request, profile)
        try:
            pushed = store.pool.push_search(query, int(count or DEFAULT_COUNT), by)
        except FeedbackError as exc:
            return f"Nothing pushed: {exc}."
        if not pushed:
            return f"No unanswered article shares a word with that search. {self.waiting()}"
        return f"Pushed {pushed} articles to the front of every annotator's queue. {self.waiting()}"

    @admin_only()
    def clear(self, request: gr.Request, profile: gr.OAuthProfile | None = None) -> str:
        store = self.admin.store
        if store is None:
            return NO_STORE
        return f"Cleared {store.pool.clear_pushed()} pushed articles. {self.waiting()}"


def build_queue_search(admin: AdminActions) -> Any:
    """The box. Returns `reload(event)`, which shows how many pushed articles wait after `event`."""
    search = QueueSearch(admin)
    with gr.Accordion("Find articles for a topic", open=False, elem_id="queue-search"):
        gr.Markdown("Words, or a whole article (more like this): the nearest unanswered articles go first in every "
                    "annotator's queue until answered. For a new topic the model cannot find yet.")
        query = gr.Textbox(label="Words or an article", lines=3, max_length=5000, elem_id="queue-search-query")
        with gr.Row():
            count = gr.Number(DEFAULT_COUNT, label="Articles", minimum=1, maximum=1000, precision=0,
                              elem_id="queue-search-count")
            push_btn = gr.Button("Push to the front of the queue", elem_id="queue-search-push")
            clear_btn = gr.Button("Clear pushed", elem_id="queue-search-clear")
        message = gr.Markdown(elem_id="queue-search-msg", elem_classes=["live"])
    push_btn.click(search.push, inputs=[query, count], outputs=message, **PRIVATE)
    clear_btn.click(search.clear, outputs=message, **PRIVATE)

    def reload(event: Any) -> Any:
        return event.then(search.load, outputs=message, **PRIVATE)

    return reload
