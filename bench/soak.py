"""Soak: honest clients classify and answer through the page and REST while the attacks of bench/attacks.py run in rotation
from other addresses, on a launched app configured as a Space, after a quiet run of the same honest clients.

    .venv/bin/python bench/soak.py --minutes 2      # 2 minutes under attack (after 60 s quiet)
    .venv/bin/python bench/soak.py                  # the full 10 minutes

It starts `python app.py` on loopback with SPACE_ID set (so one proxy hop is trusted: each client's address is
the last X-Forwarded-For entry, which this script writes as the Space's proxy would), in a fresh temporary home
(the shipped starter serves) or a copy of --home, and stops it at the end. Honest page clients use
gradio_client (classify, then answer the prediction); honest REST clients POST /api/v1/classify; each honest
client and each attack has addresses of its own. It prints honest latency p50/p99 quiet and under attack,
errors, the app's resident memory over time, answers acknowledged but missing from the database, what each
attack was answered, and one summary line. Exit status 0 when the issue's targets hold: no answer lost, honest
p99 within 3x of the quiet run's, memory flat (under +300 MB), no honest errors.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench import attacks, options
from bench.load import ARTICLES, percentile, stop_app, wait_until_up
from core.host.net import free_port
from core.labels import LABELS
from core.settings.config import PROJECT_ROOT
from testkit.attackers import Hit, addresses

PASSWORD = "a soak-test admin passphrase nobody guesses"
MAX_GROWTH_MB = 300


@dataclass
class Honest:
    """What the honest clients saw, by phase ("quiet" or "attack")."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {"quiet": [], "attack": []})
    errors: list[str] = field(default_factory=list)
    saved: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def timed(self, phase: str, what: str, call: Callable[[], object], ok: Callable[[object], bool]) -> object:
        started = time.perf_counter()
        try:
            result = call()
        except Exception as exc:  # every failed honest request is what this benchmark counts
            result, passed = f"{type(exc).__name__}: {exc}", False
        else:
            passed = ok(result)
        with self.lock:
            if phase in self.latencies:  # not a request that started after the run ended
                self.latencies[phase].append(time.perf_counter() - started)
            if not passed:
                self.errors.append(f"{what}: {str(result)[:200]}")
        return result if passed else None


