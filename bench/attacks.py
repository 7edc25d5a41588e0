"""Issue 23's attacks on a NewsLoop app, each from addresses of its own (X-Forwarded-For, as the host's proxy
writes it), for bench/soak.py. Every attack returns what the server answered it: status, seconds, bytes.

Run only against an app on loopback that you launched: these send hundreds of megabytes and floods of joins.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
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
    """The page's events by name (private ones included): fn_index for joins."""
    config = httpx.get(f"{url}config", timeout=30).json()
    return {dep["api_name"]: dep["id"] for dep in config["dependencies"] if dep.get("api_name")}


def call_event(http: httpx.Client, fn_index: int, data: list[Any], headers: dict[str, str]) -> tuple[int, Any]:
    """Join the queue and read the event's result as a script would: (join status, output data or None)."""
    session = uuid.uuid4().hex[:11]
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


def _timed(attack: str, send: Callable[[], httpx.Response]) -> Hit:
    started = time.perf_counter()
    try:
        response = send()
    except httpx.HTTPError:
        return Hit(attack, 0, time.perf_counter() - started, 0)
    return Hit(attack, response.status_code, time.perf_counter() - started, len(response.content))


def list_bomb(url: str, address: str, items: int) -> list[Hit]:
    """`{"text": [0, 0, ...]}`: `items` invalid items in one body under the body cap."""
    body = ('{"text": [' + ",".join(["0"] * items) + "]}").encode()
    headers = {"content-type": "application/json", "x-forwarded-for": address}
    name = f"list of {items:,} invalid items"
    return [_timed(name, lambda: httpx.post(f"{url}api/v1/classify", content=body, headers=headers, timeout=120))]


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


def chunked_body(url: str, address: str, total: int = 300 * 2**20, path: str = "/api/v1/classify") -> list[Hit]:
    """`total` bytes sent chunked, without Content-Length, stopping when the server answers or closes."""
    started = time.perf_counter()
    status, body, sent = send_chunked(url, path, total, address)
    name = f"{total // 2**20} MB chunked body ({sent // 2**20} MB sent)"
    return [Hit(name, status, time.perf_counter() - started, len(body))]


def queue_flood(url: str, address: str, joins: int = 600, seconds: float = 20.0) -> list[Hit]:
    """`joins` page event joins from one address within `seconds`, never reading their results."""
    fn_index = events(url)["classify"]
    pause = seconds / joins * 16  # 16 connections together keep the pace

    def join(_: int) -> Hit:
        body = {"data": ["A flood of one story"], "fn_index": fn_index, "session_hash": uuid.uuid4().hex[:11],
                "event_data": None, "trigger_id": None}
        hit = _timed("600 queue joins in 20 s", lambda: httpx.post(
            f"{url}gradio_api/queue/join", json=body, headers={"x-forwarded-for": address}, timeout=60))
        time.sleep(max(0.0, pause - hit.seconds))
        return hit

    with ThreadPoolExecutor(16) as pool:
        return list(pool.map(join, range(joins)))


def sign_in_guessing(url: str, guessers: list[str], seconds: float = 20.0) -> list[Hit]:
    """Wrong admin passwords from several addresses at once, kept up for `seconds`."""
    fn_index, deadline, hits = events(url)["login"], time.monotonic() + seconds, []
    lock = threading.Lock()

    def guess(address: str) -> None:
        with httpx.Client(base_url=url, timeout=60) as http:
            while time.monotonic() < deadline:
                started = time.perf_counter()
                status, output = call_event(http, fn_index, [f"guess {uuid.uuid4().hex[:8]}"], {"x-forwarded-for": address})
                # The page answers a refused sign-in in its message ("Wrong password.", "Too many failed...").
                signed_in = status == 200 and bool(output) and str(output[0]).startswith("Signing in")
                with lock:
                    hits.append(Hit("distributed sign-in guessing", status, time.perf_counter() - started,
                                    len(json.dumps(output)), refused=not signed_in))
                time.sleep(0.2)

    threads = [threading.Thread(target=guess, args=(a,), daemon=True) for a in guessers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=seconds + 120)
    return hits


def forwarded_lines(url: str, address: str, requests: int = 80) -> list[Hit]:
    """Two X-Forwarded-For lines: the client's own (a new address each time) before the proxy's."""
    hits = []
    for i in range(requests):
        lines = [("x-forwarded-for", f"10.66.{i // 250}.{i % 250 + 1}"), ("x-forwarded-for", address)]
        hits.append(_timed("two X-Forwarded-For lines", lambda lines=lines: httpx.post(
            f"{url}api/v1/classify", json={"text": "Shares fell."}, headers=lines, timeout=60)))
    refused = [h for h in hits if h.status == 429]
    return refused or hits[-1:]  # the refusals are the attack's answer; none would mean the lines hid the address


def remembered_predictions(url: str, clients: list[str], sessions: int = 300) -> list[Hit]:
    """Long texts classified from `sessions` fresh browsers (no cookie kept) spread over `clients` addresses
    (so the per-address limit does not stop them): what per-session memory must bound."""
    fn_index, text = events(url)["classify"], "A very long article about markets. " * 560  # ~20,000 characters
    hits = []
    with httpx.Client(base_url=url, timeout=60) as http:
        for i in range(sessions):
            started = time.perf_counter()
            status, _ = call_event(http, fn_index, [text], {"x-forwarded-for": clients[i % len(clients)]})
            http.cookies.clear()
            hits.append(Hit(f"{sessions} remembered predictions", status, time.perf_counter() - started, 0))
    return hits


def crowd_joins(url: str, event: str, clients: list[str], each: int, data: list[Any]) -> list[Hit]:
    """Every client joins `event` `each` times at once and never reads a result (a blind join): what the
    queue admits, and how fast it answers."""
    fn_index = events(url)[event]
    workers = min(128, len(clients) * each)
    # One client, its connections pooled: a fresh client per request spends the machine's CPU on TLS setup.
    http = httpx.Client(timeout=60, limits=httpx.Limits(max_connections=workers, max_keepalive_connections=workers))

    def join(client: str) -> Hit:
        body = {"data": data, "fn_index": fn_index, "session_hash": uuid.uuid4().hex[:11], "event_data": None,
                "trigger_id": None}
        started = time.perf_counter()
        try:
            response = http.post(f"{url}gradio_api/queue/join", json=body, headers={"x-forwarded-for": client})
        except httpx.HTTPError:
            return Hit(f"{event} crowd", 0, time.perf_counter() - started, 0)
        detail = "" if response.status_code == 200 else str(response.json().get("detail", ""))[:80]
        return Hit(f"{event} crowd", response.status_code, time.perf_counter() - started, len(response.content),
                   detail=detail)

    with http, ThreadPoolExecutor(workers) as pool:
        return list(pool.map(join, clients * each))


def main() -> None:
    """`python -m bench.attacks URL EVENT EACH CLIENT...`: `crowd_joins` from a process of its own (so the
    attacker's threads do not share the app's interpreter); prints one JSON line of the answers' statuses."""
    import sys

    url, event, each, *clients = sys.argv[1:]
    hits = crowd_joins(url, event, clients, int(each), ["A crowd of one story"])
    print(json.dumps({"statuses": [h.status for h in hits], "details": sorted({h.detail for h in hits})}))


if __name__ == "__main__":
    main()
