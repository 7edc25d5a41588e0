"""The newsroom scenario's mechanics (bench/newsroom.py): the carve, and a quick run from a starter through
`newsloop topics rename`, the pool import, a golden set, the queue and real retrains on a 2-layer random model."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bench import newsroom
from core.settings.config import SEED_CSV


def test_the_newsrooms_articles_are_carved_apart_and_named_in_its_topics() -> None:
    rows = newsroom.newsroom_rows(SEED_CSV, {"World": "Politics", "Sports": "Sports"})
    assert {label for label, _ in rows} == {"Politics", "Sports"}
    test, golden, pool = newsroom.carve_newsroom(rows, 40, 20, 60, seed=1)
    assert (len(test), len(golden), len(pool)) == (40, 20, 60)
    assert not ({t for _, t in test} & {t for _, t in golden}) and not ({t for _, t in golden} & {t for _, t in pool})
    assert Counter(label for label, _ in test) == {"Politics": 20, "Sports": 20}
    assert (test, golden, pool) == newsroom.carve_newsroom(rows, 40, 20, 60, seed=1)


@pytest.mark.e2e  # real retrains: a minute or two on a loaded machine
def test_a_quick_run_renames_imports_labels_and_retrains(tmp_path: Path) -> None:
    out = tmp_path / "newsroom.json"
    assert newsroom.main(["--quick", "--golden", "20", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["sizes"] == {"test": 40, "golden": 20, "pool": 60}
    rounds = record["rounds"]
    assert [r["answers"] for r in rounds] == [10, 20]
    assert all(r["decision"] in ("promoted", "refused") for r in rounds)
    assert rounds[-1]["own_rows"] >= 20  # the golden set judged with the answers held out