def launch(home: Path, log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = os.environ | {
        "SPACE_ID": "newsloop/soak", "NEWSLOOP_HOME": str(home), "NEWSLOOP_HOST": "127.0.0.1",
        "NEWSLOOP_PORT": str(port), "NEWSLOOP_ADMIN_PASSWORD": PASSWORD, "NEWSLOOP_DURABLE_DIR": "",
        "NEWSLOOP_RETRAIN_INTERVAL_MIN": "0", "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1",
    }
    with log_path.open("wb") as log:
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    return proc, f"http://127.0.0.1:{port}/"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def page_client(url: str, address: str, tag: str, honest: Honest, phase: list[str], pace: float) -> None:
    """Classify a text, answer its prediction, repeat: one browser (its NewsLoop cookie kept) on one address."""
    from gradio_client import Client

    cookie = httpx.get(url, headers={"x-forwarded-for": address}, timeout=60).headers["set-cookie"].split(";")[0]
    client = Client(url, headers={"x-forwarded-for": address, "cookie": cookie}, verbose=False,
                    download_files=False, analytics_enabled=False)
    rng = random.Random(tag)
    for i in itertools.count():
        if phase[0] == "done":
            break
        started, text = time.monotonic(), f"{rng.choice(ARTICLES)} [soak {tag} r{i}]"
        shown = honest.timed(phase[0], "page classify", lambda text=text: client.predict(text, api_name="/classify"),
                             lambda r: isinstance(r, tuple | list) and isinstance(r[0], dict) and bool(r[-1]))
        if shown is not None:
            answer = (rng.choice(LABELS), shown[-1], text)  # type: ignore[index]  # the id /classify gave
            ack = honest.timed(phase[0], "page answer", lambda a=answer: client.predict(*a, api_name="/feedback"),
                               lambda r: str(r).startswith("Thanks, saved"))
            if ack is not None:
                with honest.lock:
                    honest.saved.add(text)
        time.sleep(max(0.0, pace - (time.monotonic() - started)))
    client.close()


def rest_client(url: str, address: str, tag: str, honest: Honest, phase: list[str], pace: float) -> None:
    with httpx.Client(timeout=60, headers={"x-forwarded-for": address}) as http:
        for i in itertools.count():
            if phase[0] == "done":
                break
            started, text = time.monotonic(), f"{ARTICLES[i % len(ARTICLES)]} [soak {tag} r{i}]"
            honest.timed(phase[0], "REST classify", lambda text=text: http.post(f"{url}api/v1/classify", json={"text": text}),
                         lambda r: r.status_code == 200)  # type: ignore[attr-defined]
            time.sleep(max(0.0, pace - (time.monotonic() - started)))


def attack_rotation(url: str, deadline: float) -> list[Hit]:
    """The issue's table, in rotation, each attack from fresh addresses, until `deadline`."""
    fresh = addresses("203.0")
    mix: list[Callable[[], list[Hit]]] = [
        lambda: attacks.list_bomb(url, next(fresh), 1_800_000),
        lambda: attacks.list_bomb(url, next(fresh), 150_000),
        lambda: attacks.chunked_body(url, next(fresh)),
        lambda: attacks.queue_flood(url, next(fresh)),
        lambda: attacks.sign_in_guessing(url, [next(fresh) for _ in range(5)]),
        lambda: attacks.forwarded_lines(url, next(fresh)),
        lambda: attacks.remembered_predictions(url, [next(fresh) for _ in range(10)]),
    ]
    hits: list[Hit] = []
    for attack in itertools.cycle(mix):
        if time.monotonic() >= deadline:
            break
        hits.extend(attack())
    return hits


def lost_answers(db: Path, run_id: str, saved: set[str]) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        rows = conn.execute("SELECT DISTINCT text FROM answers WHERE instr(text, ?) > 0", [f"[soak {run_id}"])
        found = {row[0] for row in rows}
    return len(saved - found)


def ms(values: list[float], q: float) -> float:
    return 1000 * percentile(values, q) if values else float("nan")


def report(args: argparse.Namespace, honest: Honest, hits: list[Hit], memory: list[tuple[float, float]],
           lost: int, attack_s: float) -> bool:
    quiet, attacked = honest.latencies["quiet"], honest.latencies["attack"]
    q50, q99, a50, a99 = ms(quiet, 50), ms(quiet, 99), ms(attacked, 50), ms(attacked, 99)
    print(f"quiet ({args.quiet_seconds:.0f} s): honest requests {len(quiet)}, p50 {q50:.0f} ms, p99 {q99:.0f} ms")
    print(f"under attack ({attack_s / 60:.1f} min): honest requests {len(attacked)}, p50 {a50:.0f} ms, "
          f"p99 {a99:.0f} ms ({a99 / q99:.1f}x the quiet p99)")
    print(f"honest errors: {len(honest.errors)}")
    for message, count in Counter(honest.errors).most_common(5):
        print(f"  {count} x {message}")
    print(f"answers acknowledged: {len(honest.saved)}; missing from the database: {lost}")
    step = max(1, len(memory) // 24)
    print("app memory (RSS, MB) by second: " + ", ".join(f"{t:.0f}s {mb:.0f}" for t, mb in memory[::step]))
    at_attack = next((mb for t, mb in memory if t >= args.quiet_seconds), memory[-1][1])
    end_mb, max_mb = memory[-1][1], max(mb for _, mb in memory)
    print("attacks (what the attackers got):")
    for name in dict.fromkeys(h.attack for h in hits):
        mine = [h for h in hits if h.attack == name]
        print(f"  {name:<44} {len(mine):>5} answers, {sum(h.was_refused for h in mine):>5} refused, "
              f"statuses {dict(Counter(h.status for h in mine))}, slowest {max(h.seconds for h in mine):.2f} s, "
              f"largest {max(h.nbytes for h in mine):,} B")
    refused = [h for h in hits if h.was_refused]
    slowest = max((h.seconds for h in refused), default=float("nan"))
    largest = max((h.nbytes for h in refused), default=0)
    ok = lost == 0 and not honest.errors and a99 <= 3 * q99 and end_mb - at_attack < MAX_GROWTH_MB
    print(f"{'PASS' if ok else 'FAIL'}: soak {attack_s / 60:.1f} min under attack: honest p50/p99 {a50:.0f}/{a99:.0f} ms "
          f"(quiet {q50:.0f}/{q99:.0f} ms: p99 {a99 / q99:.1f}x), {len(honest.errors)} honest errors, {lost} of "
          f"{len(honest.saved)} answers lost, app RSS {at_attack:.0f} -> {end_mb:.0f} MB (max {max_mb:.0f}), "
          f"{len(hits)} attacker answers, {len(refused)} refused (slowest {slowest:.2f} s, largest {largest:,} B)")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = options.parser(__doc__)
    parser.add_argument("--minutes", type=float, default=10.0, help="minutes under attack (default 10)")
    parser.add_argument("--quiet-seconds", type=float, default=60.0, help="quiet run first (default 60)")
    parser.add_argument("--home", type=Path, help="a NEWSLOOP_HOME to copy (default: a fresh one, the starter)")
    parser.add_argument("--page-clients", type=int, default=2)
    parser.add_argument("--rest-clients", type=int, default=2)
    parser.add_argument("--pace", type=float, default=2.5, help="seconds between one honest client's requests")
    parser.add_argument("--startup-timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    run_id = uuid.uuid4().hex[:8]
    work = Path(tempfile.mkdtemp(prefix=f"newsloop-soak-{run_id}-"))
    home = work / "home"
    if args.home is not None:
        shutil.copytree(args.home, home)
    proc, url = launch(home, work / "app.log")
    print(f"run {run_id}: app.py pid {proc.pid} at {url} (home {home}, log {work / 'app.log'})")
    honest, phase, memory, started = Honest(), ["quiet"], [], time.monotonic()
    try:
        wait_until_up(url, proc, args.startup_timeout)
        sampler = threading.Thread(target=lambda: _sample(proc.pid, phase, memory, started), daemon=True)
        sampler.start()
        honest_clients = [
            threading.Thread(target=page_client, args=(url, f"198.51.100.{n + 1}", f"{run_id} p{n}", honest, phase,
                                                        args.pace), daemon=True) for n in range(args.page_clients)
        ] + [
            threading.Thread(target=rest_client, args=(url, f"198.51.100.{n + 101}", f"{run_id} r{n}", honest, phase,
                                                        args.pace), daemon=True) for n in range(args.rest_clients)
        ]
        for thread in honest_clients:
            thread.start()
        time.sleep(args.quiet_seconds)
        phase[0], attack_start = "attack", time.monotonic()
        hits = attack_rotation(url, attack_start + args.minutes * 60)
        attack_s = time.monotonic() - attack_start
        phase[0] = "done"
        for thread in honest_clients:
            thread.join(timeout=120)
        time.sleep(1.0)
        lost = lost_answers(home / "feedback.db", run_id, honest.saved)
        return 0 if report(args, honest, hits, memory, lost, attack_s) else 1
    finally:
        phase[0] = "done"
        stop_app(proc)


def _sample(pid: int, phase: list[str], memory: list[tuple[float, float]], started: float) -> None:
    while phase[0] != "done":
        memory.append((time.monotonic() - started, rss_mb(pid)))
        time.sleep(5.0)


if __name__ == "__main__":
    sys.exit(main())
