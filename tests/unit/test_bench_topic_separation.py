"""bench/topic_separation.py: its measures on vectors whose answer is known, its starter lookup, and the mechanics
on the seed set with a tiny random encoder (--quick)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from bench.topic_separation import break_even, cached_starter, draws, main, read
from core.storage.paths import META_FILE, REGISTRY_RECORD


def test_break_even_is_the_best_threshold_at_which_recall_and_precision_both_hold() -> None:
    truth = np.array([True, False, True, False])
    # thresholds 0.9, 0.8, 0.7, 0.1 give (precision, recall) (1, .5), (.5, .5), (2/3, 1), (.5, 1)
    assert break_even(truth, np.array([0.9, 0.8, 0.7, 0.1])) == pytest.approx(2 / 3)
    assert break_even(truth, np.array([0.9, 0.1, 0.8, 0.2])) == 1.0
    assert break_even(np.zeros(3, dtype=bool), np.array([0.1, 0.2, 0.3])) == 0.0


def test_the_reader_finds_a_topic_that_its_vectors_separate_and_not_one_they_do_not() -> None:
    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1, 2], 60)
    centres = np.eye(3, 8) * 6.0
    separate = centres[labels] + rng.normal(size=(len(labels), 8))
    evaluation = np.arange(0, len(labels), 2)
    picked = np.arange(1, len(labels), 2)
    found = read(separate, labels, picked, evaluation, topic=2)
    assert found.break_even == 1.0 and found.recall == 1.0 and found.precision == 1.0 and found.accuracy == 1.0
    noise = read(rng.normal(size=(len(labels), 8)), labels, picked, evaluation, topic=2)
    assert noise.break_even < 0.7 and noise.accuracy < 0.7


def test_draws_hold_both_sides_of_the_topic_and_the_whole_pool_once() -> None:
    labels = np.array([1] * 3 + [0] * 97)
    got = draws(100, labels, 10, topic=1, repeats=4, seed=0)
    assert len(got) == 4 and all(len(p) == 10 == len(set(p.tolist())) for p in got)
    assert all((labels[p] == 1).sum() >= 2 for p in got)
    whole = draws(100, labels, 100, topic=1, repeats=4, seed=0)
    assert len(whole) == 1 and whole[0].tolist() == list(range(100))


def _entry(cache: Path, name: str, digest: str, trained_at: str, *, tiny: bool = False, checkpoint: bool = True
           ) -> Path:
    entry = cache / name
    (entry / "models" / "versions" / "v0001").mkdir(parents=True)
    (entry / "models" / "versions" / "v0001" / META_FILE).write_text("{}", encoding="utf-8")
    (entry / "models" / REGISTRY_RECORD).write_text(json.dumps({"champion": "v0001"}), encoding="utf-8")
    if checkpoint:
        (entry / "models" / "versions" / "v0001" / "checkpoint").mkdir()
    (entry / "starter.json").write_text(json.dumps({"scenario": name.split("-")[0], "data_digest": digest,
                                                     "tiny": tiny, "trained_at": trained_at}), encoding="utf-8")
    return entry / "models" / "versions" / "v0001" / "checkpoint"


def test_a_starter_is_found_by_its_scenario_and_data_digest_the_newest_first(tmp_path: Path) -> None:
    _entry(tmp_path, "new-a", "d1", "2026-12-01T00:00:00Z")
    newest = _entry(tmp_path, "new-b", "d1", "2026-12-02T00:00:00Z")
    _entry(tmp_path, "new-c", "d1", "2026-12-03T00:00:00Z", tiny=True)
    _entry(tmp_path, "new-d", "d2", "2026-12-04T00:00:00Z")
    _entry(tmp_path, "split-e", "d1", "2026-12-05T00:00:00Z")
    assert cached_starter(tmp_path, "new", "d1") == newest
    assert cached_starter(tmp_path, "new", "d3") is None
    _entry(tmp_path, "new-f", "d3", "2026-12-05T00:00:00Z", checkpoint=False)
    assert cached_starter(tmp_path, "new", "d3") is None


def test_quick_run_prints_a_row_per_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--answers", "10,20,80", "--cache", str(tmp_path)]) == 0
    rows = re.findall(r"^\| base encoder \| (\d+) \| ([\d.]+) \(([\d.]+)-([\d.]+)\) \| ([\d.]+) / ([\d.]+) / ([\d.]+) \|$",
                      capsys.readouterr().out, re.MULTILINE)
    assert [r[0] for r in rows] == ["10", "20", "80"]
    for _, mean, low, high, *scores in rows:
        assert float(low) <= float(mean) <= float(high)
        assert all(0.0 <= float(x) <= 1.0 for x in (mean, *scores))
    assert rows[2][2] == rows[2][3]  # the whole pool is one draw
