"""The HTTP server: FastAPI routes with the page mounted beside them, browser ids, the upload guard, uvicorn.

uvicorn runs with `proxy_headers=False`: it never rewrites the client address from X-Forwarded-For
(by default it believes 127.0.0.1). `web.identity.ProxyPolicy` alone decides which entries to believe.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import gradio as gr
import uvicorn
from fastapi import APIRouter, FastAPI
from starlette.requests import Request

from web.identity import ASGIApp, BrowserIdMiddleware, Gatekeeper, Scope
from web.theme import CSS, THEME, head_html


@dataclass(frozen=True)
class ServerOptions:
    """How the server is exposed; built from settings at the edge (app.py)."""

    max_upload_bytes: int = 5 * 1024 * 1024
    blocked_paths: tuple[str, ...] = ()  # never served as files, whatever Gradio allows
    auth: list[tuple[str, str]] | None = None  # Gradio's sign-in for the whole page (verified identities)
    session_capacity: int = 10_000  # sessions whose Gradio state is kept (at least 1,000)
    cache_cleanup_s: int = 3600  # uploads and outputs older than this are deleted, checked as often
    routers: Sequence[APIRouter] = field(default_factory=tuple)


class RequestGuard:
    """Refuses, before Gradio sees them: uploads from anyone but a signed-in admin (the pool import is the
    page's only file input) or over the size limit, and queue streams without a session (Gradio fails on
    an empty one)."""

    def __init__(self, app: ASGIApp, is_admin: Callable[[Any], bool], max_bytes: int) -> None:
        self.app = app
        self.is_admin = is_admin
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        path = scope.get("path", "").rstrip("/") if scope["type"] == "http" else ""
        if path.endswith("/upload"):
            request = Request(scope)
            length = request.headers.get("content-length", "")
            if not self.is_admin(request):
                await _refuse(send, 403, "Only a signed-in admin may upload files.")
                return
            if length.isdecimal() and int(length) > self.max_bytes:
                await _refuse(send, 413, f"Files are limited to {self.max_bytes / (1024 * 1024):g} MB.")
                return
        if path.endswith("/queue/data") and not parse_qs(scope.get("query_string", b"").decode()).get("session_hash"):
            await _refuse(send, 400, "A session_hash is required.")
            return
        if path.endswith("/queue/join"):
            body = await _read_body(receive, _MAX_EVENT_BYTES)
            if body is None:
                await _refuse(send, 413, "The request is too large.")
                return
            if not _names_a_session(body):
                await _refuse(send, 400, "A session_hash is required.")
                return
            receive = _replay(body)
        await self.app(scope, receive, send)


_MAX_EVENT_BYTES = 4 * 1024 * 1024  # an event's JSON: a 20,000-character text is far below this


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


def _names_a_session(body: bytes) -> bool:
    try:
        session = json.loads(body).get("session_hash")
    except (ValueError, AttributeError):
        return True  # not our concern: Gradio answers malformed bodies itself
    return isinstance(session, str) and bool(session.strip())


def _replay(body: bytes) -> Callable[[], Any]:
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


async def _refuse(send: Any, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def build_server(
    demo: gr.Blocks, gate: Gatekeeper, options: ServerOptions, is_admin: Callable[[Any], bool] = lambda _: False
) -> FastAPI:
    """The one ASGI app: REST routes first, then the page at "/", wrapped in the upload guard and browser ids."""
    api = FastAPI(title="NewsLoop", docs_url="/api/docs", openapi_url="/api/openapi.json", redoc_url=None)
    for router in options.routers:
        api.include_router(router)
    # Gradio's own per-session state (and its pending messages, so a floor keeps live events working).
    demo.state_session_capacity = max(options.session_capacity, 1_000)
    demo.delete_cache = (options.cache_cleanup_s, options.cache_cleanup_s)
    app = gr.mount_gradio_app(
        api, demo, path="", auth=options.auth, blocked_paths=list(options.blocked_paths),
        max_file_size=options.max_upload_bytes, ssr_mode=False, footer_links=["api"],
        theme=THEME, css=CSS, head=head_html(),
    )
    # Gradio checks the file paths an event's inputs name (uploads only, never blocked_paths) only in an app
    # it launched itself. Mounted, it would hash and copy any file a visitor names: the live database (which
    # drops this process's SQLite locks, see core.sqlite_guard), the identity key, or /dev/zero, forever.
    demo.has_launched = True
    # Starlette runs the last-added middleware first: browser ids must exist before the guard looks.
    app.add_middleware(RequestGuard, is_admin=is_admin, max_bytes=options.max_upload_bytes)
    app.add_middleware(BrowserIdMiddleware, gatekeeper=gate)
    return app


def uvicorn_config(app: FastAPI, host: str, port: int) -> uvicorn.Config:
    return uvicorn.Config(
        app, host=host, port=port, proxy_headers=False, forwarded_allow_ips="", log_level="warning",
        timeout_graceful_shutdown=5,
    )


def serve(app: FastAPI, host: str, port: int) -> None:
    """Serve until interrupted (the app's main loop)."""
    uvicorn.Server(uvicorn_config(app, host, port)).run()


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
