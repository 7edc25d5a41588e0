"""Load test: concurrent gradio_client users classifying (~80%) and correcting (~20%) on a loopback NewsLoop.

    .venv/bin/python bench/load.py --home /tmp/nl_load                 # launches `python app.py` on a free port
    .venv/bin/python bench/load.py --url http://127.0.0.1:7860/ --home "$NEWSLOOP_HOME"  # an app already running

Without --url the script starts `python app.py` itself with NEWSLOOP_HOME=--home (which must already
have a champion: the app would otherwise spend many minutes training one), with both per-minute limits
set to --limit, and stops it at the end. The home's feedback.db receives rows, so point --home at a
copy. Every feedback text is unique (tagged with a run id, client and request number), so the store's
dedupe of a client's repeated answer does not hide rows; rows found are counted by that run id.

All loopback clients share one rate-limit key (the address 127.0.0.1), so --limit is the limit for the
whole run: refusals ("Too many requests", "Not saved: too many answers") are counted apart from errors.
Exit status 0 when there were no errors or unexpected answers and every saved answer is in the database.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from bench import options
from core.host.net import free_port
from core.labels import LABELS
from core.registry.versions import ModelRegistry
from core.settings.config import PROJECT_ROOT, load_settings

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
MAX_CLIENTS = 256
MAX_REQUESTS = 10_000
ARTICLES = [
    "Ceasefire talks resume as envoys arrive in the capital after months of fighting in the north.",
    "Late goal sends the champions through to the semi-finals and a meeting with their oldest rivals.",
    "Shares slide as the retailer cuts its profit forecast, blaming weaker holiday spending.",
    "New chip promises longer battery life for laptops, using a third less power, its maker says.",
    "The prime minister survived a confidence vote on Tuesday after a day of heated debate in parliament.",
    "The central bank raised interest rates by a quarter point and signalled more increases to come.",
    "Astronomers found water vapour in the atmosphere of a planet orbiting a nearby red dwarf star.",
    "The tennis star withdrew from the tournament with a wrist injury hours before her opening match.",
    "Oil prices jumped after producers agreed to extend output cuts until the end of next year.",
    "A software update fixes a flaw that let attackers read messages on millions of phones.",
    "Flooding displaced thousands of families as rivers burst their banks across the region.",
    "The club sacked its manager after a run of eight games without a win left it bottom of the table.",
]
FEEDBACK_CHOICES = (*LABELS, "Right")


@dataclass
class Tally:
    """What one client saw; merged into the report at the end."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {"classify": [], "feedback": []})
    outcomes: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    saved: int = 0


def _positive(limit: int):  # type: ignore[no-untyped-def]
    def parse(value: str) -> int:
        number = int(value)
        if not 1 <= number <= limit:
            raise argparse.ArgumentTypeError(f"must be between 1 and {limit}")
        return number

    return parse


def _parser() -> argparse.ArgumentParser:
    parser = options.parser(__doc__)
    parser.add_argument("--clients", type=_positive(MAX_CLIENTS), default=32, help="concurrent clients (default 32)")
    parser.add_argument("--requests", type=_positive(MAX_REQUESTS), default=50, help="requests per client (default 50)")
    parser.add_argument("--url", help="a running app on loopback; default: launch `python app.py` on a free port")
    parser.add_argument("--home", type=Path, help="NEWSLOOP_HOME with a champion (required without --url)")
    parser.add_argument("--limit", type=_positive(10**9), default=1_000_000, help="per-minute classify and feedback limits")
    parser.add_argument("--feedback-share", type=float, default=0.2, help="share of requests that are feedback")
    parser.add_argument("--duration", type=float, default=600.0, help="stop sending after this many seconds")
    parser.add_argument("--request-timeout", type=float, default=60.0, help="seconds before a request is an error")
    parser.add_argument("--startup-timeout", type=float, default=180.0, help="seconds to wait for the app to start")
    parser.add_argument("--seed", type=int, default=0)
    return parser


# Server ----------------------------------------------------------------------------------------------


