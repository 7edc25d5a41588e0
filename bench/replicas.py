"""Scale-out figures: answers written per second by 16 writers on PostgreSQL vs SQLite, and classify
throughput through one vs two app replicas.

    python -m bench.replicas [--writers 16] [--writes 50] [--seconds 20] [--clients 8] [--home HOME]

Needs Debian's postgresql (a throwaway cluster is started with fsync on, as a server runs). `--home` names a
home with a champion to serve (default: a tiny test model trained here in seconds). Prints Markdown tables; the
last line is a one-line summary.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from bench import options
from bench.load import stop_app
from core.labels import LABELS
from core.settings.policies import StoreLimits
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from testkit.pg_cluster import throwaway_cluster
from testkit.stack import process_env, start_replica


def write_rate(location: Path | str, writers: int, writes: int) -> tuple[float, int]:
    """Writers (threads, each with its own store: its own connection or pool) record `writes` answers each."""
    stores = [FeedbackStore(location, StoreLimits(writes_per_minute=10**6, address_writes_per_minute=10**6))
              for _ in range(writers)]

    def work(w: int) -> None:
        for i in range(writes):
            stores[w].answers.record(AnswerInput(text=f"writer {w} article {i}: markets", user_label=LABELS[i % 4],
                             annotator=f"bench-{w}", kind="correct", address="addr:bench"))

    threads = [threading.Thread(target=work, args=(w,)) for w in range(writers)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    found = stores[0].answers.count()
    for store in stores:
        store.close()
    return writers * writes / seconds, found


def classify_rate(urls: list[str], clients: int, seconds: float) -> float:
    """Requests per second from `clients` threads posting single texts to the replicas in turn."""
    done = [0] * clients
    stop_at = time.monotonic() + seconds
    body = json.dumps({"text": "Shares of chip makers rose after strong quarterly results."}).encode()

    def work(c: int) -> None:
        url = f"{urls[c % len(urls)]}api/v1/classify"
        while time.monotonic() < stop_at:
            request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=30) as response:
                response.read()
            done[c] += 1

    threads = [threading.Thread(target=work, args=(c,)) for c in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(done) / seconds


def champion_home(home: Path | None, tmp: Path) -> Path:
    if home is not None:
        return home
    from testkit.models import build_tiny_champion

    build_tiny_champion(tmp / "tiny")
    return tmp / "tiny"


def main() -> None:
    parser = options.parser(__doc__)
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--writes", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--home", type=Path, default=None)
    args = parser.parse_args()
    summary = []
    with tempfile.TemporaryDirectory() as tmp_name, throwaway_cluster(durable=True) as cluster:
        tmp = Path(tmp_name)
        # Load average before each row: the database server and the replicas are other processes, so the
        # benches' usual "other processes' CPU" would count them; the load says whether the machine was quiet.
        print(f"| store ({args.writers} writers x {args.writes}) | answers/s | found | load before |\n|---|---:|---:|---:|")
        for name, location in (("SQLite (WAL, synchronous=FULL)", tmp / "feedback.db"),
                               ("PostgreSQL (fsync on)", cluster.create_database("bench"))):
            load = os.getloadavg()[0]
            rate, found = write_rate(location, args.writers, args.writes)
            print(f"| {name} | {rate:.0f} | {found} | {load:.1f} |")
            summary.append(f"{name.split()[0]} {rate:.0f} answers/s")

        source = champion_home(args.home, tmp)
        database = cluster.create_database("serve")
        procs, urls = [], []
        try:
            for i in range(2):
                home = tmp / f"replica-{i}"
                shutil.copytree(source / "models", home / "models")  # the file registry: no tracking server needed
                env = process_env(home, database, "", NEWSLOOP_ONNX_THREADS="0")  # all cores, as a server runs
                proc, url = start_replica(env, tmp / f"replica-{i}.log")
                procs.append(proc)
                urls.append(url)
            print(f"\n| replicas ({args.clients} clients, {args.seconds:.0f} s) | classify requests/s | load before |"
                  "\n|---|---:|---:|")
            for n in (1, 2):
                load = os.getloadavg()[0]
                rate = classify_rate(urls[:n], args.clients, args.seconds)
                print(f"| {n} | {rate:.0f} | {load:.1f} |")
                summary.append(f"{n} replica{'s' if n > 1 else ''} {rate:.0f} classify/s")
        finally:
            for proc in procs:
                stop_app(proc)
    print("SUMMARY " + "; ".join(summary))


if __name__ == "__main__":
    main()
