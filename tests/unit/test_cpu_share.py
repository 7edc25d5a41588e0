"""How a retrain shares the CPU with serving: its niceness and training threads (pure), and the priority it takes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from core.host.cpu_share import CpuShare, retrain_share
from core.settings.config import PROJECT_ROOT


def test_beside_serving_a_retrain_leaves_one_core_to_the_app() -> None:
    assert retrain_share(2, beside_serving=True, nice=10, threads=0) == CpuShare(nice=10, threads=1)
    assert retrain_share(16, beside_serving=True, nice=10, threads=0) == CpuShare(nice=10, threads=15)
    assert retrain_share(1, beside_serving=True, nice=10, threads=0) == CpuShare(nice=10, threads=1)  # never 0


def test_alone_a_retrain_uses_every_core_and_the_hosts_threads_win() -> None:
    assert retrain_share(2, beside_serving=False, nice=10, threads=0) == CpuShare(nice=10, threads=0)  # 0 = all
    assert retrain_share(2, beside_serving=True, nice=0, threads=2) == CpuShare(nice=0, threads=2)
    assert retrain_share(8, beside_serving=False, nice=5, threads=3) == CpuShare(nice=5, threads=3)


@pytest.mark.parametrize("nice, threads, cores", [(-1, 0, 2), (20, 0, 2), (10, -1, 2), (10, 0, 0)])
def test_impossible_shares_are_refused(nice: int, threads: int, cores: int) -> None:
    with pytest.raises(ValueError):
        retrain_share(cores, beside_serving=True, nice=nice, threads=threads)


def run_python(code: str, **env: str) -> str:
    return subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, env=os.environ | env, capture_output=True,
                          text=True, check=True, timeout=120).stdout.strip()


def test_a_retrain_process_lowers_its_own_priority_and_never_raises_it() -> None:
    # In a child process, so this test process keeps its priority.
    code = ("import os; from core.host.cpu_share import lower_priority; "
            "print(os.getpriority(os.PRIO_PROCESS, 0), lower_priority(7), lower_priority(3), lower_priority(30))")
    start, *after = (int(x) for x in run_python(code).split())
    assert after == [max(start, 7), max(start, 7), 19]


def test_yield_cpu_applies_the_settings_share() -> None:
    code = ("import os; from core.settings.config import load_settings; from core.host.cpu_share import yield_cpu; "
            "s = yield_cpu(load_settings()); print(os.getpriority(os.PRIO_PROCESS, 0), s.train.threads)")
    beside = run_python(code, NEWSLOOP_RETRAIN_BESIDE_SERVING="true", NEWSLOOP_RETRAIN_NICE="12",
                        NEWSLOOP_TORCH_THREADS="0")
    assert beside.split() == ["12", str(max(1, len(os.sched_getaffinity(0)) - 1))]
    alone = run_python(code, NEWSLOOP_RETRAIN_BESIDE_SERVING="false", NEWSLOOP_RETRAIN_NICE="0",
                       NEWSLOOP_TORCH_THREADS="0")
    assert alone.split() == [str(os.getpriority(os.PRIO_PROCESS, 0)), "0"]  # a child starts at its parent's
