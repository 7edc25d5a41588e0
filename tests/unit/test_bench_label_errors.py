"""bench/label_errors.py --quick: the flip test's mechanics on the seed set, in seconds."""

from __future__ import annotations

import re

import pytest

from bench.label_errors import main


def test_quick_run_prints_recall_and_precision_for_each_feature_set(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--data", "seed"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"203 training rows, 6 labels flipped", out)
    rows = re.findall(r"^\| (TF-IDF|embeddings|embeddings \+ TF-IDF) \| ([\d.]+) \| ([\d.]+) \| (\d+) \| (\d+) \|", out,
                      re.MULTILINE)
    assert [r[0] for r in rows] == ["TF-IDF", "embeddings", "embeddings + TF-IDF"]
    for _, recall, precision, candidates, caught in rows:
        assert 0.0 <= float(precision) <= 1.0 and 0.0 <= float(recall) <= 1.0 and int(caught) <= min(6, int(candidates))
    # words alone find some of the six flips even on 203 hand-written items
    assert float(rows[0][1]) > 0
    assert re.search(r"^\| flipped, top 2k fixed \| 0\.\d{4} \| 0\.\d{4} \|$", out, re.MULTILINE)
