"""The own-data bench's mechanics (bench/own_data.py): the seeded stratified carve, recipe variants, and a quick run of
the real bootstrap beside the baseline on a tiny random model."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bench import own_data


def rows(n: int) -> list[tuple[str, str]]:
    return [(["Politics", "Sport", "Markets"][i % 3], f"article number {i} about {i % 3}") for i in range(n)]


def test_the_carve_is_seeded_stratified_nested_and_disjoint() -> None:
    trains, test = own_data.carve(rows(300), (30, 60), test=60, seed=1)
    assert (trains, test) == own_data.carve(rows(300), (30, 60), test=60, seed=1)
    assert Counter(label for label, _ in test) == {"Politics": 20, "Sport": 20, "Markets": 20}
    assert set(trains[30]) <= set(trains[60]) and not set(trains[60]) & set(test)
    assert len(trains[30]) == 30 and Counter(label for label, _ in trains[30])["Sport"] == 10


def test_a_variant_reads_its_settings() -> None:
    assert own_data.parse_variant("old:epochs=1,lexical=false,lr_encoder=8e-5,data=x") == (
        "old", {"epochs": 1, "lexical": False, "lr_encoder": 8e-5, "data": "x"})


@pytest.mark.e2e  # a real bootstrap and export: a minute on a loaded machine
def test_a_quick_run_bootstraps_and_scores_both_on_the_held_out_rows(tmp_path: Path) -> None:
    out = tmp_path / "own.json"
    assert own_data.main(["--quick", "--sizes", "40", "--out", str(out)]) == 0
    [cell] = json.loads(out.read_text())["cells"]
    assert (cell["set"], cell["size"], cell["test"]) == ("seed", 40, 40)
    assert 0.0 <= cell["accuracy"] <= 1.0 and 0.0 <= cell["baseline"] <= 1.0 and cell["steps"] >= 1
    assert cell["trained_on"] < 40  # the bootstrap held its validation share out, and the baseline fit the rest
