"""End-to-end speed through real HTTP: the page's `/classify` (gradio_client) and `POST /api/v1/classify`, side by side.

    python bench/http_speed.py                                   # launches `python app.py` on a fresh home (the starter)
    python bench/http_speed.py --url http://127.0.0.1:7860/ --pid <app pid>   # an app already running on loopback

One run measures, in this order, each alone: a single gradio_client calling `/classify` back to back; C
concurrent gradio_clients; one REST client (keep-alive, one text per request); C concurrent REST clients
(httpx async, one text per request: the server's micro-batcher joins them); C REST clients sending lists of
`--list-size` texts. Texts are validation texts of NEWSLOOP_DATA (the seed set if unavailable).

The load generator runs in this process and its CPU is reported apart from the app's (read from
/proc/<pid>/stat), with the CPU other processes took meanwhile: on 2 cores a heavy client would be the
bottleneck, so its share says whether the figures are the app's. The app is launched with a classify limit
high enough not to refuse the benchmark. Prints a table and a last `SUMMARY` line.

Named `http_speed.py`, not `http.py`: run as a script, a bench/http.py would hide the standard library's
`http` module from every script in bench/ (the script's folder leads sys.path).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench import options
from bench.common import CpuWatch, contention_note, share_cell
from bench.load import LOOPBACK, launch_app, stop_app, wait_until_up

TARGET_REST_P50_MS = 10.0
TARGET_TEXTS_PER_S = 200.0
API = "api/v1/classify"


@dataclass
class Row:
    name: str
    clients: int
    texts_per_request: int
    latencies_s: list[float]
    seconds: float
    errors: int
    client_cpu_s: float  # this process (the load generator)
    app_cpu_s: float | None  # the app process, when its pid is known
    other_share: float | None

    @property
    def requests(self) -> int:
        return len(self.latencies_s)

    def p(self, q: float) -> float:
        return float(np.percentile(self.latencies_s, q) * 1000.0) if self.latencies_s else float("nan")

    @property
    def texts_per_s(self) -> float:
        return self.requests * self.texts_per_request / self.seconds if self.seconds else 0.0


def process_cpu_s(pid: int | None) -> float | None:
    """User + system CPU seconds of `pid` (its threads included) from /proc, or None."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_s() -> float:
    times = os.times()
    return times.user + times.system


def measured(name: str, clients: int, per_request: int, pid: int | None, run: Callable[[], tuple[list[float], int]]) -> Row:
    watch, own, app = CpuWatch(), own_cpu_s(), process_cpu_s(pid)
    start = time.perf_counter()
    latencies, errors = run()
    seconds = time.perf_counter() - start
    app_end = process_cpu_s(pid)
    app_s = None if app is None or app_end is None else app_end - app
    other = watch.share()  # counts the app too: it is not a child this process has waited for
    if other is not None and app_s is not None:
        other = max(0.0, other - app_s / (seconds * (os.cpu_count() or 1)))
    return Row(name, clients, per_request, latencies, seconds, errors, own_cpu_s() - own, app_s, other)


# gradio_client on the page's /classify --------------------------------------------------------------
def gradio_rows(url: str, texts: Sequence[str], n: int, clients: int, pid: int | None) -> list[Row]:
    from gradio_client import Client

    def connect() -> Client:
        return Client(url, verbose=False, download_files=False, analytics_enabled=False)

    def loop(client: Client, mine: Sequence[str], out: list[float]) -> int:
        errors = 0
        for text in mine:
            start = time.perf_counter()
            try:
                client.predict(text, api_name="/classify")
                out.append(time.perf_counter() - start)
            except Exception:
                errors += 1
        return errors

    single = connect()
    loop(single, texts[:5], [])  # warm up
    rows = []

    def one() -> tuple[list[float], int]:
        out: list[float] = []
        return out, loop(single, texts[:n], out)

    rows.append(measured("page /classify (gradio_client)", 1, 1, pid, one))
    single.close()
    pool = [connect() for _ in range(clients)]

    def many() -> tuple[list[float], int]:
        outs: list[list[float]] = [[] for _ in pool]
        errors = [0] * len(pool)
        per = max(1, n // len(pool))

        def work(i: int) -> None:
            errors[i] = loop(pool[i], texts[i * per % len(texts):][:per] or texts[:per], outs[i])

        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(pool))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [x for out in outs for x in out], sum(errors)

    rows.append(measured("page /classify (gradio_client)", clients, 1, pid, many))
    for client in pool:
        client.close()
    return rows


# REST with httpx ------------------------------------------------------------------------------------
async def _rest(url: str, batches: Sequence[list[str] | str], clients: int) -> tuple[list[float], int]:
    import httpx

    queue: asyncio.Queue[list[str] | str] = asyncio.Queue()
    for body in batches:
        queue.put_nowait(body)
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:

        async def worker() -> None:
            nonlocal errors
            while not queue.empty():
                body = queue.get_nowait()
                start = time.perf_counter()
                try:
                    response = await client.post(API, json={"text": body})
                    ok = response.status_code == 200
                except httpx.HTTPError:
                    ok = False
                if ok:
                    latencies.append(time.perf_counter() - start)
                else:
                    errors += 1

        await asyncio.gather(*(worker() for _ in range(clients)))
    return latencies, errors


