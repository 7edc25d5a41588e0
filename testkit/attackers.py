"""Hostile clients on a NewsLoop app, shared by the abuse tests and bench/soak.py: oversized and chunked bodies,
blind queue joins and crowds of them, forged X-Forwarded-For lines, each from addresses of the attacker's choosing
(X-Forwarded-For, as the host's proxy writes it).

Run only against an app on loopback that you launched: these send hundreds of megabytes and floods of joins.

    python -m testkit.attackers URL EVENT EACH CLIENT...    # `crowd_joins` from a process of its own
    python -m testkit.attackers URL page EACH CLIENT...     # `crowd_loads`: fresh visitors opening the page
    python -m testkit.attackers URL flood ROUTE CHARS CONNECTIONS SECONDS CLIENT   # `flood`
    python -m testkit.attackers URL storm EVENT EACH SECONDS CLIENT...             # `crowd_joins`, spread out
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx


@dataclass(frozen=True)
class Hit:
    """One answer the attacker got."""

    attack: str
    status: int  # 0: no HTTP answer (connection closed before one)
    seconds: float
    nbytes: int
    refused: bool | None = None  # None: by the status (a 4xx); the page refuses some things in a 200's message
    detail: str = ""  # what a refusal said (crowd_joins)

    @property
    def was_refused(self) -> bool:
        return 400 <= self.status < 500 if self.refused is None else self.refused


def addresses(first_two: str) -> Iterator[str]:
    """Fresh client addresses in `first_two`.0.0/16 (e.g. "203.0"), as the host's proxy would report them."""
    for i in itertools.count():
        yield f"{first_two}.{i // 250 % 250}.{i % 250 + 1}"


def events(url: str) -> dict[str, int]:
    """The events of the page at `url` by name (private ones included): fn_index for joins."""
    config = httpx.get(f"{url}config", timeout=30).json()
    return {dep["api_name"]: dep["id"] for dep in config["dependencies"] if dep.get("api_name")}


def page_of(url: str, event: str) -> str:
    """The URL of the app's page that has `event`: the labellers' page (`url`) or the maintainers' (`url`admin/)."""
    for page in (url, f"{url}admin/"):
        if event in events(page):
            return page
    raise KeyError(f"no page of {url} has the event {event!r}")


def list_bomb_body(items: int) -> bytes:
    """`{"text": [0, 0, ...]}`: `items` invalid items in one JSON body."""
    return ('{"text": [' + ",".join(["0"] * items) + "]}").encode()


def two_forwarded_lines(client_line: str, proxy_line: str) -> list[tuple[str, str]]:
    """Two X-Forwarded-For lines: what the client wrote itself, then the proxy's (the client's real address)."""
    return [("x-forwarded-for", client_line), ("x-forwarded-for", proxy_line)]


def blind_join(url: str, client: str, fn_index: int, data: list[Any] | None = None, *, timeout: float = 60.0,
               http: httpx.Client | None = None) -> httpx.Response:
    """Join the page's queue for event `fn_index` from `client`, as a fresh tab (a new session hash), and never
    read the result; through `http` (a pooled client, its own timeout) when given."""
    body = {"data": ["A flood of one story"] if data is None else data, "fn_index": fn_index,
            "session_hash": uuid.uuid4().hex[:11], "event_data": None, "trigger_id": None}
    headers = {"x-forwarded-for": client}
    if http is not None:
        return http.post(f"{url}gradio_api/queue/join", json=body, headers=headers)
    return httpx.post(f"{url}gradio_api/queue/join", json=body, headers=headers, timeout=timeout)


def call_event(http: httpx.Client, fn_index: int, data: list[Any], headers: dict[str, str],
               session: str | None = None) -> tuple[int, Any]:
    """Join the queue and read the event's result as a script would, from a fresh tab or the tab `session`: (join
    status, output data or None)."""
    session = session or uuid.uuid4().hex[:11]
    body = {"data": data, "fn_index": fn_index, "session_hash": session, "event_data": None, "trigger_id": None}
    joined = http.post("gradio_api/queue/join", json=body, headers=headers)
    if joined.status_code != 200:
        return joined.status_code, None
    with http.stream("GET", "gradio_api/queue/data", params={"session_hash": session}, headers=headers) as stream:
        for line in stream.iter_lines():
            if line.startswith("data:"):
                message = json.loads(line[5:])
                if message.get("msg") == "process_completed":
                    return 200, (message.get("output") or {}).get("data")
    return 200, None


