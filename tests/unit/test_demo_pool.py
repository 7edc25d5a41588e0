"""The demo pool (feedback.labelling.demo): a fresh store offers the shipped articles, marked 'demo'; a host's
first import of articles removes those nobody answered; an empty queue says where articles come from."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import sqlalchemy as sa

from core.settings.config import SEED_CSV
from core.settings.policies import QueuePolicy
from core.text import text_hash
from feedback.database.tables import pool
from feedback.labelling.answers import AnswerInput
from feedback.labelling.demo import DEMO_FILE, DEMO_SOURCE
from testkit.data import SHARED_AG_NEWS
from testkit.pg_cluster import StoreFactory
from tests.unit.test_queue_buffer import Tab as BufferTab
from tests.unit.test_queue_buffer import make, sync


def sources(store) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with store.database.read() as conn:
        return dict(conn.execute(sa.select(pool.c.source, sa.func.count()).group_by(pool.c.source)).all())


def demo_texts() -> list[str]:
    with DEMO_FILE.open(encoding="utf-8") as handle:
        return [row["text"] for row in csv.DictReader(handle)]


def titles(path: Path) -> set[str]:
    """The normalised titles of a CSV with a `title` column (the seed set, AG News)."""
    with path.open(encoding="utf-8", newline="") as handle:
        return {text_hash(row["title"]) for row in csv.DictReader(handle) if row.get("title")}


def test_the_demo_articles_are_the_projects_own() -> None:
    texts = demo_texts()
    assert 30 <= len(texts) <= 60 and len({text_hash(t) for t in texts}) == len(texts)
    headlines = {text_hash(t.split(". ", 1)[0]) for t in texts}
    # Not the seed set the starter learns from, nor (where the CSVs are at hand) AG News rows.
    assert not headlines & titles(SEED_CSV)
    for name in ("train.csv", "test.csv"):
        if (SHARED_AG_NEWS / name).is_file():
            assert not headlines & titles(SHARED_AG_NEWS / name)


def test_an_empty_store_is_offered_the_demo_pool_once(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "f.db")
    assert store.pool.offer_demo() == len(demo_texts())
    assert sources(store) == {DEMO_SOURCE: len(demo_texts())}
    assert store.pool.offer_demo() == 0 and store.stats()["pool"]["items"] == len(demo_texts())
    assert store.pool.next_item("anon:a", QueuePolicy(), holder="tab") is not None


def test_a_store_with_articles_gets_no_demo_pool(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "f.db")
    store.pool.add(["A host's own article about the harbour strike"], source="host.csv")
    assert store.pool.offer_demo() == 0 and sources(store) == {"host.csv": 1}


def test_a_first_import_replaces_the_unanswered_demo_articles(make_store: StoreFactory, tmp_path: Path) -> None:
    store = make_store(tmp_path / "f.db")
    store.pool.offer_demo()
    policy = QueuePolicy(traffic_share=0.0)
    answered = store.pool.next_item("anon:a", policy, holder="tab-a")
    assert answered is not None
    store.answers.record(AnswerInput(text=answered["text"], user_label="World", annotator="anon:a", kind="queue",
                 item_id=answered["id"]))
    skipped = store.pool.next_item("anon:b", policy, holder="tab-b")  # skipped and held: both go with the item
    assert skipped is not None and skipped["id"] != answered["id"]
    store.pool.skip("anon:b", skipped["id"])
    checks = tmp_path / "checks.csv"
    checks.write_text("text,label\nA known answer about a cup final,Sports\n", encoding="utf-8")
    assert store.pool.import_file(checks, checks=True).demo_removed == 0  # checks are not articles to label
    articles = tmp_path / "articles.csv"
    articles.write_text("text\nThe host's first article\nThe host's second article\n", encoding="utf-8")
    report = store.pool.import_file(articles)
    assert report.added == 2 and report.demo_removed == len(demo_texts()) - 1
    assert sources(store) == {DEMO_SOURCE: 1, "articles.csv": 2, "checks.csv": 1}
    assert store.pool.import_file(articles).demo_removed == 0  # nothing new: nothing replaced


def test_an_empty_queue_says_where_articles_come_from(tmp_path: Path) -> None:
    buffered, _ = make(tmp_path, items=0)
    out = sync(buffered, BufferTab("b1", "t1"), [], [])
    assert out["empty"] and out["items"] == []
    assert "maintainer" in out["progress"] and "newsloop import FILE" in out["progress"]
    assert "again" not in json.dumps(out).lower()
