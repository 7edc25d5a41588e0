"""What web.server.gradio_internals relies on still exists in the installed Gradio: a Gradio upgrade that drops or
renames one fails here, naming the adapter function to revisit, instead of silently unbounding the server."""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import time
from base64 import b64encode

import gradio as gr
import pytest

from web.server.gradio_internals import (
    ANALYTICS_ATTRIBUTES,
    OAUTH_SESSION_COOKIE,
    OAUTH_SESSION_MAX_AGE_S,
    api_names,
    bound_event_analytics,
    bound_session_state,
    clean_cache_every,
    handler_ids,
    is_api_input,
    mark_launched,
    oauth_session_info,
    page_event,
    page_events,
    queue_holds,
)

GRADIO_MAJOR = 6  # the major version the adapter was written against (requirements.txt pins the exact one)


def revisit(function: object) -> str:
    return f"Gradio {gr.__version__} changed: revisit web.server.gradio_internals.{getattr(function, '__name__', function)}"


def shout(text: str) -> str:
    return text.upper()


@pytest.fixture
def demo() -> gr.Blocks:
    with gr.Blocks() as blocks:
        box = gr.Textbox()
        box.submit(shout, box, box, api_name="shout")
    blocks.queue()
    return blocks


def test_the_installed_gradio_is_the_major_version_the_adapter_knows() -> None:
    assert int(gr.__version__.split(".")[0]) == GRADIO_MAJOR, (
        f"Gradio {gr.__version__} is installed; web.server.gradio_internals was written against {GRADIO_MAJOR}.x: "
        "check each of its functions against the new release, then update GRADIO_MAJOR here"
    )


def test_blocks_keeps_the_bounds_a_mounted_page_sets(demo: gr.Blocks) -> None:
    for attribute, function in (("state_session_capacity", bound_session_state), ("delete_cache", clean_cache_every),
                                ("has_launched", mark_launched)):
        assert attribute in vars(demo), revisit(function) + f": Blocks has no `{attribute}`"
    bound_session_state(demo, 123)
    clean_cache_every(demo, 60)
    mark_launched(demo)
    assert (demo.state_session_capacity, demo.delete_cache, demo.has_launched) == (123, (60, 60), True)


def test_gradio_still_reads_those_bounds_where_the_adapter_sets_them() -> None:
    from gradio import routes, state_holder

    assert "blocks.state_session_capacity" in inspect.getsource(state_holder), revisit(bound_session_state)
    assert "blocks.delete_cache" in inspect.getsource(routes.App.create_app), revisit(clean_cache_every)
    assert "has_launched" in inspect.getsource(gr.Blocks.launch), revisit(mark_launched)


def test_events_are_found_by_their_handler(demo: gr.Blocks) -> None:
    assert isinstance(getattr(demo, "fns", None), dict), revisit(handler_ids) + ": Blocks has no `fns` dict"
    assert all(hasattr(block, "fn") for block in demo.fns.values()), revisit(handler_ids) + ": a BlockFunction has no `fn`"
    found = handler_ids(demo, [(shout, "checked")])
    config_ids = {dep["api_name"]: dep["id"] for dep in demo.get_config_file()["dependencies"]}
    assert found == {config_ids["shout"]: "checked"}, revisit(handler_ids) + ": fn ids are not the page's fn_index"


def test_the_queue_can_be_asked_which_events_it_holds(demo: gr.Blocks) -> None:
    queue = getattr(demo, "_queue", None)
    assert queue is not None, revisit(queue_holds) + ": Blocks has no `_queue` after .queue()"
    assert isinstance(getattr(queue, "event_ids_to_events", None), dict), (
        revisit(queue_holds) + ": the queue has no `event_ids_to_events` dict"
    )
    holds = queue_holds(demo)
    assert not holds("an-event")
    queue.event_ids_to_events["an-event"] = object()
    assert holds("an-event")


