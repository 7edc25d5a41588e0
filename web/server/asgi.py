"""The HTTP server: FastAPI routes with the pages mounted beside them, browser ids, the upload guard, uvicorn.

app.py mounts two pages (`Page`), each its own Gradio app: the labellers' at / and the maintainers' at /admin/.

uvicorn runs with `proxy_headers=False`: it never rewrites the client address from X-Forwarded-For
(by default it believes 127.0.0.1). `web.server.identity.ProxyPolicy` alone decides which entries to believe.
"""

from __future__ import annotations

import asyncio
import json
import math
import socket
import threading
import time
import uuid
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import gradio as gr
import uvicorn
from fastapi import APIRouter, FastAPI
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request

from core.settings.config import LimitsSection, ServingSection
from web.server.api_body import replay
from web.server.events import EarlyCheck, PageEvents
from web.server.fair_share import DataBudget, FairShare, NewSessions
from web.server.gradio_internals import (
    bound_event_analytics,
    bound_session_state,
    clean_cache_every,
    handler_ids,
    mark_launched,
    queue_holds,
)
from web.server.gradio_routes import BY_NAME, CLOSED_WORDS, JOIN, SMALL_BYTES, Hit, Kind, RouteMap
from web.server.identity import ASGIApp, BrowserIdMiddleware, IdentityService, Scope
from web.server.origin_guard import OriginGuard, OriginPolicy
from web.server.page_cache import PageCache
from web.server.theme import CSS, THEME, head_html


@dataclass(frozen=True)
class ServerOptions:
    """How the server is exposed; built from settings at the edge (app.py). A field named like a setting is that
    setting (NEWSLOOP_<NAME>), and its default is the setting's."""

    max_upload_mb: float = LimitsSection.field_default("max_upload_mb")
    blocked_paths: tuple[str, ...] = ()  # never served as files, whatever Gradio allows
    auth: list[tuple[str, str]] | None = None  # Gradio's sign-in for the whole page (verified identities)
    # Sessions whose Gradio state is kept (between 100 and _GRADIO_SESSIONS).
    session_capacity: int = LimitsSection.field_default("session_capacity")
    cache_cleanup_s: int = 3600  # uploads and outputs older than this are deleted, checked as often
    # Page events one client address may have queued or running at once.
    events_per_address: int = LimitsSection.field_default("events_per_address")
    # Page sessions (tabs) one address may open a minute, and everyone together a second.
    new_sessions_per_minute: int = LimitsSection.field_default("new_sessions_per_minute")
    new_sessions_per_second: int = LimitsSection.field_default("new_sessions_per_second")
    # Event data (MB) one address may send a minute, and the longest text an event takes (its body's bound).
    event_data_mb_per_minute: float = LimitsSection.field_default("event_data_mb_per_minute")
    max_input_chars: int = ServingSection.field_default("max_input_chars")
    routers: Sequence[APIRouter] = field(default_factory=tuple)
    origins: OriginPolicy = field(default_factory=OriginPolicy)  # the app's own origins (web.server.origin_guard)
    # (handler, check): an event of `handler` that `check(request)` refuses (a message) is answered 429 at its
    # start (a join or a call), before it takes a place in the queue: sign-ins locked out, classifications over
    # their rate limit.
    early_refusals: Sequence[tuple[Callable[..., Any], EarlyCheck]] = ()

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 1024 * 1024)


@dataclass(frozen=True)
class EventBounds:
    """What one client address may start through the guard: its fair share of the queue, new sessions, and event
    data a minute. None: that bound is off (tests that look at one guard alone)."""

    fair_share: FairShare | None = None
    new_sessions: NewSessions | None = None
    data_budget: DataBudget | None = None


