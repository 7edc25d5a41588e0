"""The learning-loop simulation's mechanics, on the seed set and a 2-layer random model (seconds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import loop
from bench.sim.report import compare
from bench.sim.rows import ORDERS, RoundRow
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


# Real retrains each round (about 10 s): with the whole flows (-m e2e), not the default run.
@pytest.mark.e2e
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


# A tiny loop with trolls, real retrains each round (about 13 s): with the whole flows (-m e2e).
@pytest.mark.e2e
def test_known_answer_checks_keep_trolls_wrong_labels_out_of_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def run(name: str, *options: str) -> dict:
        out = tmp_path / name
        argv = ["--tiny", "--home", str(tmp_path / f"work-{name}"), "--out", str(out), "--rounds", "1",
                "--per-round", "40", "--malicious", "0.4", *options]
        assert loop.main(argv) == 0
        return json.loads((out / "loop_tiny.json").read_text())["rows"]

    before = run("without", "--checks", "0")["uncertainty"][-1]
    assert before["malicious"] > 0 and before["checks"] == 0
    assert before["poisoned"] > 0  # nothing stops the trolls' labels
    with_checks = run("with", "--checks", "12", "--compare-orders")
    capsys.readouterr()
    for order in ORDERS:
        after = with_checks[order][-1]
        assert after["malicious"] > 0
        # Checks sit at random positions; only annotators who passed three of them train (train_on=checked),
        # so a troll's labels never count: before three checks they are untested, after them, failed.
        assert after["checks"] > 0 and after["caught"] >= 1
        assert after["poisoned"] == 0, (order, after)


def test_queue_order_comparison_needs_a_real_gain_and_reports_a_lower_bound() -> None:
    def rows(order: str, accuracies: list[float]) -> list[RoundRow]:
        return [RoundRow(order, i, 100 * i, 0, 0, 0, "v", acc, 0.9, "x") for i, acc in enumerate(accuracies)]

    # Random never improved the champion: "reaching its gain" would be trivial, so the 30% target counts.
    flat = compare({"uncertainty": rows("uncertainty", [0.4, 0.9, 0.99]), "random": rows("random", [0.4] * 3)})
    assert flat["target_gain"] == pytest.approx(0.3 * 0.6)
    assert flat["labels_needed"] == {"uncertainty": 100, "random": None}
    assert (flat["labels_saved_by_uncertainty"], flat["saving_is_lower_bound"]) == (100, True)
    both = compare({"uncertainty": rows("uncertainty", [0.4, 0.9, 0.99]), "random": rows("random", [0.4, 0.5, 0.9])})
    assert both["labels_needed"] == {"uncertainty": 100, "random": 200}
    assert (both["labels_saved_by_uncertainty"], both["saving_is_lower_bound"]) == (100, False)


def test_sybil_mode_mints_identities_from_one_address_and_none_of_their_labels_is_trusted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = ["--tiny", "--home", str(tmp_path / "work"), "--out", str(out), "--rounds", "1", "--per-round", "60",
            "--sybil", "0.5"]
    assert loop.main(argv) == 0
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    last = json.loads((out / "loop_tiny.json").read_text())["rows"]["uncertainty"][-1]
    assert last["malicious"] > 0  # the attacker's wrong labels were given and stored
    assert last["poisoned"] == 0, last  # and none of them was trusted
    assert "wrong labels trusted 0" in summary


def test_starter_data_holds_out_a_stream_and_a_disjoint_test_part(tmp_path: Path) -> None:
    """The shift scenario's rows are never in the starter's data folder, stream and test never overlap, and
    base validation is the same split the full data gives (so the starter's cached scores stay valid)."""
    from bench.sim.headlines import write_starter_data
    from core.data import is_validation, load_corpus

    source = tmp_path / "src"
    source.mkdir()
    lines = ["label,title,description"] + [
        f'{i % 4 + 1},Headline number {i},"Body of article {i}, with more words"' for i in range(400)
    ]
    (source / "train.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    plan, kept = write_starter_data(str(source), tmp_path / "dest", 0.1)
    again, _ = write_starter_data(str(source), tmp_path / "dest2", 0.1)
    assert plan == again  # deterministic: the scenario finds the same rows the starter left out
    stream, test = {text_hash(e.text) for e in plan.stream}, {text_hash(e.text) for e in plan.test}
    assert stream and test and not stream & test
    assert plan.excluded == stream | test
    written = {text_hash(e.text) for e in read_csv(tmp_path / "dest" / "train.csv")}
    assert not written & plan.excluded and kept["train.csv"] == 400 - len(plan.excluded)
    assert all(e.title and not is_validation(e.text, 0.1) for e in plan.stream + plan.test)
    full = load_corpus(str(source), 0.1).validation
    assert load_corpus(str(tmp_path / "dest"), 0.1).validation == full


def test_the_shift_scenario_refuses_a_starter_that_saw_its_held_out_rows(tmp_path: Path) -> None:
    """A starter packed from every row (as the shipped one is) lists the scenario's rows among those it saw and is
    refused; one packed from the scenario's own folder is not."""
    from bench.sim.headlines import write_starter_data
    from bench.sim.shift import held_out_rows_seen
    from core.data import load_corpus
    from retrain.export.starter import data_files, rows_seen

    source = tmp_path / "src"
    source.mkdir()
    lines = ["label,title,description"] + [
        f'{i % 4 + 1},Headline number {i},"Body of article {i}, with more words"' for i in range(400)]
    (source / "train.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    plan, _ = write_starter_data(str(source), tmp_path / "own", 0.1)

    def packed_from(folder: Path) -> dict[str, object]:
        trained = {e.text for e in load_corpus(str(folder), 0.1).train}
        return {"data_files": data_files(str(folder)), "rows_seen": rows_seen(str(folder), trained)}

    assert held_out_rows_seen(packed_from(source), source, plan) == len(plan.excluded)
    assert held_out_rows_seen(packed_from(tmp_path / "own"), source, plan) == 0
    assert held_out_rows_seen({"data": "an older starter"}, source, plan) == 0