def rest_rows(url: str, texts: Sequence[str], n: int, clients: int, list_size: int, pid: int | None) -> list[Row]:
    asyncio.run(_rest(url, list(texts[:10]), 1))  # warm up
    singles = list(texts[:n])
    rows = [
        measured("REST /api/v1/classify", 1, 1, pid, lambda: asyncio.run(_rest(url, singles, 1))),
        measured("REST /api/v1/classify", clients, 1, pid, lambda: asyncio.run(_rest(url, singles * 2, clients))),
    ]
    lists = [list(texts[i: i + list_size]) for i in range(0, len(texts) - list_size + 1, list_size)]
    lists = (lists * (1 + 3 * n // max(1, len(lists) * list_size)))[: max(clients * 4, 3 * n // list_size)]
    rows.append(measured("REST /api/v1/classify", clients, list_size, pid, lambda: asyncio.run(_rest(url, lists, clients))))
    return rows


# Report ---------------------------------------------------------------------------------------------
def table(rows: list[Row]) -> str:
    lines = [
        "| route | clients | texts/request | requests | p50 ms | p95 ms | requests/s | texts/s | errors "
        "| app CPU | load-generator CPU | others' CPU |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        app = "n/a" if r.app_cpu_s is None else f"{r.app_cpu_s / r.seconds * 100:.0f}%"
        lines.append(
            f"| {r.name} | {r.clients} | {r.texts_per_request} | {r.requests} | {r.p(50):.1f} | {r.p(95):.1f} "
            f"| {r.requests / r.seconds:.1f} | {r.texts_per_s:.0f} | {r.errors} | {app} "
            f"| {r.client_cpu_s / r.seconds * 100:.0f}% | {share_cell(r.other_share)} |"
        )
    return "\n".join(lines) + "\n(CPU columns: share of one core, averaged over the row; 200% = both cores of 2)"


def summary(rows: list[Row]) -> str:
    page = [r for r in rows if r.name.startswith("page")]
    rest = [r for r in rows if r.name.startswith("REST")]
    parts = []
    if page:
        parts.append(f"page /classify p50 {page[0].p(50):.1f} ms single, {page[-1].requests / page[-1].seconds:.1f} req/s "
                     f"with {page[-1].clients} clients")
    if rest:
        single = rest[0].p(50)
        best = max(rest[1:] or rest, key=lambda r: r.texts_per_s)
        one_text = rest[1] if len(rest) > 1 else rest[0]
        parts.append(f"REST p50 {single:.1f} ms single (<= {TARGET_REST_P50_MS:g}: {'yes' if single <= TARGET_REST_P50_MS else 'no'})")
        parts.append(f"REST {one_text.texts_per_s:.0f} texts/s with {one_text.clients} clients x 1 text, "
                     f"{best.texts_per_s:.0f} texts/s best (>= {TARGET_TEXTS_PER_S:g}: "
                     f"{'yes' if best.texts_per_s >= TARGET_TEXTS_PER_S else 'no'})")
        parts.append(f"REST/page single p50 speed-up {page[0].p(50) / single:.1f}x" if page else "")
    return "SUMMARY " + "; ".join(p for p in parts if p)


def sample_texts(count: int) -> list[str]:
    from core.data import load_corpus_or_seed
    from core.settings.config import load_settings

    settings = load_settings()
    corpus = load_corpus_or_seed(settings.data.source, settings.data.val_fraction, settings.data.use_extra)
    texts = [ex.text for ex in corpus.validation] or [ex.text for ex in corpus.train]
    rng = np.random.default_rng(0)
    picked = [texts[i] for i in rng.permutation(len(texts))]
    return (picked * (1 + count // len(picked)))[:count]


def main(argv: Sequence[str] | None = None) -> int:
    parser = options.parser(__doc__)
    parser.add_argument("--url", help="an app already running on loopback; default: launch `python app.py`")
    parser.add_argument("--pid", type=int, help="the running app's process id, for its CPU figures (with --url)")
    parser.add_argument("--n", type=int, default=300, help="requests per single-client row")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients")
    parser.add_argument("--list-size", type=int, default=16, help="texts per request in the list row")
    parser.add_argument("--skip-page", action="store_true", help="REST rows only")
    parser.add_argument("--startup-timeout", type=float, default=180.0)
    args = parser.parse_args(argv)
    from urllib.parse import urlsplit

    if args.url and urlsplit(args.url).hostname not in LOOPBACK:
        parser.error("--url must be on loopback: this script sends heavy load")
    texts = sample_texts(max(args.n * 2, 512))
    proc, pid, url = None, args.pid, args.url
    with tempfile.TemporaryDirectory(prefix="newsloop-http-") as tmp:
        try:
            if url is None:
                home = Path(tmp) / "home"
                proc, url = launch_app(home, 10**9, Path(tmp) / "app.log")
                pid = proc.pid
            wait_until_up(url, proc, args.startup_timeout)
            run_watch, run_start, app_start = CpuWatch(), time.perf_counter(), process_cpu_s(pid)
            print(f"# HTTP benchmark: {url} ({'launched python app.py, starter champion' if proc else 'running app'}); "
                  f"{os.cpu_count()} cores; {len(texts)} texts; {args.clients} concurrent clients")
            rows = [] if args.skip_page else gradio_rows(url, texts, args.n, args.clients, pid)
            rows += rest_rows(url.rstrip("/") + "/", texts, args.n, args.clients, args.list_size, pid)
            others = run_watch.share()
            app_end = process_cpu_s(pid)
            if others is not None and app_start is not None and app_end is not None:
                others = max(0.0, others - (app_end - app_start) / ((time.perf_counter() - run_start) * (os.cpu_count() or 1)))
        except RuntimeError as exc:
            log = Path(tmp) / "app.log"
            print(f"error: {exc}\n{log.read_text(errors='replace')[-3000:] if log.is_file() else ''}", file=sys.stderr)
            return 2
        finally:
            if proc is not None:
                stop_app(proc)
    print(table(rows))
    print(contention_note(others, "the run (the app's own CPU not counted)"))
    print(summary(rows))
    return 0 if all(r.errors == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