class RequestGuard:
    """Refuses, before Gradio sees them: requests to the page routes the pages never use (CLOSED, in
    `web.server.gradio_routes`), uploads from anyone but a signed-in admin (the pool import is the page's only file input) or over the size
    limit, queue streams without a session (Gradio fails on an empty one), and small requests (SMALL) over
    SMALL_BYTES. Every request that starts an event (EVENT: a join, a call by name) goes through one admission,
    `_admit`, whichever route it came by. NewsLoop's own routes bound their own bodies."""

    def __init__(
        self,
        app: ASGIApp,
        routes: RouteMap,
        is_admin: Callable[[Any], bool],
        max_bytes: int,
        address_of: Callable[[Any], str] | None = None,
        events: dict[str, PageEvents] | None = None,
        bounds: EventBounds | None = None,
    ) -> None:
        bounds = bounds or EventBounds()
        self.app = app
        self.routes = routes
        self.events = events or {}
        self.new_sessions = bounds.new_sessions
        self.data_budget = bounds.data_budget
        self.is_admin = is_admin
        self.max_bytes = max_bytes
        self.address_of = address_of
        self.fair_share = bounds.fair_share

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        hit = self.routes.find(scope.get("path", ""), scope.get("method", "")) if scope["type"] == "http" else None
        if hit is None:  # not a page's route: NewsLoop's own (each bounds its body) or one nothing serves
            await self.app(scope, receive, send)
        elif hit.kind is Kind.CLOSED:
            await asyncio.sleep(REFUSAL_PAUSE_S)
            await _refuse(send, 404, CLOSED_WORDS)
        elif hit.kind is Kind.EVENT:
            await self._event(scope, receive, send, hit)
        elif hit.kind is Kind.UPLOAD:
            await self._upload(scope, receive, send)
        elif hit.kind is Kind.SMALL:
            body = await _read_body(receive, SMALL_BYTES)
            if body is None:
                await _refuse(send, 413, "The request is too large.")
                return
            await self.app(scope, replay(body), send)
        elif hit.template == "/gradio_api/queue/data" and not parse_qs(
                scope.get("query_string", b"").decode()).get("session_hash"):
            await _refuse(send, 400, "A session_hash is required.")
        else:
            await self.app(scope, receive, send)

    async def _upload(self, scope: Scope, receive: Any, send: Any) -> None:
        request = Request(scope)
        length = request.headers.get("content-length", "")
        if not self.is_admin(request):
            await _refuse(send, 403, "Only a signed-in admin may upload files.")
        elif length.isdecimal() and int(length) > self.max_bytes:
            await _refuse(send, 413, f"Files are limited to {self.max_bytes / (1024 * 1024):g} MB.")
        else:
            await self.app(scope, receive, send)

    async def _event(self, scope: Scope, receive: Any, send: Any, hit: Hit) -> None:
        """A request that starts an event: refused when its address has its fair share of the queue already (before
        its body is read), else admitted or refused by `_admit`; passed on noting the event it became."""
        request = Request(scope)
        share, address = self.fair_share, self.address_of(request) if self.address_of else ""
        if share is not None and not share.admit(address):
            await asyncio.sleep(REFUSAL_PAUSE_S)
            await _refuse(send, 429, "Too many of your requests are waiting: try again when they finish.",
                          retry_after=1)
            return
        answer: dict[str, Any] = {"status": 0, "body": b""}

        async def noted(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
            elif message["type"] == "http.response.body" and len(answer["body"]) < 4096:
                answer["body"] += message.get("body", b"")
            await send(message)

        try:
            admitted = await self._admit(request, receive, address, hit)
            if isinstance(admitted, Refusal):
                await asyncio.sleep(REFUSAL_PAUSE_S)
                await _refuse(send, admitted.status, admitted.detail, retry_after=admitted.retry_after)
            else:
                await self.app(scope, replay(admitted), noted)
        finally:
            if share is not None:
                share.joined(address, _event_id(answer["body"]) if answer["status"] == 200 else None)

    async def _admit(self, request: Request, receive: Any, address: str, hit: Hit) -> bytes | Refusal:
        """The one admission of an event, whichever route starts it: its body read within the page's largest event
        bound and its size spent from the address's data budget before it is parsed (once); then the event it names
        (by fn_index in a join, by name in a call), that event's own bound, its early check and, for a session the
        server has not seen, the new-session limits. The body to pass on, or why not."""
        page = self.events[hit.page]
        declared = request.headers.get("content-length", "")
        if declared.isdecimal() and int(declared) > page.max_bytes:
            return Refusal(413, page.too_large(int(declared)))
        body = await _read_body(receive, page.max_bytes)
        if body is None:
            return Refusal(413, page.too_large(None))
        if self.data_budget is not None and (wait := self.data_budget.spend(address, len(body))):
            return Refusal(429, f"Too much data from your address: try again in {math.ceil(wait)} s.",
                           math.ceil(wait))
        payload = _parsed(body)
        if not isinstance(payload, dict):
            return Refusal(422, "An event's request must be a JSON object (see the page's \"Use via API\").")
        session = payload.get("session_hash")
        session = session if isinstance(session, str) and session.strip() else None
        # The event Gradio will run: a join's fn_index; a call's name; a direct call's fn_index if it gives one.
        fn_index, name = payload.get("fn_index"), hit.params.get("api_name", "")
        numbered = isinstance(fn_index, int) and not isinstance(fn_index, bool)
        if hit.template == JOIN and session is None:
            return Refusal(400, "A session_hash is required.")
        if hit.template == JOIN and not numbered:
            return Refusal(422, "A join's fn_index must be a number naming one of the page's events.")
        if isinstance(fn_index, int) and numbered and hit.template.rstrip("/") not in BY_NAME:
            event, named = page.by_index(fn_index, session), f"number {fn_index}"
        else:
            event, named = page.by_name(name), repr(name)[:80]
        if event is None:
            return Refusal(404, f"This page has no event {named}.")
        if len(body) > event.max_bytes:
            return Refusal(413, event.too_large(len(body)))
        # A call that names no session gets one of its own from Gradio: a new session each time.
        session = session or f"call:{uuid.uuid4().hex}"
        if self.new_sessions is not None and (crowded := self.new_sessions.refuses(session, address)):
            return _crowded(crowded)  # before the early check: its thread costs more than this look
        if event.early is not None and (why := await run_in_threadpool(event.early, request)) is not None:
            return Refusal(429, why, 1)  # a shared limiter reads the database: off the event loop
        if self.new_sessions is not None and (crowded := await self.new_sessions.admit(session, address)):
            return _crowded(crowded)
        return body


@dataclass(frozen=True)
class Refusal:
    """An answer instead of the event: status, a sentence, and the seconds to wait (Retry-After), if any."""

    status: int
    detail: str
    retry_after: int | None = None


# A refused start of an event (or a closed route) is answered after this pause, holding no work: whatever a client
# is refused for, it cannot be refused more than 1 / REFUSAL_PAUSE_S times a second on one connection, so a flood
# on a few dozen kept-alive connections, which would take a thousand refusals a second (most of a core on 2
# cores), takes a hundred. A client told "wait" or "wrong" loses nothing by hearing it half a second later.
REFUSAL_PAUSE_S = 0.5


def _crowded(why: str) -> Refusal:
    if why == "address":
        return Refusal(429, "Too many new pages opened from your address: try again in a moment.", 2)
    return Refusal(503, "Many people are opening the page right now: try again in a few seconds.", 2)


_GRADIO_SESSIONS = 250


async def _read_body(receive: Any, limit: int) -> bytes | None:
    chunks, size, more = [], 0, True
    while more:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        more = message.get("more_body", False)
    return b"".join(chunks)


def _parsed(body: bytes) -> Any:
    """The body's JSON, or None (not JSON, not UTF-8, nested too deep)."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def _event_id(body: bytes) -> str | None:
    event_id = (_parsed(body) or {}).get("event_id") if body.startswith(b"{") else None
    return event_id if isinstance(event_id, str) else None


async def _refuse(send: Any, status: int, detail: str, retry_after: int | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    if status == 413:  # the rest of the body is never read: close the connection instead of draining it
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


GZIP_MIN_BYTES = 1024  # smaller bodies gain too little for the work
GZIP_LEVEL = 6  # the usual trade: most of level 9's saving for about half its CPU per response


@dataclass(frozen=True)
class Page:
    """One Gradio app the server mounts: `blocks` at `path` ("" for the site's root, else "/name", served at
    "/name/"), its <head> its own `scripts` after the shared ones (web.server.theme)."""

    blocks: gr.Blocks
    path: str = ""
    scripts: Sequence[Path] = ()


def build_server(
    pages: Sequence[Page], identities: IdentityService, options: ServerOptions,
    is_admin: Callable[[Any], bool] = lambda _: False,
) -> FastAPI:
    """The one ASGI app: REST routes first, then each page at its path (the root's last: it takes every other path),
    wrapped in the upload guard and browser ids. One process, one port, whatever the pages."""
    api = FastAPI(title="NewsLoop", docs_url="/api/docs", openapi_url="/api/openapi.json", redoc_url=None)
    for router in options.routers:
        api.include_router(router)
    # /openapi.json is NewsLoop's own API too (Gradio's app, mounted below, would list its internal routes).
    api.add_api_route("/openapi.json", lambda: JSONResponse(api.openapi()), include_in_schema=False)
    for page in pages:
        if page.path:  # "/admin" -> "/admin/" (Starlette's own redirect needs a route; a mount is none)
            api.add_api_route(page.path, _to_folder(page.path), include_in_schema=False)
    app = api
    for page in sorted(pages, key=lambda page: page.path == ""):
        demo = page.blocks
        # Gradio's own per-session state copies every component's config: about 250 KB a session for the page with
        # the admin view in it (measured), so a session count alone is no bound on memory: at most _GRADIO_SESSIONS
        # per page, whatever NEWSLOOP_SESSION_CAPACITY allows NewsLoop's own memory (at least 100 recent tabs keep
        # theirs). A tab whose state was dropped is served with Gradio's defaults again: what a handler changed in its
        # components (visibility, choices) and the one gr.State of the admin's people view start over.
        bound_session_state(demo, min(max(options.session_capacity, 100), _GRADIO_SESSIONS))
        bound_event_analytics(demo)  # NewsLoop shows no monitoring page: Gradio's event records, bounded
        clean_cache_every(demo, options.cache_cleanup_s)
        app = gr.mount_gradio_app(
            api, demo, path=page.path, auth=options.auth, blocked_paths=list(options.blocked_paths),
            max_file_size=options.max_upload_bytes, ssr_mode=False, footer_links=["api"],
            theme=THEME, css=CSS, head=head_html(page.scripts), app_kwargs={"openapi_url": None}, i18n=TRANSLATIONS,
        )
        # Mounted, Gradio would hash and copy any file an event's inputs name (the live database, the identity key,
        # /dev/zero): it checks them only in an app it launched itself (see gradio_internals.mark_launched).
        mark_launched(demo)
    # Starlette runs the last-added middleware first: a foreign origin is refused before anything else looks;
    # browser ids must exist before the guard looks.
    holds = [queue_holds(page.blocks) for page in pages]
    fair_share = FairShare(options.events_per_address, lambda event_id: any(held(event_id) for held in holds))
    # A join names its event by fn_index, a call by name, within the page it reaches: each page's own.
    events = {page.path: PageEvents(page.blocks, handler_ids(page.blocks, options.early_refusals),
                                    options.max_input_chars) for page in pages}
    # Innermost: what the app answers is compressed for a browser that accepts it (the page's configuration shrinks
    # to about a sixth); Starlette leaves event streams (the queue's answers) and small bodies as they are.
    app.add_middleware(GZipMiddleware, minimum_size=GZIP_MIN_BYTES, compresslevel=GZIP_LEVEL)
    if options.auth is None:  # with Gradio's sign-in the page names its user: built per request, as Gradio does
        # Each page, compressed, built once per address it is reached under.
        app.add_middleware(PageCache, paths=frozenset(f"{page.path}/" for page in pages))
    # Gradio answers any origin's CORS request with credentials unless the app configures CORS itself (its
    # CustomCORSMiddleware defers to a Starlette CORSMiddleware on the parent app): name only the app's own.
    app.add_middleware(CORSMiddleware, allow_origins=options.origins.cors_origins, allow_credentials=True,
                       allow_methods=["GET", "POST"], allow_headers=["*"])
    bounds = EventBounds(fair_share, NewSessions(options.new_sessions_per_minute, options.new_sessions_per_second),
                         DataBudget(int(options.event_data_mb_per_minute * 1024 * 1024)))
    app.add_middleware(RequestGuard, routes=RouteMap(api), is_admin=is_admin, max_bytes=options.max_upload_bytes,
                       address_of=identities.address_of, events=events, bounds=bounds)
    app.add_middleware(BrowserIdMiddleware, identities=identities)
    app.add_middleware(OriginGuard, policy=options.origins)
    return app


def _to_folder(path: str) -> Callable[[], RedirectResponse]:
    # Relative, so it holds behind a proxy's root path: "name/" from ".../name" is ".../name/".
    location = path.rsplit("/", 1)[-1] + "/"
    return lambda: RedirectResponse(location, status_code=307)


# Gradio's status tracker announces `common.complete` to screen readers after each event, a key its English strings
# lack, so they read the key out (after every answer): said as a word. Answers' own events hide their progress, their
# message being the announcement (web.page.classify_view).
TRANSLATIONS = gr.I18n(en={"common.complete": "Done"})


def uvicorn_config(app: FastAPI, host: str, port: int) -> uvicorn.Config:
    return uvicorn.Config(
        app, host=host, port=port, proxy_headers=False, forwarded_allow_ips="", log_level="warning",
        timeout_graceful_shutdown=5,
    )


class _Announced(uvicorn.Server):
    """A server that prints one line once it listens (uvicorn's own is a log line the app's logging leaves out)."""

    def __init__(self, config: uvicorn.Config, announce: str) -> None:
        super().__init__(config)
        self.announce = announce

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and self.announce:
            print(self.announce, flush=True)


def address(host: str, port: int) -> str:
    """Where a browser on this machine opens a server listening on `host`:`port` (every address: this machine's)."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def serve(app: FastAPI, host: str, port: int, announce: str = "") -> None:
    """Serve until interrupted (the app's main loop), printing `announce` once the server listens."""
    _Announced(uvicorn_config(app, host, port), announce).run()


class ServerThread:
    """The real server in a background thread (tests and benchmarks), stopped with `stop()`."""

    def __init__(self, app: FastAPI, host: str, port: int) -> None:
        self.server = uvicorn.Server(uvicorn_config(app, host, port))
        self.thread = threading.Thread(target=self.server.run, name="newsloop-server", daemon=True)

    def start(self, timeout_s: float = 60.0) -> None:
        self.thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
