"""Every admin event of the running app refuses a caller without an admin session and changes nothing.

The list of events is the app's own: every handler the launched maintainers' page (/admin/) wires that lives in an admin module must
carry the one admin check (`web.admin.guard.admin_only`), except the sign-in flow itself. Each is then called
over raw HTTP by its index, as a script can call any private event, with inputs a script would send."""

from __future__ import annotations

import inspect
import json
import logging
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from starlette.routing import Mount

from core.registry.versions import ModelRegistry
from core.serving.classifier import ChampionService
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from testkit.models import tiny_settings
from tests.e2e.raw_http import ADMIN, Visitor
from web.admin.guard import is_guarded

PASSWORD = "a long admin password for the admin guard test"
ADMIN_MODULES = {"web.admin.actions", "web.admin.overview_view", "web.admin.review_view", "web.admin.people_view", "web.admin.guidelines_view",
                 "web.admin.label_errors_view"}
SIGN_IN_FLOW = {"restore", "login", "after_sign_in", "logout"}  # strangers must reach these to sign in
SURE_OF_WORLD = {"World": 0.97, "Sports": 0.01, "Business": 0.01, "Sci/Tech": 0.01}


class Refusals(logging.Handler):
    """The admin check's log lines ("refused <handler>: ..."), as the server writes them."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.names: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("refused "):
            self.names.append(str(record.args[0]) if record.args else "")


@pytest.fixture(scope="module")
def app(tiny_champion_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any, Path, FeedbackStore]]:
    from app import build_app
    from core.host.net import free_port
    from web.server.asgi import ServerThread

    home = tmp_path_factory.mktemp("guard") / "home"
    shutil.copytree(tiny_champion_home, home)
    registry = ModelRegistry(home / "models")
    shutil.copytree(registry.versions_dir / "v0001", registry.versions_dir / "v0002")
    registry.promote("v0002")  # a previous champion: a rollback would change something
    settings = tiny_settings(home, admin_password=SecretStr(PASSWORD), classify_per_minute=10_000,
                             queue_per_minute=10_000)
    store = FeedbackStore(home / "feedback.db")
    store.pool.add([f"Pool story {i} on trade talks" for i in range(5)], source="test")
    for i in range(3):
        store.answers.record(AnswerInput(text=f"Harbour strike talks, day {i}", user_label="Sports", annotator="user:dana",
                     kind="correct", probabilities=SURE_OF_WORLD, verified=True))
    store.answers.record(AnswerInput(text="Chipmaker's profit beats forecasts", user_label="Sci/Tech", annotator="anon:5f2a", kind="correct"))
    store.answers.record(AnswerInput(text="Chipmaker's profit beats forecasts", user_label="Business", annotator="user:dana",
                 kind="correct", verified=True))
    server_app = build_app(ChampionService(registry), settings, store)
    [mount] = [route for route in server_app.routes if isinstance(route, Mount) and route.path == ADMIN]
    port = free_port()
    server = ServerThread(server_app, "127.0.0.1", port)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}/", mount.app.get_blocks(), home, store
    finally:
        server.stop()


def admin_events(blocks: Any) -> dict[int, Any]:
    """fn_index -> handler for every event whose handler lives in an admin module, the sign-in flow and
    one-line UI lambdas (closing a box, unticking) aside."""
    found = {}
    for index, block_fn in blocks.fns.items():
        if block_fn.fn is None:
            continue  # the browser's own JavaScript
        target = inspect.unwrap(block_fn.fn)
        if target.__module__ in ADMIN_MODULES and target.__name__ not in SIGN_IN_FLOW | {"<lambda>"}:
            found[index] = block_fn.fn
    return found


def script_inputs(config: dict[str, Any], dependency: dict[str, Any]) -> list[Any]:
    """What a script would send for an event's inputs: the page's own values, a text for text boxes, no file
    for the upload, nothing ticked."""
    components = {c["id"]: c for c in config["components"]}
    values = []
    for component_id in dependency["inputs"]:
        component = components[component_id]
        kind, value = component["type"], component.get("props", {}).get("value")
        if kind == "checkboxgroup":
            values.append([])  # Gradio itself refuses ids that are not among this session's listed choices
        elif kind == "textbox":
            values.append("Harbour")
        elif kind in ("uploadbutton", "file"):
            values.append(None)
        else:
            values.append(value)
    return values


def snapshot(home: Path, store: FeedbackStore) -> dict[str, Any]:
    """What an admin event could change: answers, pool, guidelines, the registry, jobs, exports."""
    with sqlite3.connect(store.path) as conn:
        tables = {table: conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
                  for table in ("answers", "pool", "guidelines")}
    return tables | {
        "registry": (home / "models" / "registry.json").read_text(),
        "logs": sorted(p.name for p in (home / "logs").glob("*")),
        "exports": sorted(p.name for p in (home / "exports").glob("*")),
        "progress": (home / "retrain_progress.json").is_file(),
    }


def test_every_admin_event_refuses_a_caller_without_an_admin_session(app) -> None:  # type: ignore[no-untyped-def]
    url, blocks, home, store = app
    events = admin_events(blocks)
    assert events, "the maintainers' page wires no admin event"
    unguarded = sorted(inspect.unwrap(fn).__qualname__ for fn in events.values() if not is_guarded(fn))
    assert unguarded == [], f"admin handlers without the admin check: {unguarded}"
    names = {inspect.unwrap(fn).__name__ for fn in events.values()}
    # The admin view's handlers are all in the list (a sanity check on how it is found).
    assert names >= {"retrain_preview", "launch_retrain", "rollback", "import_pool", "export", "overview", "poll",
                     "look_for_runs", "search", "select_all", "options", "handler", "load", "save"}

    visitor = Visitor(url)
    config = visitor.get(f"{ADMIN}/config").json()
    dependencies = {dep["id"]: dep for dep in config["dependencies"]}
    before = snapshot(home, store)
    refusals = Refusals()
    logger = logging.getLogger("newsloop.app")
    level = logger.level
    logger.addHandler(refusals)
    logger.setLevel(logging.INFO)
    try:
        for index, fn in sorted(events.items()):
            visitor.events()  # the page as a browser loads it first (its id cookie)
            body = {"data": script_inputs(config, dependencies[index]), "fn_index": index,
                    "session_hash": visitor.session_hash, "event_data": None, "trigger_id": None}
            joined = visitor.post(f"{ADMIN}/gradio_api/queue/join", content=json.dumps(body).encode(),
                                  headers={"content-type": "application/json"})
            assert joined.status_code == 200, joined.text
            with visitor.http.stream("GET", f"{ADMIN}/gradio_api/queue/data", params={"session_hash": visitor.session_hash},
                                     headers=visitor._headers()) as stream:
                done = [json.loads(line[5:]) for line in stream.iter_lines() if line.startswith("data:")]
            completed = [m for m in done if m.get("msg") == "process_completed"]
            name = inspect.unwrap(fn).__qualname__
            assert completed and completed[-1]["success"], (name, completed)
            shown = json.dumps(completed[-1]["output"]["data"])
            assert "Harbour strike" not in shown and "Chipmaker" not in shown and "v0002" not in shown, (name, shown)
            assert refusals.names[-1:] == [name], (name, refusals.names[-3:])
    finally:
        logger.removeHandler(refusals)
        logger.setLevel(level)
        visitor.close()
    assert len(refusals.names) == len(events)
    assert snapshot(home, store) == before


def test_a_disagreement_button_refuses_without_a_session(app) -> None:  # type: ignore[no-untyped-def]
    """The settle buttons are drawn per session (gr.render) for admins only, so they are not in the page's
    config; their handler carries the same check."""
    from web.admin.people_view import PeoplePanel, _settle

    _, blocks, home, store = app
    [admin] = {fn.__self__.admin for fn in admin_events(blocks).values()
               if inspect.unwrap(fn).__qualname__ == "PeoplePanel.overview"}
    before = snapshot(home, store)
    [text_hash] = {row["text_hash"] for row in store.answers.rows() if row["text"].startswith("Chipmaker")}
    settle = _settle(PeoplePanel(admin), text_hash, "Business")
    assert is_guarded(settle) and settle(None) == "Sign in first."
    assert snapshot(home, store) == before  # the disagreement stays open


ADMIN_IDS = {"admin-password", "admin-login", "admin-panel", "retrain-btn", "pool-upload", "guidelines-text", "review-list"}


def test_the_labellers_page_carries_nothing_of_the_admins(app) -> None:  # type: ignore[no-untyped-def]
    """Issue 47: / is the labellers' page alone (a link to the maintainers' aside); /admin/ is the admin app,
    which a stranger sees as its sign-in form (every other event refuses them: the test above)."""
    url, blocks, _, _ = app
    visitor = Visitor(url)
    try:
        page = visitor.get("/")
        config = visitor.get("/config").json()
        ids = {c.get("props", {}).get("elem_id") for c in config["components"]}
        assert ids & ADMIN_IDS == set() and "admin-password" not in page.text
        assert 'href="admin/" id="maintainers-link"' in json.dumps(config["components"]).replace('\\"', '"')
        handlers = {dep.get("api_name") for dep in config["dependencies"]}
        assert handlers.isdisjoint({"login", "retrain_preview", "launch_retrain", "rollback", "import_pool", "export"})
        assert len(page.content) < 150_000  # the whole admin view made it about 200 KB

        moved = visitor.http.get("/admin", follow_redirects=False)
        assert moved.status_code == 307 and moved.headers["location"] == "admin/"
        admin_page = visitor.get(f"{ADMIN}/")
        admin_config = visitor.get(f"{ADMIN}/config").json()
        admin_ids = {c.get("props", {}).get("elem_id") for c in admin_config["components"]}
        assert admin_page.status_code == 200 and admin_ids >= ADMIN_IDS
        assert 'href="../" id="labellers-link"' in json.dumps(admin_config["components"]).replace('\\"', '"')
        assert {c.get("props", {}).get("elem_id") for c in admin_config["components"]}.isdisjoint(
            {"news-text", "classify-btn", "queue-article"})  # nothing of the labellers' either
        # The server's own view: the admin handlers are wired on the admin app only.
        assert admin_events(blocks)
    finally:
        visitor.close()
