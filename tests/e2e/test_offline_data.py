"""Offline, the default data is said at once (issue 59): with the hub unreachable, `newsloop topics split World
Politics --dry-run` on a fresh home answered after about 23 s (5 retries, each warning printed twice) and then read
the seed set without saying so. Now one warning line, an answer within 3 s, and the preview names the data it read."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.host.net import free_port
from core.settings.config import PROJECT_ROOT

pytestmark = pytest.mark.e2e


def test_a_split_preview_with_the_hub_unreachable_answers_within_3_s_naming_the_data_it_read(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NEWSLOOP_", "MLFLOW_", "HF_")) and k != "TRANSFORMERS_OFFLINE"} | {
        "NEWSLOOP_HOME": str(tmp_path / "home"), "HF_HOME": str(tmp_path / "hf"),  # nothing cached
        "HF_ENDPOINT": f"http://127.0.0.1:{free_port()}",  # a hub that is not there, even on a machine online
        "PYTHONPATH": str(PROJECT_ROOT)}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "newsloop", "topics", "split", "World", "Politics", "--dry-run"],
                          cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]
    [warning] = done.stderr.splitlines()
    assert warning.startswith("WARNING cannot load dataset 'ag_news': the Hugging Face hub cannot be reached (127.0.0.1:")
    assert warning.endswith("reading the built-in AG News seed set (260 rows) instead")
    assert done.stdout.strip() == (
        'dry run, nothing written: splitting World into World and Politics relabels 65 base rows, 0 answers, 0 checks '
        'and 0 queued items as "World or Politics" (a set of allowed topics, not a guess) (base rows of seed: '
        "seed_news.csv (260 rows), in place of ag_news (not reachable))")
    assert elapsed < 3.0, f"{elapsed:.1f} s"
