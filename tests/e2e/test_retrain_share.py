"""A retrain the admin view starts yields the CPU to serving: a lower priority and one training thread fewer."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from core.host.cpu_share import available_cores
from core.settings.config import PROJECT_ROOT
from core.storage.paths import HomePaths
from tests.e2e.test_retrain_run import LEARNING, add_feedback, settings_for
from web.admin.jobs import RetrainJobs

pytestmark = pytest.mark.e2e


def niceness(pid: int) -> int | None:
    """The scheduling niceness of a running process (field 19 of /proc/PID/stat), None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[16])


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs Linux /proc")
def test_an_app_started_retrain_runs_nicer_on_one_core_fewer(tiny_home_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = settings_for(tiny_home_copy)
    add_feedback(settings, flip=False)
    # What the app's environment would hold: the same home and recipe as the in-process tests.
    env = {"NEWSLOOP_HOME": str(tiny_home_copy), "NEWSLOOP_DATA": "seed", "NEWSLOOP_MAX_LENGTH": "64",
           "NEWSLOOP_RETRAIN_NICE": "7", "NEWSLOOP_TORCH_THREADS": "0", "PYTHONPATH": str(PROJECT_ROOT),
           "MLFLOW_TRACKING_URI": f"sqlite:///{tiny_home_copy}/mlflow.db"}
    env |= {f"NEWSLOOP_{k.upper()}": str(v) for k, v in LEARNING.items()}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("NEWSLOOP_RETRAIN_BESIDE_SERVING", raising=False)  # the job runner sets it, not us
    jobs = RetrainJobs(HomePaths(tiny_home_copy))
    jobs.start("run")
    pid = jobs._job.pid  # type: ignore[union-attr]
    seen: set[int] = set()
    deadline = time.monotonic() + 600
    while jobs.wait(0.05) is None and time.monotonic() < deadline:
        value = niceness(pid)
        if value is not None:
            seen.add(value)
    code = jobs.wait(60)
    (log_file,) = HomePaths(tiny_home_copy).logs_dir.glob("run-*.log")
    log = log_file.read_text()
    assert code == 0, log[-3000:]  # promoted, as in test_corrective_feedback_promotes_a_better_challenger
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    assert max(seen) == max(ours, 7), seen  # the child lowered itself while it ran
    threads = max(1, available_cores() - 1)
    assert f"retrain at niceness {max(ours, 7)} with {threads} training threads (beside serving)" in log