def test_the_queue_keeps_its_event_analytics_bounds_as_attributes(demo: gr.Blocks,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    source = inspect.getsource(type(demo._queue))
    for env, attribute in ANALYTICS_ATTRIBUTES:
        monkeypatch.delenv(env, raising=False)
        assert hasattr(demo._queue, attribute), revisit(bound_event_analytics) + f": the queue has no `{attribute}`"
        assert env in source, revisit(bound_event_analytics) + f": the queue no longer reads {env}"
    bound_event_analytics(demo, keep=7)
    assert all(getattr(demo._queue, attribute) == 7 for _, attribute in ANALYTICS_ATTRIBUTES)


def test_the_sign_in_session_cookie_is_read_as_gradio_writes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from fastapi import FastAPI
    from gradio import oauth
    from starlette.middleware.sessions import SessionMiddleware

    monkeypatch.setattr(oauth, "OAUTH_CLIENT_SECRET", "a-secret")
    monkeypatch.setattr(oauth, "_add_mocked_oauth_routes", lambda app: None)  # its sign-in routes are not this
    app = FastAPI()
    oauth.attach_oauth(app)
    [session] = [m for m in app.user_middleware if m.cls is SessionMiddleware]
    key = hashlib.sha256(b"a-secret-v4").hexdigest()
    assert session.kwargs["secret_key"] == key, revisit(oauth_session_info) + ": the session secret changed"
    assert "session_cookie" not in session.kwargs and "max_age" not in session.kwargs, revisit(oauth_session_info)
    defaults = inspect.signature(SessionMiddleware).parameters
    assert defaults["session_cookie"].default == OAUTH_SESSION_COOKIE, revisit(oauth_session_info)
    assert defaults["max_age"].default == OAUTH_SESSION_MAX_AGE_S, revisit(oauth_session_info)

    import itsdangerous

    info = {"expires_at": int(time.time()) + 60, "userinfo": {"preferred_username": "ann"}}
    cookie = itsdangerous.TimestampSigner(key).sign(b64encode(json.dumps({"oauth_info": info}).encode())).decode()
    assert oauth_session_info(cookie, "a-secret") == info
    assert oauth_session_info(cookie, "another-secret") is None


def take(text: str) -> str:
    return text


def test_events_are_found_by_index_name_and_session_and_api_inputs_are_known(demo: gr.Blocks) -> None:
    from gradio.state_holder import SessionState, StateHolder

    [(fn_index, fn)] = page_events(demo).items()
    assert api_names(demo) == {"shout": fn_index}, revisit(api_names)
    assert page_event(demo, fn_index) is fn and page_event(demo, fn_index + 99, "no-such-session") is None
    assert [type(c).__name__ for c in fn.inputs] == ["Textbox"], revisit(page_events) + ": no `.inputs`"
    # A rendered event lives in its session's config: StateHolder.session_data -> SessionState.blocks_config.fns.
    assert "session_data" in vars(StateHolder()), revisit(page_event)
    assert "self.blocks_config" in inspect.getsource(SessionState.__init__), revisit(page_event)
    with gr.Blocks() as api_only:
        gr.api(take, api_name="take")
    [api_fn] = page_events(api_only).values()
    assert [is_api_input(c) for c in api_fn.inputs] == [True] and not is_api_input(gr.Textbox()), revisit(is_api_input)


# Gradio's private attributes and modules the adapter reaches into, as code elsewhere would name them (a
# class's own `self._queue` is not Gradio's).
INTERNALS = re.compile(r"(?<!self)\._queue\b|\.fns\b|\.state_session_capacity\b|\.delete_cache\b|\.has_launched\b"
                       r"|\bgradio\.(routes|queueing|utils|route_utils)\b|-v4\b")


def test_the_adapter_is_the_only_module_reaching_into_gradio_internals() -> None:
    from core.settings.config import PROJECT_ROOT

    adapter = PROJECT_ROOT / "web" / "server" / "gradio_internals.py"
    files = [PROJECT_ROOT / "app.py", *sorted((PROJECT_ROOT / "web").rglob("*.py"))]
    reaching = {str(path.relative_to(PROJECT_ROOT)): found for path in files if path != adapter
                if (found := sorted({m.group() for m in INTERNALS.finditer(path.read_text(encoding="utf-8"))}))}
    assert reaching == {}, "move these into web.server.gradio_internals"
