"""The learning-loop simulation's mechanics, on the seed set and a 2-layer random model (seconds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import loop
from core.data import read_csv
from core.text import text_hash


def test_write_data_leaves_out_the_slice_and_the_stream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "data"
    assert loop.main(["--tiny", "--write-data", str(dest)]) == 0
    kept = {text_hash(e.text) for e in read_csv(dest / "train.csv")}
    args = loop.parse_args(["--tiny"])
    _, _, plan, _ = loop.prepare(args, tmp_path / "again", 0.1)
    assert plan.slice_test and plan.stream
    assert not kept & plan.excluded
    assert all(text_hash(e.text) not in kept for e in plan.slice_test + plan.stream)
    assert f"wrote {dest}" in capsys.readouterr().out


def test_tiny_loop_runs_every_round_and_writes_the_curve(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert loop.main(["--tiny", "--home", str(tmp_path / "work"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.strip().splitlines()[-1].startswith("SUMMARY loop tiny")
    report = json.loads((out / "loop_tiny.json").read_text())
    rows = report["rows"]["uncertainty"]
    assert [r["round"] for r in rows] == [0, 1, 2]
    assert rows[-1]["labels"] == 20  # two rounds of ten answers
    assert all(r["decision"] in {"start", "promoted", "refused"} for r in rows), rows
    assert (out / "loop_tiny.png").stat().st_size > 10_000
