"""A page's events as the server's guard admits them, whichever route starts one: each found by its fn_index (a join)
or its api_name (a call), with the most data it can need and the early check it has, if any.

An event's body is bounded by what its inputs can hold: EVENT_BASE_BYTES for the small ones (ids, choices, numbers,
the session) and, for its longest text input, its characters as JSON at worst (a script's `json.dumps` writes a
non-ASCII character as six bytes). A text input is a Textbox (its `max_length`, else the server's text limit) or an
input `gr.api` made from a function's signature (the server's text limit). A classification (20,000 characters) is
thus at most 136 KB, where the body cap was 4 MB: a body a few MB long is refused before it is parsed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr
from starlette.requests import Request

from web.server.gradio_internals import api_names, is_api_input, page_event, page_events

# What each page event passes unless it is one of the named API calls: hidden from Gradio's API page and not callable
# by its client libraries, so a page's own buttons are no API. Defined once, for both pages.
PRIVATE: dict[str, Any] = {"api_visibility": "private"}

EarlyCheck = Callable[[Request], "str | None"]
EVENT_BASE_BYTES = 16 * 1024  # an event's small inputs and the join's own fields: a few hundred bytes in practice
JSON_BYTES_PER_CHAR = 6  # "\uXXXX": the longest a character of a text gets in JSON


def text_chars(component: Any, limit: int) -> int:
    """The characters an event input can carry as text: a Textbox's `max_length` (else `limit`), `limit` for an input
    of `gr.api`, 0 for any other component (its value is small: a choice, ids, a number, a file's reference)."""
    if isinstance(component, gr.Textbox):
        return int(component.max_length or limit)
    return limit if is_api_input(component) else 0


def event_bytes(inputs: Sequence[Any], limit: int) -> int:
    """The largest body an event with `inputs` can need (see the module's docstring)."""
    return EVENT_BASE_BYTES + JSON_BYTES_PER_CHAR * max((text_chars(c, limit) for c in inputs), default=0)


@dataclass(frozen=True)
class Event:
    """One of a page's events: its fn_index, the most data its body may hold, its early check (or None), and the
    characters its longest text input takes (for the refusal's words)."""

    fn_index: int
    max_bytes: int
    early: EarlyCheck | None
    max_chars: int = 0

    def too_large(self, size: int) -> str:
        """Why a body of `size` bytes is refused, in words."""
        texts = f" (texts of at most {self.max_chars:,} characters)" if self.max_chars else ""
        return f"The request is {size:,} bytes, over the {self.max_bytes:,} this event takes{texts}."


class PageEvents:
    """The events of one mounted page (`demo`): found by fn_index or api_name; `early` maps fn_index -> the check
    that refuses an event of that handler at its start (sign-ins locked out, classifications over their limit);
    `limit` is the server's text limit (characters)."""

    def __init__(self, demo: gr.Blocks, early: Mapping[int, EarlyCheck], limit: int) -> None:
        self._demo, self._early, self._limit = demo, dict(early), limit
        self._named = api_names(demo)
        self.max_bytes = max((event_bytes(fn.inputs, limit) for fn in page_events(demo).values()),
                             default=EVENT_BASE_BYTES)

    def too_large(self, size: int | None) -> str:
        """Why a body of `size` bytes (None: more than it reads) is refused before its event is known, in words."""
        texts = f"texts of at most {self._limit:,} characters"
        if size is None:
            return f"The request is over the {self.max_bytes:,} bytes this page's events take ({texts})."
        return f"The request is {size:,} bytes, over the {self.max_bytes:,} this page's events take ({texts})."

    def by_index(self, fn_index: int, session_hash: str | None = None) -> Event | None:
        """The event `fn_index` (one a session rendered, for that session), or None: the page has no such event."""
        fn = page_event(self._demo, fn_index, session_hash)
        if fn is None:
            return None
        # The body was read within the page's largest bound: an event a session rendered is held to it too.
        return Event(fn_index, min(event_bytes(fn.inputs, self._limit), self.max_bytes), self._early.get(fn_index),
                     max((text_chars(c, self._limit) for c in fn.inputs), default=0))

    def by_name(self, api_name: str) -> Event | None:
        fn_index = self._named.get(api_name)
        return None if fn_index is None else self.by_index(fn_index)
