"""Helpers the tests share: settings for a tiny model, a tiny trained champion, and a launched app."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from core.host.net import free_port
from core.settings.config import PROJECT_ROOT, Settings, load_settings

T = TypeVar("T")


class TickingClock:
    """A clock a test owns: each read is one second after the one before (so every stored answer has its own time),
    and the test may move it on by setting `now`."""

    def __init__(self, start: float = 1_750_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def at_once(n: int, call: Callable[[int], T]) -> list[T]:
    """Run call(0) .. call(n - 1) on n threads released together by a barrier, for races; returns the
    results in call order and re-raises the first exception a call raised."""
    barrier = threading.Barrier(n)

    def released(i: int) -> T:
        barrier.wait()
        return call(i)

    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(released, range(n)))


SHARED_AG_NEWS = Path(os.environ.get("NEWSLOOP_TEST_AG_NEWS", PROJECT_ROOT.parent / "shared" / "data" / "ag_news"))


# Every browser a test simulates comes from one loopback address, many a second: the new-page bounds (meant
# for a crowd of strangers) are lifted, except where a test sets them (tests/e2e/test_abuse.py: the defaults).
MANY_PAGES = {"new_sessions_per_minute": 1_000_000, "new_sessions_per_second": 1_000_000}
MANY_PAGES_ENV = {f"NEWSLOOP_{name.upper()}": str(value) for name, value in MANY_PAGES.items()}  # an app process's


def tiny_settings(home: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {"home": home, "data": "seed", "max_length": 64, "bootstrap_max_minutes": 0.0,
                                 **MANY_PAGES}
    return load_settings(**(values | overrides))


def build_tiny_champion(home: Path, seed: int = 0, track: bool = False, **overrides: object) -> Settings:
    """Train a 2-layer random BERT on the seed set for a few steps and make it champion (seconds)."""
    from transformers import AutoTokenizer

    from retrain.bootstrap import bootstrap
    from retrain.model import resolve_base_model, tiny_model
    from retrain.setup import BootstrapSetup

    settings = tiny_settings(home, **overrides)
    tokenizer = AutoTokenizer.from_pretrained(resolve_base_model(""))
    bootstrap(BootstrapSetup.from_settings(settings), model_and_tokenizer=(tiny_model(seed=seed), tokenizer), track=track)
    return settings


@contextlib.contextmanager
def launched_app(settings: Settings, store: object = None, service: object = None) -> Iterator[tuple[str, object]]:
    """The real server (page, REST API, browser ids, upload guard) on a free loopback port, as `app.main`
    serves it; yields (url, service)."""
    from app import build_app
    from core.registry.versions import ModelRegistry
    from core.serving.classifier import ChampionService
    from web.server.asgi import ServerThread

    service = service or ChampionService(ModelRegistry(settings.paths.models_dir))
    port = free_port()
    server = ServerThread(build_app(service, settings, store), "127.0.0.1", port)  # type: ignore[arg-type]
    server.start()
    try:
        yield f"http://127.0.0.1:{port}/", service
    finally:
        server.stop()


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
