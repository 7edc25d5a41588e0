"""The pages themselves (`GET /` and `GET /admin/`: the paths it is given), each built once and sent to every visitor:
Gradio renders a page for each request (a deep copy of the whole configuration, its root URL rewritten, the API
description, the template), though it is the same for every visitor who reaches the server under the same address.

The cached answer is keyed by the path and by everything Gradio's page depends on for a server without Gradio sign-in
(the address the page is reached under: scheme, host, forwarded host and protocol, root path) and by whether the
browser takes gzip; only a 200 without cookies is kept. What is per visitor (the browser id and anti-forgery cookies,
the guards' checks) happens in the middleware outside this one, for every request. A page's configuration is fixed
once Gradio has mounted it, so nothing else can make a kept answer stale.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from web.server.identity import ASGIApp, Scope

CAPACITY = 16  # distinct (page, address it is reached under) pairs (a Space has one or two); least recent dropped
_KEYED_HEADERS = (b"host", b"x-forwarded-host", b"x-forwarded-proto")


class PageCache:
    """ASGI middleware: answers `GET` of one of `paths` (no query) from the first answer built for the same key."""

    def __init__(self, app: ASGIApp, capacity: int = CAPACITY, paths: frozenset[str] = frozenset({"/"})) -> None:
        self.app = app
        self.capacity = capacity
        self.paths = paths
        self._kept: OrderedDict[tuple[Any, ...], tuple[dict[str, Any], bytes]] = OrderedDict()

    def _key(self, scope: Scope) -> tuple[Any, ...] | None:
        if (scope["type"] != "http" or scope["method"] != "GET" or scope["path"] not in self.paths
                or scope.get("query_string")):
            return None
        headers: dict[bytes, bytes] = {}
        for name, value in scope.get("headers", []):
            headers.setdefault(name.lower(), value)
        gzip = b"gzip" in headers.get(b"accept-encoding", b"")
        return (scope["path"], scope.get("scheme"), scope.get("root_path", ""), gzip,
                *(headers.get(h) for h in _KEYED_HEADERS))

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        key = self._key(scope)
        if key is None:
            await self.app(scope, receive, send)
            return
        kept = self._kept.get(key)
        if kept is not None:
            self._kept.move_to_end(key)
            start, body = kept
            await send(start)
            await send({"type": "http.response.body", "body": body})
            return
        parts: list[bytes] = []
        started: dict[str, Any] = {}

        async def capture(message: Scope) -> None:
            if message["type"] == "http.response.start":
                started.update(message)
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))
            await send(message)

        await self.app(scope, receive, capture)
        cookies = any(name.lower() == b"set-cookie" for name, _ in started.get("headers", []))
        if started.get("status") == 200 and not cookies:
            self._kept[key] = (dict(started), b"".join(parts))
            while len(self._kept) > self.capacity:
                self._kept.popitem(last=False)
