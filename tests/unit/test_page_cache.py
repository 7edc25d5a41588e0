"""The page built once (web.server.page_cache): the same answer for every visitor reaching the server under the same
address, built again for another address or encoding, and never kept when it is not the same for everyone."""

from __future__ import annotations

import asyncio
from typing import Any

from web.server.page_cache import PageCache


class Page:
    """An inner app that counts the pages it builds; its answer names the host and encoding it was built for."""

    def __init__(self, status: int = 200, cookie: bool = False) -> None:
        self.built = 0
        self.status, self.cookie = status, cookie

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.built += 1
        headers = dict(scope["headers"])
        body = b"page for " + headers.get(b"host", b"") + b" " + headers.get(b"accept-encoding", b"")
        extra = [(b"set-cookie", b"user=x")] if self.cookie else []
        await send({"type": "http.response.start", "status": self.status, "headers": [(b"content-type", b"text/html"),
                                                                                     *extra]})
        await send({"type": "http.response.body", "body": body[:10], "more_body": True})
        await send({"type": "http.response.body", "body": body[10:]})


def get(app: PageCache, path: str = "/", host: str = "a.example", encoding: str = "gzip, br", query: bytes = b"",
        method: str = "GET") -> tuple[int, bytes]:
    scope = {"type": "http", "method": method, "path": path, "query_string": query, "scheme": "https",
             "headers": [(b"host", host.encode()), (b"accept-encoding", encoding.encode())]}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def test_the_page_is_built_once_per_address_and_encoding() -> None:
    inner = Page()
    cache = PageCache(inner)  # type: ignore[arg-type]
    first = get(cache)
    assert [get(cache) for _ in range(5)] == [first] * 5 and first == (200, b"page for a.example gzip, br")
    assert inner.built == 1
    assert get(cache, host="b.example")[1] == b"page for b.example gzip, br"
    assert get(cache, encoding="identity")[1] == b"page for a.example identity"
    assert inner.built == 3


def test_other_requests_and_answers_not_the_same_for_everyone_are_never_kept() -> None:
    inner = Page()
    cache = PageCache(inner)  # type: ignore[arg-type]
    for _ in range(2):
        get(cache, path="/theme.css")
        get(cache, query=b"deep_link=abc")
        get(cache, method="HEAD")
    assert inner.built == 6
    for page in (Page(cookie=True), Page(status=500)):
        cache = PageCache(page)  # type: ignore[arg-type]
        get(cache)
        get(cache)
        assert page.built == 2


def test_the_least_recent_address_is_dropped_beyond_capacity() -> None:
    inner = Page()
    cache = PageCache(inner, capacity=2)  # type: ignore[arg-type]
    for host in ("a", "b", "c", "a"):
        get(cache, host=host)
    assert inner.built == 4  # "a" was dropped when "c" came


def test_each_page_it_is_given_is_kept_apart_and_no_other_path() -> None:
    """The labellers' page at / and the maintainers' at /admin/: each built once, never one served for the other."""
    inner = Page()
    cache = PageCache(inner, paths=frozenset({"/", "/admin/"}))  # type: ignore[arg-type]
    assert [get(cache), get(cache, path="/admin/"), get(cache), get(cache, path="/admin/")]
    assert inner.built == 2
    get(cache, path="/admin/config")
    get(cache, path="/admin/config")
    assert inner.built == 4  # only the pages themselves are kept
