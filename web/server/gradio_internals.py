"""The one module that reaches into Gradio's internals: each undocumented attribute NewsLoop relies on, and why.

Gradio documents `gr.mount_gradio_app` and the `launch()` arguments, but a mounted page (what NewsLoop serves,
beside its REST routes) cannot be given several of the bounds `launch()` takes, and some things NewsLoop must
know (which events the queue still holds, which fn_index an event handler became) have no public accessor at
all. Everything of that kind is here, in small named functions, so a Gradio upgrade has one place to revisit;
tests/unit/test_gradio_internals.py fails, naming the function, when an attribute these rely on is gone.
"""

from __future__ import annotations

import hashlib
import json
import os
from base64 import b64decode
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import gradio as gr

T = TypeVar("T")

# Starlette's SessionMiddleware cookie and its default max_age, both as gradio.oauth.attach_oauth installs it.
OAUTH_SESSION_COOKIE = "session"
OAUTH_SESSION_MAX_AGE_S = 14 * 24 * 3600


def bound_session_state(demo: gr.Blocks, sessions: int) -> None:
    """Keep Gradio's per-session state for at most `sessions` sessions. `launch(state_session_capacity=...)`
    sets `Blocks.state_session_capacity`, which Gradio's StateHolder reads when the app is mounted; a mounted
    page has no such argument, so it is set on the Blocks before `gr.mount_gradio_app`."""
    demo.state_session_capacity = sessions


def clean_cache_every(demo: gr.Blocks, seconds: int) -> None:
    """Delete uploads and outputs older than `seconds`, checked as often: `Blocks(delete_cache=...)`, which
    `gr.mount_gradio_app` reads from the Blocks when it builds the app's lifespan (so before mounting)."""
    demo.delete_cache = (seconds, seconds)


def mark_launched(demo: gr.Blocks) -> None:
    """Tell Gradio the page is launched. Gradio checks the file paths an event's inputs name (uploads only,
    never blocked_paths) only in an app it launched itself (`Blocks.has_launched`, which `launch()` sets).
    Mounted, it would hash and copy any file a visitor names: the live database (which drops this process's
    SQLite locks, see core.storage.sqlite_guard), the identity key, or /dev/zero, forever. Called after
    `gr.mount_gradio_app`."""
    demo.has_launched = True


def handler_ids(demo: gr.Blocks, pairs: Sequence[tuple[Callable[..., Any], T]]) -> dict[int, T]:
    """fn_index -> value, for each event whose handler is one of `pairs`' handlers (a join names its event
    only by fn_index). Gradio keeps its events in `Blocks.fns` (fn_index -> BlockFunction, the handler in
    `.fn`); it has no public lookup from a handler to its fn_index."""
    return {fn_id: value for fn_id, block in demo.fns.items() for handler, value in pairs if block.fn == handler}


def page_event(demo: gr.Blocks, fn_index: int, session_hash: str | None = None) -> Any | None:
    """The page's event `fn_index` (a BlockFunction: `.inputs`, `.api_name`), or None when the page has none. Gradio
    keeps the page's events in `Blocks.fns`; one a `gr.render` added exists only in the session that rendered it:
    `Blocks.state_holder` (a session's `blocks_config.fns`), read here without creating a session, as Gradio's own
    lookup (`route_utils.get_fn`) would."""
    fn = demo.fns.get(fn_index)
    holder = getattr(demo, "state_holder", None)
    if fn is None and session_hash and holder is not None and session_hash in holder:
        fn = holder.session_data[session_hash].blocks_config.fns.get(fn_index)
    return fn


def page_events(demo: gr.Blocks) -> dict[int, Any]:
    """fn_index -> the page's event (a BlockFunction: its input components in `.inputs`), from `Blocks.fns`."""
    return dict(demo.fns)


def api_names(demo: gr.Blocks) -> dict[str, int]:
    """api_name -> fn_index for the page's named events (`/gradio_api/call/<api_name>` finds its event by name, in
    `Blocks.fns` as here; private events have their name too)."""
    return {str(fn.api_name): fn_id for fn_id, fn in demo.fns.items() if isinstance(getattr(fn, "api_name", None), str)}


def is_api_input(component: Any) -> bool:
    """Whether an event input is one `gr.api` made from its function's signature (`gradio.components.api_component.Api`:
    any JSON value, a text as long as a caller likes)."""
    from gradio.components.api_component import Api

    return isinstance(component, Api)


def queue_holds(demo: gr.Blocks) -> Callable[[str], bool]:
    """Whether Gradio's queue still holds an event (queued or running). Gradio documents no way to ask;
    its queue (`Blocks._queue`) keeps each event in `event_ids_to_events` until the event finishes, is
    cancelled or its client leaves. Should a Gradio release drop that map, only joins being answered are
    counted (the fair-share test then fails), never every event for good."""

    def holds(event_id: str) -> bool:
        events = getattr(getattr(demo, "_queue", None), "event_ids_to_events", None)
        return events is not None and event_id in events

    return holds


# (environment variable Gradio reads, the queue's attribute it sets from it)
ANALYTICS_ATTRIBUTES = (("GRADIO_ANALYTICS_MAX_EVENTS", "ANALYTICS_MAX_EVENTS"),
                        ("GRADIO_ANALYTICS_CACHE_FREQUENCY", "ANAYLTICS_CACHE_FREQUENCY"))  # sic, Gradio's name


def bound_event_analytics(demo: gr.Blocks, keep: int = 1_000) -> None:
    """Gradio keeps a record of every event for its monitoring page (10,000 by default) and after each event
    summarises them all in a pandas DataFrame, a cost that grows with the records kept, so a flood of events
    slows every later one, and memory grows until then. NewsLoop shows no monitoring page: keep `keep`
    records and summarise once per `keep` events. Gradio reads these from GRADIO_ANALYTICS_MAX_EVENTS and
    GRADIO_ANALYTICS_CACHE_FREQUENCY when the queue (`Blocks._queue`) is built (before this runs) and keeps
    them as the queue's attributes; a setting given in the environment wins."""
    queue = getattr(demo, "_queue", None)
    for env, attribute in ANALYTICS_ATTRIBUTES:
        if queue is not None and hasattr(queue, attribute) and env not in os.environ:
            setattr(queue, attribute, keep)


def oauth_session_info(cookie: str, client_secret: str) -> dict[str, Any] | None:
    """The "oauth_info" Gradio's Hugging Face sign-in keeps in its session cookie, or None (badly signed,
    expired by its signature's age, or not that shape). gradio.oauth.attach_oauth installs Starlette's
    SessionMiddleware signed with sha256(OAUTH_CLIENT_SECRET + "-v4"): base64 JSON under itsdangerous'
    TimestampSigner, the token response under "oauth_info" and the profile in its "userinfo". Read here for
    requests outside the mounted page, where that middleware has not decoded the cookie."""
    import itsdangerous  # Starlette's session dependency; only a Space with Hugging Face sign-in gets here

    signer = itsdangerous.TimestampSigner(hashlib.sha256(f"{client_secret}-v4".encode()).hexdigest())
    try:
        info = json.loads(b64decode(signer.unsign(cookie.encode(), max_age=OAUTH_SESSION_MAX_AGE_S))).get("oauth_info")
    except (itsdangerous.BadSignature, ValueError, AttributeError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("userinfo"), dict):
        return None
    return info
