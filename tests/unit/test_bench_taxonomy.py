"""The taxonomy scenarios' mechanics (bench/taxonomy.py): carving, the starter's data folder and cache, and a quick
run of both scenarios through `newsloop topics`, the queue and real retrains on a 2-layer random model."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from bench import taxonomy
from bench.sim.carve import TopicScenario, carve, folder_digest, write_starter_folder
from bench.sim.champion import sim_settings
from bench.sim.data import load_sources
from bench.sim.starters import keep, starter_into, starter_spec
from bench.sim.teach import TeachRow
from core.data import load_corpus, read_labelled
from core.labels import LABELS
from core.storage.paths import REGISTRY_RECORD
from core.text import text_hash


def agnews_folder(path: Path, rows: int = 200) -> Path:
    path.mkdir()
    lines = ["label,title,description"] + [
        f'{i % 4 + 1},Headline number {i},"Body of article {i}, with more words"' for i in range(rows)]
    (path / "train.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("kind", ["new", "split"])
def test_the_starter_folder_lacks_the_topic_or_files_it_under_its_neighbour_and_no_carved_row(
    tmp_path: Path, kind: str
) -> None:
    sources = load_sources(str(agnews_folder(tmp_path / "src")))
    carved = carve(sources, LABELS, pool=40, evaluation=30, seed=1)
    assert carved == carve(sources, LABELS, pool=40, evaluation=30, seed=1)  # the same rows every run
    pool, evaluation = {text_hash(e.text) for e in carved.pool}, {text_hash(e.text) for e in carved.evaluation}
    assert len(pool) == 40 and len(evaluation) == 30 and not pool & evaluation
    assert {carved.topics[e.label] for e in carved.pool} == set(LABELS)  # the queue's pool holds every topic

    written = write_starter_folder(sources, carved, TopicScenario(kind, "Sci/Tech", "Business"), tmp_path / kind,
                                   extra=False)
    [rows], topics = read_labelled([tmp_path / kind / "train.csv"])
    assert set(topics) == {"World", "Sports", "Business"}
    assert not {text_hash(e.text) for e in rows} & (pool | evaluation)
    left = Counter(LABELS[i % 4] for i in range(200))
    left.subtract(carved.topics[e.label] for e in (*carved.pool, *carved.evaluation))
    found = Counter(topics[e.label] for e in rows)
    assert written["train.csv"] == len(rows)
    if kind == "new":  # the topic's rows are gone
        assert found == Counter({name: left[name] for name in ("World", "Sports", "Business")})
    else:  # they are there, labelled as the neighbour
        assert found == Counter(World=left["World"], Sports=left["Sports"],
                                Business=left["Business"] + left["Sci/Tech"])


def test_a_cached_starter_is_copied_into_the_home_and_keyed_by_its_data_and_recipe(tmp_path: Path) -> None:
    from retrain.inputs import BootstrapSetup

    data = agnews_folder(tmp_path / "data")
    setup = BootstrapSetup.from_settings(sim_settings(tmp_path / "home", data, tiny=True), max_rows=0, max_minutes=0.0)
    spec = starter_spec(setup, folder_digest(data), tiny=True)
    assert spec.key("new") != spec.key("split")
    assert starter_spec(replace(setup, max_rows=100), folder_digest(data), tiny=True).key("new") != spec.key("new")
    threads = replace(setup, train=setup.train.model_copy(update={"threads": 1}))
    assert starter_spec(threads, folder_digest(data), tiny=True).key("new") == spec.key("new")  # a speed, no recipe
    (data / "train.csv").write_text((data / "train.csv").read_text() + "1,One more,Row\n", encoding="utf-8")
    assert starter_spec(setup, folder_digest(data), tiny=True).key("new") != spec.key("new")

    trained = tmp_path / "trained" / "models"
    (trained / "versions" / "v0001").mkdir(parents=True)
    (trained / REGISTRY_RECORD).write_text('{"champion": "v0001"}', encoding="utf-8")
    cache = tmp_path / "cache"
    keep(trained, cache / spec.key("new"), {"bootstrap_seconds": 12.5})
    outcome = starter_into(setup, spec, "new", cache)  # no factory, no bootstrap: it must come from the cache
    assert outcome.cached and outcome.seconds == 12.5
    assert (setup.paths.models_dir / REGISTRY_RECORD).read_text() == '{"champion": "v0001"}'


def test_the_bar_after_a_round_is_the_strictest_reached() -> None:
    def row(labels: int, accuracy: float, recall: float = 0.9, precision: float = 0.9) -> TeachRow:
        return TeachRow(1, labels, 0, accuracy, recall, precision, "promoted", "v2", retrain_minutes=3.0)

    assert taxonomy.meets(row(199, 0.5)) is None
    assert taxonomy.meets(row(200, 0.885)) is True
    assert taxonomy.meets(row(400, 0.885)) is False  # 0.90 from 400 labels on
    assert taxonomy.meets(row(200, 0.95, recall=0.84)) is False
    assert taxonomy.meets(TeachRow(1, 200, 0, 0.95, 0.9, 0.9, "promoted", "v2", retrain_minutes=11.0)) is False


def test_label_counts_must_grow(capsys: pytest.CaptureFixture[str]) -> None:
    assert taxonomy.parse_args(["--labels", "50,100,400"]).labels == (50, 100, 400)
    for bad in ("200,200", "0,10", "ten"):
        with pytest.raises(SystemExit):
            taxonomy.parse_args(["--labels", bad])
    capsys.readouterr()


# Eight real retrains (about 90 s on 2 cores): run with the whole flows (-m e2e), not in the default run.
@pytest.mark.e2e
def test_quick_run_teaches_through_the_topics_command_the_queue_and_real_retrains(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, cache = tmp_path / "taxonomy.json", tmp_path / "starters"
    argv = ["--quick", "--home", str(tmp_path / "work"), "--out", str(out), "--starter-cache", str(cache)]
    assert taxonomy.main(argv) == 0
    printed = capsys.readouterr().out
    assert printed.strip().splitlines()[-1].startswith("SUMMARY taxonomy quick")
    report = json.loads(out.read_text())["scenarios"]
    assert set(report) == {"new", "split"}
    for kind, scenario in report.items():
        assert "Sci/Tech" not in scenario["topics_before"] and "Sci/Tech" in scenario["topics_after"], kind
        assert len(scenario["topics_after"]) == 4
        assert ("adding Sci/Tech" if kind == "new" else "splitting Business into Business and Sci/Tech") in \
            scenario["change"]
        rows = scenario["rows"]
        assert [(r["round"], r["labels"]) for r in rows] == [(0, 0), (1, 20), (2, 40)]
        assert scenario["answers"] == scenario["served"] == 40  # every answer on an item the queue served
        assert rows[-1]["taught_answers"] > 0
        for row in rows[1:]:
            assert row["decision"] in {"promoted", "refused"}, row  # a retrain ran and the gate decided
            assert row["challenger"] and "Sci/Tech" in row["challenger_labels"], row
        for row in rows:
            assert 0.0 <= row["accuracy"] <= 1.0 and 0.0 <= row["recall"] <= 1.0
        assert scenario["starter"]["cached"] is False and Path(scenario["starter"]["where"]).parent == cache
    table_rows = [line for line in printed.splitlines() if line.startswith("| 20 |") or line.startswith("| 40 |")]
    assert len(table_rows) == 4  # two rounds in each scenario's table
    assert len(list(cache.glob("*/starter.json"))) == 2
    assert "Sci/Tech" not in load_corpus(str(tmp_path / "work" / "new" / "data"), 0.1).labels
