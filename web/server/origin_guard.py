"""Cross-site requests: refused before they run, whatever cookie they carry.

On a Space the browser id cookie must be `SameSite=None` (the page lives in the Space's cross-site iframe), so
a browser attaches it to requests that any other site makes. A request counts as the app's own when its
`Origin` (or, lacking one, its `Referer`) names the host the request was sent to, the Space's host, a
configured public URL, or, for a request addressed to this machine itself, localhost. Every other origin is
foreign: it may read the public page, its assets and its config, and nothing else. It may not change state
(any method but GET/HEAD), open an event stream, reach the admin routes, or be answered a CORS preflight.
A request naming no origin at all (a script, `gradio_client`, curl) is not a browser acting for someone
else's cookie and passes; the anti-forgery token (`web.server.identity.FORM_HEADER`) covers admin events beyond this.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from web.server.identity import ASGIApp, Scope

log = logging.getLogger("newsloop.app")
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
_SAFE_METHODS = frozenset({"GET", "HEAD"})
# GET routes that return more than public data: event results, an admin's downloads, a session's pulse.
_PRIVATE_READS = ("/queue/data", "/heartbeat", "/admin/")
REFUSED = "Cross-site requests are refused: use NewsLoop's own page."


def _netloc(url: str) -> str:
    """`host[:port]` of an absolute http(s) URL, lower-case; "" for anything else ("null" included)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return ""
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return ""
    return parts.netloc.rsplit("@", 1)[-1].lower()


def _hostname(netloc: str) -> str:
    host = netloc.lower()
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


@dataclass(frozen=True)
class OriginPolicy:
    """Which origins are the app's own, beside the host each request was sent to."""

    public: frozenset[str] = frozenset()  # `host[:port]` of the Space and of configured public URLs

    @classmethod
    def from_urls(cls, urls: Iterable[str], space_host: str = "") -> OriginPolicy:
        """From the configured public URLs and a Space's host (SPACE_HOST, a bare host name)."""
        hosts = {_netloc(url if "://" in url else f"https://{url}") for url in [*urls, space_host] if url.strip()}
        return cls(frozenset(host for host in hosts if host))

    @property
    def cors_origins(self) -> list[str]:
        """The origins a CORS answer may name (https, as a public host is reached)."""
        return sorted(f"https://{host}" for host in self.public)

    def own(self, source: str, host: str) -> bool:
        """Whether a request from `source` (an Origin or Referer value) to `host` (its Host header) is the app's own."""
        origin = _netloc(source)
        if not origin:
            return False
        addressed = host.strip().lower()
        if origin == addressed or origin in self.public:
            return True
        # Local use: a page on localhost (any port, e.g. a dev server) may talk to an app reached on localhost.
        return _hostname(addressed) in LOCAL_HOSTS and _hostname(origin) in LOCAL_HOSTS

    def refuses(self, method: str, path: str, headers: dict[str, str]) -> bool:
        """Whether a request must be refused: it comes from a foreign page and is not a read of public data."""
        source = headers.get("origin") or headers.get("referer")
        if source is None:
            return False  # no browser page behind it (or a same-origin GET): nothing is forged
        if self.own(source, headers.get("host", "")):
            return False
        preflight = method == "OPTIONS" and "access-control-request-method" in headers
        return preflight or method not in _SAFE_METHODS or any(part in path for part in _PRIVATE_READS)


class OriginGuard:
    """ASGI middleware: a request `OriginPolicy.refuses` gets 403 at once, before any route, queue or body read."""

    def __init__(self, app: ASGIApp, policy: OriginPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope.get("headers", ())}
            if self.policy.refuses(scope.get("method", "GET"), scope.get("path", ""), headers):
                log.warning("refused a cross-site %s %s from %s (%s)", scope.get("method"), scope.get("path"),
                            (headers.get("origin") or headers.get("referer", ""))[:100],
                            "with NewsLoop's id cookie" if "newsloop_id=" in headers.get("cookie", "") else "no id cookie")
                body = json.dumps({"detail": REFUSED}).encode()
                await send({"type": "http.response.start", "status": 403, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    (b"vary", b"Origin")]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
