"""Things at the same time: calls released together on threads, and another process retraining meanwhile."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from core.settings.config import PROJECT_ROOT

T = TypeVar("T")


def at_once(n: int, call: Callable[[int], T]) -> list[T]:
    """Run call(0) .. call(n - 1) on n threads released together by a barrier, for races; returns the
    results in call order and re-raises the first exception a call raised."""
    barrier = threading.Barrier(n)

    def released(i: int) -> T:
        barrier.wait()
        return call(i)

    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(released, range(n)))


# A retrain in its training stage, as `python -m retrain run` is: the retrain lock held and progress written
# through the retrain's own code, until the test sends a line (then it ends the run as refused).
_RETRAIN_ELSEWHERE = """
import sys
from pathlib import Path
from core.storage.paths import HomePaths
from core.registry.stages import Stage
from retrain.state import retrain_lock, write_progress
paths = HomePaths(Path(sys.argv[1]))
with retrain_lock(paths):
    write_progress(paths, Stage.TRAINING)
    print("training", flush=True)
    sys.stdin.readline()
    write_progress(paths, Stage.DONE, "refused")
"""


@contextlib.contextmanager
def retrain_elsewhere(home: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process training a challenger on `home`, from the moment it has written its stage; killed on
    exit if the test did not `finish` it."""
    other = subprocess.Popen([sys.executable, "-c", _RETRAIN_ELSEWHERE, str(home)], cwd=PROJECT_ROOT,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "training"
        yield other
    finally:
        other.kill()
        other.wait()


def finish(other: subprocess.Popen[str]) -> None:
    """Let a `retrain_elsewhere` process end its run, and wait for it."""
    assert other.stdin is not None
    other.stdin.write("\n")
    other.stdin.flush()
    assert other.wait(timeout=60) == 0