def launch_app(
    home: Path, limit: int, log_path: Path, extra_env: Mapping[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """`python app.py` on `home` and a free loopback port, with both per-minute limits at `limit` and `extra_env`
    on top (e.g. NEWSLOOP_METRICS); returns the process and its URL."""
    port = free_port()
    env = os.environ | dict(extra_env or {}) | {
        "NEWSLOOP_HOME": str(home),
        "NEWSLOOP_HOST": "127.0.0.1",
        "NEWSLOOP_PORT": str(port),
        "NEWSLOOP_CLASSIFY_PER_MINUTE": str(limit),
        "NEWSLOOP_FEEDBACK_PER_MINUTE": str(limit),
        "NEWSLOOP_RETRAIN_INTERVAL_MIN": "0",  # no retrain competing for the CPU mid-run
        "GRADIO_ANALYTICS_ENABLED": "False",
        "HF_HUB_OFFLINE": "1",
    }
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "app.py"], cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    return proc, f"http://127.0.0.1:{port}/"


def wait_until_up(url: str, proc: subprocess.Popen[bytes] | None, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the app exited with status {proc.returncode} before it was up")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the app did not answer at {url} within {timeout_s:.0f} s")


def stop_app(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=15)


# Clients ---------------------------------------------------------------------------------------------


def _connect(url: str):  # type: ignore[no-untyped-def]
    from gradio_client import Client

    return Client(url, verbose=False, download_files=False, analytics_enabled=False)


def run_client(number: int, client, args: argparse.Namespace, run_id: str, deadline: float) -> Tally:  # type: ignore[no-untyped-def]
    tally = Tally()
    rng = random.Random(f"{args.seed}-{number}")
    # Feedback only follows a classification, so after one it comes with probability p: share = p / (1 + p).
    after_classify = min(1.0, args.feedback_share / max(1e-9, 1.0 - args.feedback_share))
    classified, shown, text = False, "", ""
    for request in range(args.requests):
        if time.monotonic() > deadline:
            tally.outcomes["not sent (duration)"] += args.requests - request
            break
        kind = "feedback" if classified and rng.random() < after_classify else "classify"
        if kind == "classify":
            text = f"{rng.choice(ARTICLES)} [load {run_id} c{number} r{request}]"
            payload, endpoint = (text,), "/classify"
        else:  # an answer names the prediction on screen (its id) and the text it was made for
            payload, endpoint = (rng.choice(FEEDBACK_CHOICES), shown, text), "/feedback"
        start = time.perf_counter()
        try:
            result = client.submit(*payload, api_name=endpoint).result(timeout=args.request_timeout)
        except Exception as exc:  # any failure to get an answer is what this script counts
            tally.errors.append(f"{kind}: {type(exc).__name__}: {exc}"[:300])
            tally.outcomes[f"{kind} error"] += 1
            classified = False
            continue
        tally.latencies[kind].append(time.perf_counter() - start)
        outcome = _classify_outcome(result) if kind == "classify" else _feedback_outcome(result)
        tally.outcomes[f"{kind} {outcome}"] += 1
        if kind == "feedback" and outcome == "saved":
            tally.saved += 1
        classified = kind == "classify" and outcome == "ok"
        shown = result[2] if classified else ""
    return tally


def _classify_outcome(result: object) -> str:
    label, info = result[:2] if isinstance(result, tuple | list) and len(result) == 3 else (None, str(result))
    if str(info).startswith("Too many requests"):
        return "rate-limited"
    if not isinstance(label, dict) or label.get("label") not in LABELS:
        return "unexpected"
    named = {c.get("label") for c in label.get("confidences") or []}
    return "ok" if named == set(LABELS) else "unexpected"


def _feedback_outcome(ack: object) -> str:
    ack = str(ack)
    if ack.startswith("Thanks, saved as"):
        return "saved"
    if ack.startswith("Not saved:") and ("too many" in ack or "rate" in ack):
        return "rate-limited"
    if ack.startswith("Already saved"):
        return "duplicate"
    return "unexpected"


# Report ----------------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile of `values` (q in 0..100)."""
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, round(q / 100.0 * len(ordered) + 0.5) - 1))
    return ordered[index]


