"""The Hugging Face dataset export across taxonomy changes: ClassLabel names are the taxonomy's, the export says
which version, and a split's earlier answers export as their allowed set."""

from __future__ import annotations

from pathlib import Path

import datasets

from feedback.export.dataset import answers_dataset, export_dataset
from feedback.labelling.answers import AnswerInput
from testkit.pg_cluster import StoreFactory

SURE_OF_BUSINESS = {"World": 0.05, "Sports": 0.05, "Business": 0.85, "Sci/Tech": 0.05}


def test_the_dataset_speaks_the_current_taxonomy(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "f.db")
    store.answers.record(AnswerInput(text="New chip", user_label="Sci/Tech", annotator="anna", kind="correct"))
    store.answers.record(AnswerInput(text="Oil up", user_label="Business", annotator="anna", kind="confirm", probabilities=SURE_OF_BUSINESS))
    for step in (lambda t: t.rename("World", "International"), lambda t: t.split("Sci/Tech", "Science"),
                 lambda t: t.merge("Business", "World")):
        before = store.topics.current()
        store.topics.commit(step(before), before.version)
    store.answers.record(AnswerInput(text="Comet seen", user_label="Science", annotator="anna", kind="correct"))

    dataset = answers_dataset(store)
    names = ["International", "Sports", "Sci/Tech", "Science"]
    assert dataset.features["label"].names == names and dataset.features["predicted_label"].names == names
    assert "taxonomy version 4" in dataset.info.description and "International, Sports" in dataset.info.description
    rows = {row["text"]: row for row in dataset}
    chip, oil, comet = rows["New chip"], rows["Oil up"], rows["Comet seen"]
    assert (chip["label"], chip["allowed_labels"], chip["answered_under"]) == (-1, [2, 3], 1)  # "Sci/Tech or Science"
    assert (oil["label"], oil["allowed_labels"], oil["predicted_label"]) == (0, [0], 0)  # Business counts as World
    assert (comet["label"], comet["allowed_labels"], comet["answered_under"]) == (3, [3], 4)
    assert {row["taxonomy_version"] for row in dataset} == {4}
    assert '"Business": 0.85' in oil["model_probabilities"]

    out = tmp_path / "answers.parquet"
    assert export_dataset(store, out, "parquet") == 3
    loaded = datasets.Dataset.from_parquet(str(out))
    assert loaded.features["label"].names == names  # the names travel with the file


def test_a_fresh_store_exports_the_four_ag_news_topics(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "f.db")
    store.answers.record(AnswerInput(text="Cup final", user_label="Sports", annotator="anna", kind="correct"))
    dataset = answers_dataset(store)
    assert dataset.features["label"].names == ["World", "Sports", "Business", "Sci/Tech"]
    assert dataset[0]["label"] == 1 and dataset[0]["taxonomy_version"] == 1
