"""Feedback write throughput under concurrency: threads (and processes) writing to one SQLite store.

    python bench/feedback_writes.py [--threads 8] [--writes 200] [--processes 4]

Prints rows written, rows found, and writes per second; the last line is a one-line summary.
"""

from __future__ import annotations

import multiprocessing
import tempfile
import threading
import time
from pathlib import Path

from bench import options
from core.labels import LABELS
from core.settings.policies import StoreLimits
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore


def write_many(db: Path, worker: int, writes: int, durable: bool) -> None:
    store = FeedbackStore(db, StoreLimits(writes_per_minute=1_000_000), durable=durable)
    for i in range(writes):
        store.answers.record(AnswerInput(
            text=f"worker {worker} article {i}: markets and matches", user_label=LABELS[i % 4],
            annotator=f"bench-{worker}", kind="correct",
        ))
    store.close()


def run(kind: str, workers: int, writes: int, durable: bool) -> tuple[int, int, float]:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "feedback.db"
        FeedbackStore(db).close()
        start = time.perf_counter()
        if kind == "threads":
            jobs = [threading.Thread(target=write_many, args=(db, w, writes, durable)) for w in range(workers)]
        else:
            ctx = multiprocessing.get_context("spawn")
            jobs = [ctx.Process(target=write_many, args=(db, w, writes, durable)) for w in range(workers)]
        for job in jobs:
            job.start()
        for job in jobs:
            job.join()
        seconds = time.perf_counter() - start
        found = FeedbackStore(db).answers.count()
    return workers * writes, found, seconds


def main() -> None:
    parser = options.parser(__doc__)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--processes", type=int, default=4)
    args = parser.parse_args()
    summary = []
    print("| writers | durable | expected | found | seconds | writes/s |\n|---|---|---|---|---|---|")
    for kind, workers in (("threads", args.threads), ("processes", args.processes)):
        for durable in (True, False):
            expected, found, seconds = run(kind, workers, args.writes, durable)
            rate = expected / seconds
            print(f"| {workers} {kind} | {durable} | {expected} | {found} | {seconds:.2f} | {rate:.0f} |")
            summary.append(f"{workers} {kind}{'' if durable else ' (synchronous=NORMAL)'}: {rate:.0f}/s, lost {expected - found}")
    print("SUMMARY " + "; ".join(summary))


if __name__ == "__main__":
    main()
