"""bench/serving.py's mechanics on the tiny champion: engines taking turns, rounds, the reference row."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench import serving
from core.registry.versions import ModelRegistry
from core.storage.paths import FP32_FILE, INT8_FILE


def test_engines_take_turns_for_each_round(tiny_champion_home: Path) -> None:
    champion = ModelRegistry(tiny_champion_home / "models").champion()
    built: list[str] = []

    def builder(name: str, onnx_file: str):  # type: ignore[no-untyped-def]
        def build() -> serving.Engine:
            built.append(name)
            return serving.onnx_engine(champion.path, onnx_file, name, 1)
        return build

    engines = {"a": builder("a", FP32_FILE), "b": builder("b", INT8_FILE)}
    rounds = serving.interleaved_latencies(engines, ["one text", "another, longer text"], rounds=3)
    assert built == ["a", "b"] * 3  # each turn builds its engine afresh, in turn
    assert {name: [len(r) for r in runs] for name, runs in rounds.items()} == {"a": [2, 2, 2], "b": [2, 2, 2]}
    assert all((r > 0).all() for runs in rounds.values() for r in runs)


def test_p50_is_the_median_of_the_rounds(tiny_champion_home: Path) -> None:
    champion = ModelRegistry(tiny_champion_home / "models").champion()
    engine = serving.onnx_engine(champion.path, INT8_FILE, "int8", 1)
    rounds = [np.array([1.0, 2.0, 3.0]), np.array([9.0, 9.0, 9.0]), np.array([2.0, 3.0, 4.0])]
    result = serving.measure(engine, [], ["a text", "another"], np.array([0, 1]), 2, rounds)
    assert result.round_p50s == (2.0, 9.0, 3.0)
    assert result.p50_ms == 3.0  # not the pooled p50 (3.0 too here) nor the slow round's 9.0
    assert result.p95_ms == pytest.approx(float(np.percentile(np.concatenate(rounds), 95)))


# Four engines loaded and timed (about 17 s): with the whole flows (-m e2e), not the default run.
@pytest.mark.e2e
def test_main_prints_rounds_the_reference_ratio_and_a_summary(
    tiny_champion_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NEWSLOOP_HOME", str(tiny_champion_home))
    monkeypatch.setenv("NEWSLOOP_DATA", "seed")
    monkeypatch.setenv("NEWSLOOP_MAX_LENGTH", "64")
    champion = ModelRegistry(tiny_champion_home / "models").champion()
    out = tmp_path / "serving.json"
    code = serving.main(["--skip-app", "--n", "8", "--rounds", "2", "--batch-size", "4",
                         "--reference", str(champion.path / FP32_FILE), "--json", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "onnx-int8: p50 per round" in printed and "(2 rounds of 8 texts, taking turns)" in printed
    assert "onnx-int8 vs reference: p50" in printed
    assert printed.strip().splitlines()[-1].startswith("SUMMARY ")
    engines = {e["name"]: e for e in json.loads(out.read_text())["engines"]}
    assert set(engines) == {"pytorch-fp32", "onnx-fp32", "onnx-int8", "reference"}
    for name in engines:
        assert len(engines[name]["round_p50s"]) == 2
        assert engines[name]["p50_ms"] == pytest.approx(float(np.median(engines[name]["round_p50s"])))
