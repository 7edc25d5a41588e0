"""What each of Gradio's routes under a page is to the server's guards, and which route a request reaches.

A mounted Gradio page serves some eighty routes. NewsLoop's pages use a few of them; the rest (media streams, recordings, the monitoring and run-history pages, the "vibe" editor, proxies) would each be one more way
in, with guards of their own or none. So every route template Gradio mounts is named in GRADIO_ROUTES with what it
is to the guards (`web.server.asgi.RequestGuard`):

- EVENT: starts an event: one admission for all of them (fair share, body bound, data budget, early checks, new
  sessions), whether it is the page's own `/queue/join`, its direct `/run/<api_name>` or the scripts'
  `/call/<api_name>`;
- UPLOAD: a file upload (a signed-in admin's, within the size limit);
- SMALL: a request with a small body of Gradio's own (its sign-in form, a cancel, a reset): bounded at SMALL_BYTES;
- PAGE: what a browser reads (the page, its config and assets, event results): passed on;
- CLOSED: answered 404 with a sentence before Gradio sees it.

A template Gradio mounts that GRADIO_ROUTES does not name is CLOSED too (a Gradio upgrade cannot open a new way in);
tests/unit/test_gradio_routes.py lists the app's routes, so a new one fails there, naming it, until it is decided.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from fastapi.routing import iter_route_contexts
from starlette.routing import Mount, compile_path

log = logging.getLogger("newsloop.app")


class Kind(Enum):
    EVENT = "event"
    UPLOAD = "upload"
    SMALL = "small"
    PAGE = "page"
    CLOSED = "closed"


SMALL_BYTES = 64 * 1024  # Gradio's sign-in form, a cancel or a reset: well under 1 KB
JOIN = "/gradio_api/queue/join"
BY_NAME = ("/gradio_api/call/{api_name}", "/gradio_api/call/v2/{api_name}")  # the event is the one its name names
_E, _U, _S, _P, _C = Kind.EVENT, Kind.UPLOAD, Kind.SMALL, Kind.PAGE, Kind.CLOSED

# Every template Gradio 6 mounts under a page (a trailing "/" twin is named as its template is).
GRADIO_ROUTES: dict[str, Kind] = {
    # Events: the page's own joins, the scripts' calls by name ("Use via API"), and direct calls, which the page
    # makes for the events that skip the queue (gr.Examples' loader; Gradio refuses a queued event there, as
    # api_open=False asks): one admission for all of them.
    JOIN: _E, "/gradio_api/call/{api_name}": _E, "/gradio_api/call/v2/{api_name}": _E,
    "/gradio_api/run/{api_name}": _E, "/gradio_api/api/{api_name}": _E,
    "/gradio_api/upload": _U,
    "/login": _S, "/gradio_api/cancel": _S, "/gradio_api/reset": _S,
    # The page, its configuration and assets, results and progress: what a browser reads.
    "/": _P, "/config": _P, "/theme.css": _P, "/gradio_api/theme.css": _P, "/favicon.ico": _P, "/robots.txt": _P,
    "/manifest.json": _P, "/pwa_icon": _P, "/pwa_icon/{size}": _P, "/assets/{path:path}": _P,
    "/static/{path:path}": _P, "/svelte/{path:path}": _P, "/logout": _P, "/login/huggingface": _P,
    "/login/callback": _P, "/gradio_api/info": _P, "/gradio_api/user": _P, "/gradio_api/login_check": _P,
    "/gradio_api/token": _P, "/gradio_api/app_id": _P, "/gradio_api/startup-events": _P,
    "/gradio_api/heartbeat/{session_hash}": _P, "/gradio_api/queue/data": _P, "/gradio_api/queue/status": _P,
    "/gradio_api/call/{api_name}/{event_id}": _P, "/gradio_api/call/v2/{api_name}/{event_id}": _P,
    "/gradio_api/upload_progress": _P, "/gradio_api/file={path_or_url:path}": _P, "/gradio_api/file/{path:path}": _P,
    # What NewsLoop's pages never use: media streams, recordings, component servers, Gradio's monitoring and
    # run-history pages, its own OpenAPI (NewsLoop's is /openapi.json), deep links, proxies, the "vibe" editor.
    "/gradio_api/stream/{event_id}": _C, "/gradio_api/stream/{event_id}/close": _C,
    "/gradio_api/stream/{session_hash}/{run}/{component_id}/playlist.m3u8": _C,
    "/gradio_api/stream/{session_hash}/{run}/{component_id}/{segment_id}.{ext}": _C,
    "/gradio_api/stream/{session_hash}/{run}/{component_id}/playlist-file": _C,
    "/gradio_api/process_recording": _C, "/gradio_api/component_server": _C,
    "/monitoring": _C, "/monitoring/summary": _C, "/monitoring/{key}": _C, "/gradio_api/runs": _C,
    "/gradio_api/run-history/connect": _C, "/gradio_api/run-history/buckets": _C,
    "/gradio_api/run-history/records": _C,
    "/gradio_api/run-history/records/{endpoint}/{record_id}/assets/{asset_id}": _C,
    "/gradio_api/openapi.json": _C, "/gradio_api/deep_link": _C, "/gradio_api/dev/reload": _C,
    "/gradio_api/proxy={url_path:path}": _C,
    "/gradio_api/custom_component/{id}/{environment}/{type}/{file_name}": _C,
    "/gradio_api/vibe-edit": _C, "/gradio_api/undo-vibe-edit": _C, "/gradio_api/vibe-code": _C,
    "/gradio_api/vibe-starter-queries": _C,
}
CLOSED_WORDS = "NewsLoop's pages do not use this route: it is closed."


def kind_of(template: str) -> Kind | None:
    """What a Gradio route template is to the guards (its trailing-"/" twin as itself); None: not named."""
    return GRADIO_ROUTES.get(template if template == "/" else template.rstrip("/"))


def route_templates(routes: Sequence[Any]) -> list[tuple[str, frozenset[str]]]:
    """(template, methods) of each route in `routes`, those of included routers with their prefix (FastAPI keeps an
    included router's routes apart: `iter_route_contexts` walks them); a Mount is listed as itself, not entered."""
    found = []
    for context in iter_route_contexts(routes):
        route = context.original_route
        path = route.path if isinstance(route, Mount) else context.path
        if path is not None:
            found.append((path, frozenset(context.methods or ())))
    return found


@dataclass(frozen=True)
class Hit:
    """A request to a Gradio page's route: the page's path ("" for the root), the route's template, its kind, the
    path's parameters (e.g. api_name)."""

    page: str
    template: str
    kind: Kind
    params: dict[str, str]


@dataclass(frozen=True)
class _Route:
    pattern: re.Pattern[str]
    template: str
    methods: frozenset[str]
    kind: Kind


class RouteMap:
    """Which route a request reaches: one of NewsLoop's own (None), or one of a mounted page's (a Hit). Built once
    from the server app, after the pages are mounted; a lookup tries the templates in order (about 90)."""

    def __init__(self, app: Any) -> None:
        self._own: list[re.Pattern[str]] = []
        self._pages: list[tuple[str, list[_Route]]] = []
        for route in app.routes:
            if isinstance(route, Mount):
                self._pages.append((route.path, [self._route(t, m) for t, m in route_templates(route.routes)]))
            else:
                self._own.extend(compile_path(t)[0] for t, _ in route_templates([route]))
        self._pages.sort(key=lambda page: -len(page[0]))  # "/admin" before the root's ""

    @staticmethod
    def _route(template: str, methods: frozenset[str]) -> _Route:
        kind = kind_of(template)
        if kind is None:
            log.warning("Gradio route %s is not in web.server.gradio_routes.GRADIO_ROUTES: closed", template)
        return _Route(compile_path(template)[0], template, methods, kind or Kind.CLOSED)

    @property
    def pages(self) -> list[tuple[str, list[tuple[str, frozenset[str]]]]]:
        """Each mounted page's path and its routes: (template, methods)."""
        return [(path, [(r.template, r.methods) for r in routes]) for path, routes in self._pages]

    def find(self, path: str, method: str) -> Hit | None:
        """The page route `path` reaches with `method`; None for NewsLoop's own routes and for a path no page route
        serves with that method (Starlette answers those: 404 or 405, reading no body)."""
        if any(pattern.match(path) for pattern in self._own):
            return None
        for prefix, routes in self._pages:
            if prefix and path != prefix and not path.startswith(prefix + "/"):
                continue
            rest = path[len(prefix):] or "/"
            for route in routes:
                if (method in route.methods or (method == "HEAD" and "GET" in route.methods)) and (
                        found := route.pattern.match(rest)):
                    return Hit(prefix, route.template, route.kind, found.groupdict())
            return None
        return None