def send_chunked(url: str, path: str, total: int, forwarded_for: str, timeout_s: float = 60.0) -> tuple[int, bytes, int]:
    """POST `total` bytes with chunked transfer encoding (no Content-Length) over a raw socket, stopping as
    soon as the server answers or closes; returns (status, 0 when none came; body; bytes sent)."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=timeout_s)
    head = (f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
            f"Transfer-Encoding: chunked\r\nX-Forwarded-For: {forwarded_for}\r\n\r\n")
    chunk = b"%x\r\n%s\r\n" % (1 << 20, b"[" * (1 << 20))
    sent, answer, closed, pending = 0, b"", False, b""
    try:
        sock.sendall(head.encode())
        sock.setblocking(False)
        while sent < total and not answer and not closed:
            with contextlib.suppress(BlockingIOError):
                data = sock.recv(65536)
                answer, closed = answer + data, not data
            pending = pending or chunk
            try:
                written = sock.send(pending)
                sent, pending = sent + written, pending[written:]
            except BlockingIOError:
                time.sleep(0.001)
            except (BrokenPipeError, ConnectionResetError):
                closed = True
        sock.settimeout(10)
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            data = sock.recv(65536)
            if not data:
                break
            answer += data
    except (ConnectionResetError, TimeoutError, OSError):
        pass
    finally:
        sock.close()
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else 0
    head_end = answer.find(b"\r\n\r\n")
    return status, answer[head_end + 4:] if head_end >= 0 else b"", sent


FLOOD_ROUTES = ("join", "call")  # /gradio_api/queue/join (a fresh tab each time), /gradio_api/call/classify


def flood(url: str, route: str, chars: int, connections: int, seconds: float, client: str) -> dict[str, Any]:
    """Classifications of a `chars`-character text from `client` for `seconds`, as fast as `connections`
    connections allow, by `route` (FLOOD_ROUTES), never reading a result: the statuses answered, and the refusals'
    words (the first 80 characters of each kind)."""
    fn_index, text = events(url)["classify"], ("Shares fell sharply. " * (chars // 21 + 1))[:chars]
    body = json.dumps({"data": [text]}).encode()
    deadline, statuses, details = time.monotonic() + seconds, [], set()
    headers = {"x-forwarded-for": client, "content-type": "application/json"}

    def send(http: httpx.Client) -> None:
        while time.monotonic() < deadline:
            try:
                if route == "call":
                    response = http.post("gradio_api/call/classify", content=body, headers=headers)
                else:
                    joined = {"data": [text], "fn_index": fn_index, "session_hash": uuid.uuid4().hex[:11]}
                    response = http.post("gradio_api/queue/join", content=json.dumps(joined).encode(), headers=headers)
            except httpx.HTTPError:
                statuses.append(0)
                continue
            statuses.append(response.status_code)
            if response.status_code != 200:
                with contextlib.suppress(ValueError, AttributeError):
                    details.add(str(response.json().get("detail", ""))[:80])

    clients = [httpx.Client(base_url=url, timeout=60) for _ in range(connections)]
    with ThreadPoolExecutor(connections) as pool:
        list(pool.map(send, clients))
    for http in clients:
        http.close()
    return {"statuses": statuses, "details": sorted(details)}


def crowd_joins(url: str, event: str, clients: list[str], each: int, data: list[Any],
                spread_s: float = 0.0) -> list[Hit]:
    """Every client joins `event` `each` times, each from a fresh tab, at once (or spread evenly over `spread_s`
    seconds), and never reads a result (a blind join): what the queue admits, and how fast it answers."""
    url = page_of(url, event)
    fn_index = events(url)[event]
    workers = min(128, len(clients) * each)
    # One client, its connections pooled: a fresh client per request spends the machine's CPU on TLS setup.
    http = httpx.Client(timeout=60, limits=httpx.Limits(max_connections=workers, max_keepalive_connections=workers))

    joins, start = clients * each, time.monotonic()

    def join(numbered: tuple[int, str]) -> Hit:
        number, client = numbered
        time.sleep(max(0.0, start + number * spread_s / len(joins) - time.monotonic()))
        started = time.perf_counter()
        try:
            response = blind_join(url, client, fn_index, data, http=http)
        except httpx.HTTPError:
            return Hit(f"{event} crowd", 0, time.perf_counter() - started, 0)
        detail = "" if response.status_code == 200 else str(response.json().get("detail", ""))[:80]
        return Hit(f"{event} crowd", response.status_code, time.perf_counter() - started, len(response.content),
                   detail=detail)

    with http, ThreadPoolExecutor(workers) as pool:
        return list(pool.map(join, enumerate(joins)))


def unlisted_flood(store: Any, rows: int, *, people: int = 40, seed: int = 0) -> None:
    """`rows` "None of these" answers written straight into `store`'s database, past its caps (what years of use,
    or a flood from before the caps, leaves waiting): from `people` anonymous addresses, a third named "Spam", the
    texts ~400 characters, news words among made-up ones, so most are unlike the others (many groups to list)."""
    import random

    import sqlalchemy as sa

    from core.text import text_hash
    from feedback.database.db import iso_time
    from feedback.database.tables import unlisted

    rng = random.Random(seed)
    words = [w for line in _WORDS.split("\n") for w in line.split()]
    batch = []
    for i in range(rows):
        text = " ".join(rng.choice(words) if k % 3 else f"x{rng.randrange(20_000)}" for k in range(60))
        batch.append({"text": text, "text_hash": text_hash(text), "annotator": f"anon:flood{i}",
                      "address": f"addr:{i % people}", "verified": 0, "kind": "correct",
                      "name": "Spam" if i % 3 == 0 else None, "taxonomy_version": 1,
                      "created_at": iso_time(time.time()), "status": "ok"})
    with store.database.write() as db:
        for start in range(0, rows, 1000):
            db.execute(sa.insert(unlisted), batch[start:start + 1000])


_WORDS = """markets shares profit bank rates inflation minister election parliament vote summit treaty border
league match striker goal coach season final cup injury transfer chip software launch phone network satellite
study vaccine clinic hospital patients flu outbreak weather storm flood harvest drought festival album film
court judge police strike union workers fuel prices oil gas energy climate emissions school students teachers"""


PAGE_LOAD = ("", "theme.css")  # what a fresh visitor's browser fetches that the app makes (bench.page_weight's PATHS)
CROWD = "page"  # the EVENT that makes `main` run `crowd_loads`


def crowd_loads(url: str, clients: list[str], each: int, spread_s: float = 10.0) -> list[Hit]:
    """Every client opens the page `each` times as a fresh visitor (no cookies, a browser's gzip), the loads spread
    evenly over `spread_s` seconds (a shared link's crowd): each one's status and seconds (its page and theme)."""
    visits = clients * each
    gap = spread_s / max(len(visits), 1)
    start = time.monotonic()

    def visit(numbered: tuple[int, str]) -> Hit:
        number, client = numbered
        time.sleep(max(0.0, start + number * gap - time.monotonic()))
        began, size, status = time.perf_counter(), 0, 0
        headers = {"x-forwarded-for": client, "accept-encoding": "gzip", "accept": "text/html,*/*"}
        try:
            with httpx.Client(timeout=60) as http:  # a new connection: a fresh visitor's
                for path in PAGE_LOAD:
                    response = http.get(f"{url}{path}", headers=headers)
                    status, size = response.status_code, size + len(response.content)
                    if status != 200:
                        break
        except httpx.HTTPError:
            status = 0
        return Hit("page crowd", status, time.perf_counter() - began, size)

    with ThreadPoolExecutor(32) as pool:
        return list(pool.map(visit, enumerate(visits)))


def main() -> None:
    """`python -m testkit.attackers URL EVENT EACH CLIENT...`: `crowd_joins` from a process of its own (so the
    attacker's threads do not share the app's interpreter), or `crowd_loads` for EVENT `page`; prints one JSON line
    of the answers' statuses (and, for loads, the slowest load's seconds)."""
    import sys

    if sys.argv[2] == "flood":
        url, _, route, chars, connections, seconds, client = sys.argv[1:]
        print(json.dumps(flood(url, route, int(chars), int(connections), float(seconds), client)))
        return
    if sys.argv[2] == "storm":
        url, _, event, each, seconds, *clients = sys.argv[1:]
        hits = crowd_joins(url, event, clients, int(each), [f"guess {uuid.uuid4().hex[:8]}"], float(seconds))
        print(json.dumps({"statuses": [h.status for h in hits], "details": sorted({h.detail for h in hits})}))
        return
    url, event, each, *clients = sys.argv[1:]
    if event == CROWD:
        loads = crowd_loads(url, clients, int(each))
        print(json.dumps({"statuses": [h.status for h in loads], "details": [],
                          "slowest_s": max(h.seconds for h in loads)}))
        return
    hits = crowd_joins(url, event, clients, int(each), ["A crowd of one story"])
    print(json.dumps({"statuses": [h.status for h in hits], "details": sorted({h.detail for h in hits})}))


if __name__ == "__main__":
    main()
