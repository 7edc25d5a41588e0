"""Issue 23's attacks on a NewsLoop app, each from addresses of its own (X-Forwarded-For, as the host's proxy
writes it), for bench/soak.py. Every attack returns what the server answered it: status, seconds, bytes. The
hostile clients themselves (chunked bodies, blind joins, forged lines) are testkit.attackers, which the abuse
tests use too.

Run as a script, it measures issue 60's attacks on `python app.py` launched as a Space (a fresh home, the
shipped starter) and prints the figures docs/results/attacks.md quotes:

    python -m bench.attacks                  # 15 s per flood, 5 sign-in storms, 12,000 "None of these" rows
    python -m bench.attacks --seconds 5 --runs 2 --rows 3000   # a quick look

For each flood (`/gradio_api/call/classify` from one address on 32 and 64 connections; 2.1 MB classifications
through `/queue/join` and `/call` on 8): an honest visitor's page classifications meanwhile (p50 and max, one
tab on its own address) and what the attacker was answered. For each sign-in storm (128 wrong passwords on the
maintainers' page from 8 addresses over ~5 s): the visitor's p50/max and how long the real admin, on its own
address, took to sign in (opening the page, the password, the ticket). Then the "Answers with no topic" panel
with ROWS rows waiting: how long it took to open and how much the app's memory grew, and what a labeller's new
"None of these" is answered. The attackers run in processes of their own, the visitor in this one.

Run only against an app on loopback that you launched: these send hundreds of megabytes and floods of joins.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx

from bench import options
from core.settings.config import PROJECT_ROOT
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


# Issue 60: the figures -------------------------------------------------------------------------------------------
VISITOR_TEXT = "The striker scored twice in the cup final."


def page_visitor(url: str, address: str, stop: threading.Event, times: list[float], pace_s: float = 0.5) -> None:
    """One honest tab on its own address: classify through the page (join, then its stream) until `stop`, every
    `pace_s` seconds (under the Space's 60 a minute); each classification's seconds in `times`, a failed one as
    infinity (counted apart)."""
    with httpx.Client(base_url=url, timeout=60) as http:
        headers = {"x-forwarded-for": address}
        headers["cookie"] = http.get("", headers=headers).headers["set-cookie"].split(";", 1)[0]
        fn_index, session = events(url)["classify"], uuid.uuid4().hex[:11]
        call_event(http, fn_index, ["Warm-up"], headers, session)
        while not stop.is_set():
            started = time.perf_counter()
            status, output = call_event(http, fn_index, [VISITOR_TEXT], headers, session)
            took = time.perf_counter() - started
            times.append(took if status == 200 and output else float("inf"))
            stop.wait(max(0.0, pace_s - took))


def admin_sign_in(url: str, address: str, password: str) -> tuple[float, float, str]:
    """The real admin on its own address: opens the maintainers' page (its page and its first event, which opens its
    session), then signs in: the password, then the ticket redeemed (as the page's script does). (seconds to open
    the page, seconds from the password to signed in, "signed in" or what refused it)."""
    admin_url, started = f"{url}admin/", time.perf_counter()
    with httpx.Client(base_url=admin_url, timeout=60) as http:
        headers, session, found = {"x-forwarded-for": address}, uuid.uuid4().hex[:11], events(admin_url)
        headers["cookie"] = http.get("", headers=headers).headers["set-cookie"].split(";", 1)[0]
        status, _ = call_event(http, found["restore"], [], headers, session)
        opened, started = time.perf_counter() - started, time.perf_counter()
        if status != 200:
            return opened, 0.0, f"refused opening the page: {status}"
        status, output = call_event(http, found["login"], [password], headers, session)
        if status != 200 or not output or not output[-1]:
            return opened, time.perf_counter() - started, f"refused: {status} {output}"
        redeemed = http.post(f"{url}admin/session", json={"ticket": output[-1]}, headers=headers)
        outcome = "signed in" if redeemed.status_code == 200 else f"ticket refused: {redeemed.status_code}"
    return opened, time.perf_counter() - started, outcome


def attacker(url: str, *args: str) -> subprocess.Popen[str]:
    """`python -m testkit.attackers URL ARGS...` in a process of its own (its threads never hold this one's GIL)."""
    return subprocess.Popen([sys.executable, "-m", "testkit.attackers", url, *args], cwd=PROJECT_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def answered(proc: subprocess.Popen[str]) -> str:
    out, _ = proc.communicate(timeout=300)
    answer = json.loads(out.strip().splitlines()[-1])
    refusals = "; ".join(answer["details"])[:300]
    return f"{dict(sorted(Counter(answer['statuses']).items()))}{f' ({refusals})' if refusals else ''}"


def figures(times: list[float]) -> str:
    from bench.load import percentile

    done = [t for t in times if t != float("inf")]
    failed = f", {len(times) - len(done)} FAILED" if len(done) < len(times) else ""
    if not done:
        return f"no classification finished{failed}"
    return f"p50 {1000 * percentile(times, 50):.0f} ms, max {1000 * max(done):.0f} ms ({len(times)} classifications{failed})"


def while_visited(url: str, address: str, run: Callable[[], object]) -> tuple[object, list[float]]:
    """`run()` while an honest visitor classifies on the page; its result and the visitor's seconds."""
    stop, times = threading.Event(), []
    visitor = threading.Thread(target=page_visitor, args=(url, address, stop, times), daemon=True)
    visitor.start()
    time.sleep(0.5)
    try:
        result = run()
    finally:
        stop.set()
        visitor.join(timeout=120)
    return result, times


def panel_open(url: str, pid: int, address: str, password: str) -> tuple[float, float, float, str]:
    """Sign in and open the "Answers with no topic" panel: (seconds, app RSS before, its most while opening, the
    panel's first line)."""
    from bench.soak import rss_mb

    admin_url = f"{url}admin/"
    with httpx.Client(base_url=admin_url, timeout=300) as http:
        headers = {"x-forwarded-for": address}
        headers["cookie"] = http.get("", headers=headers).headers["set-cookie"].split(";", 1)[0]
        session = uuid.uuid4().hex[:11]
        _, output = call_event(http, events(admin_url)["login"], [password], headers, session)
        redeemed = http.post(f"{url}admin/session", json={"ticket": output[-1]}, headers=headers)
        for header in redeemed.headers.get_list("set-cookie"):
            name, _, value = header.split(";", 1)[0].partition("=")
            if name == "newsloop_id":
                headers["cookie"] = f"newsloop_id={value}"
            elif name == "newsloop_form":
                headers["x-newsloop-form"] = value
        before, peak, done = rss_mb(pid), [0.0], threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], rss_mb(pid))
                time.sleep(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        started = time.perf_counter()
        _, shown = call_event(http, events(admin_url)["show"], [], headers, session)
        took = time.perf_counter() - started
        done.set()
        sampler.join()
    return took, before, max(peak[0], rss_mb(pid)), str((shown or ["(no answer)"])[0])


def none_of_these(url: str, address: str) -> str:
    """A labeller's "None of these" on a text they classified: what the page answers."""
    with httpx.Client(base_url=url, timeout=60) as http:
        headers = {"x-forwarded-for": address}
        headers["cookie"] = http.get("", headers=headers).headers["set-cookie"].split(";", 1)[0]
        session, found = uuid.uuid4().hex[:11], events(url)
        _, (_, _, shown) = call_event(http, found["classify"], [VISITOR_TEXT], headers, session)
        _, answer = call_event(http, found["handler"], ["|none|Sport news", shown, VISITOR_TEXT], headers, session)
    return str((answer or ["(no answer)"])[0])


def main(argv: list[str] | None = None) -> int:
    import shutil
    import tempfile
    from pathlib import Path

    from bench.load import stop_app, wait_until_up
    from bench.soak import PASSWORD, launch
    from feedback.store import FeedbackStore
    from testkit.attackers import addresses, unlisted_flood

    parser = options.parser(__doc__, prog="python -m bench.attacks")
    parser.add_argument("--seconds", type=float, default=15.0, help="seconds each flood lasts (default 15)")
    parser.add_argument("--runs", type=int, default=5, help="sign-in storms (default 5)")
    parser.add_argument("--rows", type=int, default=12_000, help='"None of these" rows waiting (default 12,000)')
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="newsloop-attacks-"))
    proc, url = launch(work / "home", work / "app.log")
    fresh = addresses("203.0")
    print(f"app.py pid {proc.pid} at {url} (log {work / 'app.log'}), {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}")
    try:
        wait_until_up(url, proc, 300)
        _, idle = while_visited(url, next(fresh), lambda: time.sleep(args.seconds))
        print(f"idle: the visitor's page classifications {figures(idle)}")
        floods = [("/gradio_api/call/classify flood, 32 connections", "call", 40, 32),
                  ("/gradio_api/call/classify flood, 64 connections", "call", 40, 64),
                  ("2.1 MB classifications through /queue/join, 8 connections", "join", 2_100_000, 8),
                  ("2.1 MB classifications through /gradio_api/call, 8 connections", "call", 2_100_000, 8)]
        for name, route, chars, connections in floods:
            flooder = next(fresh)
            got, times = while_visited(url, next(fresh), lambda route=route, chars=chars, n=connections, a=flooder:
                                       answered(attacker(url, "flood", route, str(chars), str(n), str(args.seconds), a)))
            print(f"{name}, {args.seconds:.0f} s: the visitor {figures(times)}; the attacker got {got}")
        for run in range(1, args.runs + 1):
            guessers = [next(fresh) for _ in range(8)]

            def storm(guessers: list[str] = guessers) -> tuple[str, tuple[float, float, str]]:
                crowd = attacker(url, "storm", "login", "16", "5", *guessers)
                time.sleep(2.0)  # into the storm (the attacker's process starts in about a second)
                admin = admin_sign_in(url, next(fresh), PASSWORD)
                return answered(crowd), admin

            (got, (opened, took, outcome)), times = while_visited(url, next(fresh), storm)  # type: ignore[misc]
            print(f"sign-in storm {run} (128 wrong passwords from 8 addresses over 5 s: {got}): the visitor "
                  f"{figures(times)}; the real admin opened the page in {opened:.2f} s, then {outcome} in "
                  f"{took:.2f} s")
        store = FeedbackStore(work / "home" / "feedback.db")
        unlisted_flood(store, args.rows)
        store.close()
        took, before, peak, first = panel_open(url, proc.pid, next(fresh), PASSWORD)
        print(f'"Answers with no topic" with {args.rows:,} rows waiting: opened in {took:.2f} s; app RSS {before:.0f} '
              f"-> {peak:.0f} MB at most (+{peak - before:.0f} MB); the panel says: {first[:160]}")
        print(f'a new "None of these" meanwhile: {none_of_these(url, next(fresh))[:200]}')
        return 0
    finally:
        stop_app(proc)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