def rows_in_db(db: Path, run_id: str) -> tuple[int, int]:
    """(rows, distinct texts) this run wrote, read straight from SQLite."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        sql = "SELECT COUNT(*), COUNT(DISTINCT text) FROM answers WHERE instr(text, ?) > 0"
        rows, distinct = conn.execute(sql, [f"[load {run_id} "]).fetchone()
    return int(rows), int(distinct)


def report(tallies: list[Tally], elapsed: float, db: Path | None, run_id: str, args: argparse.Namespace) -> bool:
    outcomes: Counter[str] = Counter()
    latencies: dict[str, list[float]] = {"classify": [], "feedback": []}
    errors: list[str] = []
    for tally in tallies:
        outcomes.update(tally.outcomes)
        errors.extend(tally.errors)
        for kind, values in tally.latencies.items():
            latencies[kind].extend(values)
    saved = sum(t.saved for t in tallies)
    sent = sum(n for name, n in outcomes.items() if not name.startswith("not sent"))
    n_errors = sum(n for name, n in outcomes.items() if name.endswith(" error"))
    refused = sum(n for name, n in outcomes.items() if name.endswith(" rate-limited"))
    unexpected = sum(n for name, n in outcomes.items() if name.endswith((" unexpected", " duplicate")))

    print(f"run {run_id}: {args.clients} clients x {args.requests} requests, limit {args.limit}/min")
    print(f"requests sent      {sent} in {elapsed:.1f} s = {sent / elapsed:.1f} requests/s")
    for name, count in sorted(outcomes.items()):
        print(f"  {name:<22} {count}")
    print(f"errors (exceptions) {n_errors}; intended rate-limit refusals {refused}; unexpected answers {unexpected}")
    for message, count in Counter(errors).most_common(5):
        print(f"  {count} x {message}")
    for kind, values in latencies.items():
        if values:
            p50, p95, worst = (1000 * percentile(values, 50), 1000 * percentile(values, 95), 1000 * max(values))
            print(f"latency {kind:<9} n={len(values):<5} p50 {p50:7.0f} ms  p95 {p95:7.0f} ms  max {worst:7.0f} ms")
    rows_ok = True
    rows_note = "rows not checked (no --home)"
    if db is not None:
        found, distinct = rows_in_db(db, run_id)
        rows_ok = found == saved == distinct
        rows_note = f"feedback rows {found}/{saved} expected" + ("" if found == distinct else f" ({distinct} distinct)")
        print(f"feedback rows      expected {saved} (acks 'Thanks, saved'), found {found} in {db}")
    ok = n_errors == 0 and unexpected == 0 and rows_ok
    c95 = 1000 * percentile(latencies["classify"], 95) if latencies["classify"] else float("nan")
    f95 = 1000 * percentile(latencies["feedback"], 95) if latencies["feedback"] else float("nan")
    print(
        f"{'PASS' if ok else 'FAIL'}: {sent} requests in {elapsed:.1f} s ({sent / elapsed:.1f}/s), {n_errors} errors, "
        f"{refused} rate refusals, {unexpected} unexpected; {rows_note}; p95 classify {c95:.0f} ms, "
        f"feedback {f95:.0f} ms"
    )
    return ok


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.url is None and args.home is None:
        _parser().error("give --home (a NEWSLOOP_HOME with a champion) or --url of a running app")
    if not 0.0 <= args.feedback_share < 1.0:
        _parser().error("--feedback-share must be in [0, 1)")
    if args.url and urlsplit(args.url).hostname not in LOOPBACK:
        _parser().error(f"--url must be on loopback ({', '.join(sorted(LOOPBACK))}): this script sends heavy load")
    db = None
    if args.home is not None:
        settings = load_settings(home=args.home)
        db = settings.paths.feedback_db
        if args.url is None and ModelRegistry(settings.paths.models_dir).champion() is None:
            print(f"error: {args.home} has no champion model; the app would train one first", file=sys.stderr)
            return 2

    run_id = uuid.uuid4().hex[:8]
    proc = None
    log_path = Path(tempfile.gettempdir()) / f"newsloop-load-{run_id}.log"
    url = args.url
    try:
        if url is None:
            proc, url = launch_app(args.home, args.limit, log_path)
            print(f"launched app.py (pid {proc.pid}) at {url}; log {log_path}")
        wait_until_up(url, proc, args.startup_timeout)
        with ThreadPoolExecutor(max_workers=args.clients) as pool:
            clients = list(pool.map(lambda _: _connect(url), range(args.clients)))
            start = time.monotonic()
            deadline = start + args.duration
            futures = [
                pool.submit(run_client, number, client, args, run_id, deadline)
                for number, client in enumerate(clients)
            ]
            tallies = [future.result() for future in futures]
            elapsed = time.monotonic() - start
        for client in clients:
            client.close()
        return 0 if report(tallies, elapsed, db, run_id, args) else 1
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if log_path.is_file():
            print(log_path.read_text(errors="replace")[-3000:], file=sys.stderr)
        return 2
    finally:
        if proc is not None:
            stop_app(proc)


if __name__ == "__main__":
    sys.exit(main())
