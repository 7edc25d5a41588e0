"""A host that loses its local disk: the launched app snapshots to a durable directory, is killed with -9 in
the middle of a snapshot, and a restart from the durable directory alone has every answer older than one
snapshot interval. Also: a fresh home serves the shipped starter without training."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from gradio_client import Client

from core.host.net import free_port
from core.registry.starter import STARTER_DIR, starter_meta
from core.registry.versions import ModelRegistry
from core.settings.config import PROJECT_ROOT
from core.settings.policies import StoreLimits
from core.storage.durable import MANIFEST, latest_complete, snapshots
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore

pytestmark = pytest.mark.e2e

INTERVAL_S = 1.5


def app_env(home: Path, durable: Path | None, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEWSLOOP_")}
    env |= {
        "NEWSLOOP_HOME": str(home),
        "NEWSLOOP_DATA": "seed",
        "NEWSLOOP_PORT": str(port),
        "NEWSLOOP_SNAPSHOT_MINUTES": str(INTERVAL_S / 60),
        "NEWSLOOP_RELOAD_INTERVAL_S": "0.5",
        "GRADIO_ANALYTICS_ENABLED": "False",
        "HF_HUB_OFFLINE": "1",
    }
    if durable is not None:
        env["NEWSLOOP_DURABLE_DIR"] = str(durable)
    return env


@contextlib.contextmanager
def running_app(home: Path, durable: Path | None, log: Path) -> Iterator[tuple[subprocess.Popen, str]]:
    port = free_port()
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "app.py"], cwd=PROJECT_ROOT, env=app_env(home, durable, port), stdout=out, stderr=out
        )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, f"the app exited early:\n{log.read_text()[-3000:]}"
            with contextlib.suppress(Exception):
                Client(url, verbose=False)
                break
            assert time.monotonic() < deadline, f"the app did not come up:\n{log.read_text()[-3000:]}"
            time.sleep(0.3)
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def test_kill_9_during_a_snapshot_then_restart_from_the_durable_directory_alone(
    tiny_home_copy: Path, tmp_path: Path
) -> None:
    durable = tmp_path / "bucket"
    store = FeedbackStore(tiny_home_copy / "feedback.db", StoreLimits(writes_per_minute=1_000_000))
    # A few MB of older answers, so that a snapshot takes long enough to be interrupted.
    for i in range(1500):
        store.answers.record(AnswerInput(text=f"older article {i} " + "x" * 2000, user_label="World", annotator=f"a{i % 50}", kind="correct"))
    written: list[tuple[int, float]] = []
    with running_app(tiny_home_copy, durable, tmp_path / "app.log") as (proc, _url):
        deadline = time.monotonic() + 30
        caught = False
        i = 0
        while time.monotonic() < deadline:
            result = store.answers.record(AnswerInput(text=f"live article {i}", user_label="Sports", annotator=f"b{i % 50}", kind="correct"))
            written.append((result.id, time.monotonic()))
            i += 1
            complete = latest_complete(durable) is not None
            torn = [s for s in snapshots(durable) if not (s / MANIFEST).exists()]
            if complete and torn and time.monotonic() > deadline - 25:
                caught = True
                break
            time.sleep(0.01)
        killed_at = time.monotonic()
        os.kill(proc.pid, signal.SIGKILL)
    store.close()
    assert caught, "never saw a snapshot in progress to kill the app in"

    shutil.rmtree(tiny_home_copy)  # the host's local disk is gone; only the durable directory is left
    with running_app(tiny_home_copy, durable, tmp_path / "app2.log") as (_proc, url):
        restored = FeedbackStore(tiny_home_copy / "feedback.db")
        ids = {row["id"] for row in restored.answers.rows()}
        old_enough = [answer_id for answer_id, at in written if at < killed_at - 2 * INTERVAL_S]
        assert old_enough, "the test wrote nothing long enough before the kill"
        assert set(old_enough) <= ids
        assert restored.answers.count() >= 1500
        label, _info, _prediction_id = Client(url, verbose=False).predict("Stocks rallied as oil prices fell.", api_name="/classify")
        assert label["label"]


def test_a_fresh_home_serves_the_shipped_starter_without_training(tmp_path: Path) -> None:
    home = tmp_path / "fresh"
    with running_app(home, None, tmp_path / "app.log") as (_proc, url):
        label, _info, _prediction_id = Client(url, verbose=False).predict("The striker scored twice in the final.", api_name="/classify")
    champion = ModelRegistry(home / "models").champion()
    assert champion is not None and champion.meta["kind"] == "starter"
    assert champion.meta["starter_of"] == starter_meta(STARTER_DIR)["source_version"]
    assert "training" not in (tmp_path / "app.log").read_text()
    assert label["label"] == "Sports"
