"""bench/split_rows.py: the mechanics on the seed set with a tiny random encoder (--quick), in seconds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.split_rows import VARIANTS, main


def test_quick_run_reads_the_set_rows_with_each_variant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--answers", "10,20", "--cache", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^\| (\d+) \| (.+?) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) / ([\d.]+) \|$", out,
                      re.MULTILINE)
    assert [(n, name) for n, name, *_ in rows] == [(n, name) for n in ("10", "20") for name in VARIANTS]
    for *_, right, child, parent, estimated, true in rows:
        assert all(0.0 <= float(x) <= 1.0 for x in (right, child, parent, estimated, true))
    for n in ("10", "20"):  # the same set rows, so the same truth, for every variant of one split
        assert len({true for m, *_, true in rows if m == n}) == 1


def test_thinning_the_child_sets_the_true_share(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--answers", "10", "--set-child-share", "0.25", "--cache", str(tmp_path)]) == 0
    shares = re.findall(r"/ ([\d.]+) \|$", capsys.readouterr().out, re.MULTILINE)
    assert shares and all(float(s) == pytest.approx(0.25, abs=0.05) for s in shares)
