"""Issue 23's attacks on a NewsLoop app, each from addresses of its own (X-Forwarded-For, as the host's proxy
writes it), for bench/soak.py. Every attack returns what the server answered it: status, seconds, bytes. The
hostile clients themselves (chunked bodies, blind joins, forged lines) are testkit.attackers, which the abuse
tests use too.

Run only against an app on loopback that you launched: these send hundreds of megabytes and floods of joins.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx

from testkit.attackers import (
    Hit,
    blind_join,
    call_event,
    events,
    list_bomb_body,
    page_of,
    send_chunked,
    two_forwarded_lines,
)


def _timed(attack: str, send: Callable[[], httpx.Response]) -> Hit:
    started = time.perf_counter()
    try:
        response = send()
    except httpx.HTTPError:
        return Hit(attack, 0, time.perf_counter() - started, 0)
    return Hit(attack, response.status_code, time.perf_counter() - started, len(response.content))


def list_bomb(url: str, address: str, items: int) -> list[Hit]:
    """`{"text": [0, 0, ...]}`: `items` invalid items in one body under the body cap."""
    body = list_bomb_body(items)
    headers = {"content-type": "application/json", "x-forwarded-for": address}
    name = f"list of {items:,} invalid items"
    return [_timed(name, lambda: httpx.post(f"{url}api/v1/classify", content=body, headers=headers, timeout=120))]


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
        hit = _timed("600 queue joins in 20 s", lambda: blind_join(url, address, fn_index, timeout=60))
        time.sleep(max(0.0, pause - hit.seconds))
        return hit

    with ThreadPoolExecutor(16) as pool:
        return list(pool.map(join, range(joins)))


def sign_in_guessing(url: str, guessers: list[str], seconds: float = 20.0) -> list[Hit]:
    """Wrong admin passwords from several addresses at once, kept up for `seconds`."""
    url = page_of(url, "login")  # the maintainers' page
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
        lines = two_forwarded_lines(f"10.66.{i // 250}.{i % 250 + 1}", address)
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
