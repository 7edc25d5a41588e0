"""What /metrics costs a request: REST `POST /api/v1/classify` p50 with NEWSLOOP_METRICS on and off, side by side.

    python bench/metrics_overhead.py                 # two `python app.py` on fresh homes (the starter champion)
    python bench/metrics_overhead.py --rounds 8 --n 300

Two apps run at once, the same kind of process (`python app.py`, launched alike, bench.load.launch_app) but for
NEWSLOOP_METRICS. Rounds alternate between them (on, off, then off, on, ...), each round one REST client sending
`--n` texts one per request, back to back (bench.http_speed's client), so a drift of the machine meets both alike.
With metrics on, each request costs a counter and a histogram update and each prediction its form's tally
(web.server.metrics). Prints each round's p50, the p50 over all rounds of each app and their ratio, then one
scrape of the app with metrics on (its time and size), and a last `SUMMARY` line.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench import options
from bench.http_speed import Row, measured, process_cpu_s, sample_texts
from bench.http_speed import _rest as rest_client
from bench.load import launch_app, stop_app, wait_until_up

KINDS = ("on", "off")


def p50_ms(latencies_s: Sequence[float]) -> float:
    return float(np.percentile(latencies_s, 50) * 1000.0) if latencies_s else float("nan")


def scrape(url: str) -> tuple[float, int, int]:
    """(ms, bytes, status) of one GET /metrics."""
    import httpx

    start = time.perf_counter()
    response = httpx.get(f"{url}metrics", timeout=30)
    return (time.perf_counter() - start) * 1000.0, len(response.content), response.status_code


def main(argv: Sequence[str] | None = None) -> int:
    parser = options.parser(__doc__)
    parser.add_argument("--n", type=int, default=200, help="requests per round and app")
    parser.add_argument("--rounds", type=int, default=6, help="rounds per app, alternating which goes first")
    parser.add_argument("--startup-timeout", type=float, default=240.0)
    args = parser.parse_args(argv)
    texts = sample_texts(max(args.n, 64))[: args.n]
    with tempfile.TemporaryDirectory(prefix="newsloop-metrics-") as tmp:
        procs, urls = {}, {}
        try:
            for kind in KINDS:
                env = {"NEWSLOOP_METRICS": "true" if kind == "on" else "false", "NEWSLOOP_RETRAIN_INTERVAL_MIN": "0"}
                procs[kind], urls[kind] = launch_app(Path(tmp) / kind, 10**9, Path(tmp) / f"{kind}.log", env)
            for kind in KINDS:
                wait_until_up(urls[kind], procs[kind], args.startup_timeout)
                asyncio.run(rest_client(urls[kind], texts[:20], 1))  # warm up
            print(f"# metrics overhead: REST /api/v1/classify, 1 client, {args.n} texts a round, {args.rounds} rounds "
                  f"each, interleaved; {os.cpu_count()} cores; two `python app.py`, starter champion")
            rows: dict[str, list[Row]] = {kind: [] for kind in KINDS}
            for r in range(args.rounds):
                for kind in KINDS if r % 2 == 0 else KINDS[::-1]:
                    url, pid = urls[kind], procs[kind].pid
                    row = measured(f"metrics {kind}", 1, 1, pid, lambda url=url: asyncio.run(rest_client(url, texts, 1)))
                    rows[kind].append(row)
                    print(f"round {r + 1} metrics {kind:>3}: p50 {row.p(50):6.2f} ms  p95 {row.p(95):6.2f} ms  "
                          f"errors {row.errors}")
            scrape_ms, scrape_bytes, scrape_status = scrape(urls["on"])
            off_status = scrape(urls["off"])[2]
            cpu = {kind: process_cpu_s(procs[kind].pid) for kind in KINDS}
        except RuntimeError as exc:
            for kind in KINDS:
                log = Path(tmp) / f"{kind}.log"
                if log.is_file():
                    print(f"--- {kind} app log\n{log.read_text(errors='replace')[-2000:]}", file=sys.stderr)
            print(f"error: {exc}", file=sys.stderr)
            return 2
        finally:
            for proc in procs.values():
                stop_app(proc)
    overall = {kind: p50_ms([x for row in rows[kind] for x in row.latencies_s]) for kind in KINDS}
    medians = {kind: float(np.median([row.p(50) for row in rows[kind]])) for kind in KINDS}
    errors = sum(row.errors for kind in KINDS for row in rows[kind])
    print("| metrics | requests | p50 ms (all rounds) | median of round p50s ms | app CPU s (whole run) |")
    print("|---|---:|---:|---:|---:|")
    for kind in KINDS:
        requests = sum(row.requests for row in rows[kind])
        app_cpu = "n/a" if cpu[kind] is None else f"{cpu[kind]:.1f}"
        print(f"| {kind} | {requests} | {overall[kind]:.2f} | {medians[kind]:.2f} | {app_cpu} |")
    print(f"GET /metrics (on): {scrape_status}, {scrape_ms:.1f} ms, {scrape_bytes:,} bytes; (off): {off_status}")
    print(f"SUMMARY REST p50 metrics on {overall['on']:.2f} ms, off {overall['off']:.2f} ms, "
          f"ratio on/off {overall['on'] / overall['off']:.3f} (median of rounds: {medians['on'] / medians['off']:.3f}); "
          f"errors {errors}")
    return 0 if errors == 0 and scrape_status == 200 and off_status == 404 else 1


if __name__ == "__main__":
    sys.exit(main())
