"""What people see of the data before they label (core.samples): Classify's examples and the demo pool are the
data's own training rows, one example per topic; the project's AG News texts only when the data is AG News."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.data import DataSourceError, Example, load_corpus
from core.samples import AG_NEWS_EXAMPLES, DEMO_COUNT, data_samples, pick
from feedback.labelling.demo import DEMO_FILE
from feedback.store import FeedbackStore
from testkit.data import OWN_TOPICS, own_topics_csv


def test_one_example_per_topic_in_the_topics_order_and_demo_articles_taking_turns() -> None:
    rows = [Example(f"{topic} story number {i}: " + "words " * 20, label)
            for label, topic in enumerate(("Weather", "Elections", "Football")) for i in range(30)]
    examples, demo = pick(rows, ("Weather", "Elections", "Football"))
    assert [e.split(" ")[0] for e in examples] == ["Weather", "Elections", "Football"]
    assert len(demo) == DEMO_COUNT and not set(demo) & set(examples)
    firsts = [d.split(" ")[0] for d in demo[:6]]
    assert firsts == ["Weather", "Elections", "Football"] * 2  # turns, so every topic is in the first minute
    assert pick(rows, ("Weather", "Elections", "Football")) == (examples, demo)  # the same data, the same articles


def test_an_example_reads_at_a_glance_when_the_data_has_one() -> None:
    rows = [Example("Short.", 0), Example("A headline of a fair length, and then a sentence or two that say what happened and where.", 0),
            Example("x " * 400, 0)]
    assert pick(rows, ("Only",))[0] == ("A headline of a fair length, and then a sentence or two that say what happened and where.",)


def test_data_of_your_own_topics_shows_its_own_training_rows_never_ag_news(tmp_path: Path) -> None:
    source = str(own_topics_csv(tmp_path / "own.csv"))
    samples = data_samples(source, 0.1, True)
    corpus = load_corpus(source, 0.1, True)
    train = {e.text for e in corpus.train}
    assert len(samples.examples) == len(OWN_TOPICS) and set(samples.examples) <= train
    assert samples.demo and set(samples.demo) <= train  # never a validation row: those judge challengers
    assert not set(samples.examples) & set(AG_NEWS_EXAMPLES)
    assert samples.source.startswith("own.csv")


def test_ag_news_data_shows_the_projects_own_examples_and_demo_pool() -> None:
    samples = data_samples("seed", 0.1, True)
    assert samples.examples == AG_NEWS_EXAMPLES and samples.demo == ()  # () : the shipped demo pool
    assert data_samples("ag_news", 0.1, True).examples == AG_NEWS_EXAMPLES  # a hub id: nothing is downloaded


def test_a_maintainers_examples_file_sets_classifys_examples(tmp_path: Path) -> None:
    chosen = tmp_path / "examples.csv"
    chosen.write_text("label,text\nSport,Our own sports example\nSport,A second one\nMoney,Our money example\n",
                      encoding="utf-8")
    samples = data_samples(str(own_topics_csv(tmp_path / "own.csv")), 0.1, True, str(chosen))
    assert samples.examples == ("Our own sports example", "Our money example")
    with pytest.raises(DataSourceError, match="missing.csv"):
        data_samples("seed", 0.1, True, str(tmp_path / "missing.csv"))


def test_an_empty_pool_is_offered_the_datas_demo_articles(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "feedback.db")
    samples = data_samples(str(own_topics_csv(tmp_path / "own.csv")), 0.1, True)
    assert store.pool.offer_demo(samples.demo) == len(samples.demo)
    texts = {item["text"] for item in store.pool.next_items("ann", _policy(), 100)}
    shipped = DEMO_FILE.read_text(encoding="utf-8")
    assert texts and texts <= set(samples.demo) and not any(text[:40] in shipped for text in texts)
    store.close()


def _policy():  # type: ignore[no-untyped-def]
    from core.settings.policies import QueuePolicy

    return QueuePolicy(traffic_share=0.0, min_checks=1)
