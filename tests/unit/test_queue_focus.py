"""A queue that finds a new topic, on SQLite and PostgreSQL: the migration's columns; the focus for a split and an
added topic on hand-made probabilities; the draw's focus, traffic and uncertainty turns; the topic stops being
taught at `teach_until` answers; a maintainer's pushed search comes first for everyone until cleared (the store, the
command line and the admin box)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa

from core.labels import LABELS
from core.settings.policies import QueuePolicy
from core.taxonomy import starting
from feedback.database.tables import pool
from feedback.labelling.answers import AnswerInput
from feedback.labelling.focus import Teaching, focus_scores, interleaved, is_focus_turn, model_focus, teaching
from feedback.store import FeedbackStore
from feedback.traffic.traffic_set import is_traffic_turn
from testkit.fakes import FakeAdmin
from testkit.pg_cluster import StoreFactory
from web.admin.queue_view import QueueSearch

REQUEST = object()
WORLD, SPORTS, BUSINESS, SCI = LABELS


@pytest.fixture
def store(make_store: StoreFactory, tmp_path: Path) -> FeedbackStore:
    return make_store(tmp_path / "feedback.db")


def scorer(table: dict[str, list[float]]):
    """A fake model over the AG News four: each text's probabilities by the first word of the table it contains."""

    def score(texts: list[str]) -> np.ndarray:
        return np.array([next(p for word, p in table.items() if word in text) for text in texts])

    return score


def test_the_migration_adds_the_queue_columns(store: FeedbackStore) -> None:
    columns = {c["name"] for c in sa.inspect(store.database.engine).get_columns("pool")}
    assert {"top_key", "top_prob", "probabilities", "focus", "pushed", "pushed_by", "pushed_at"} <= columns


# The focus itself (pure) -------------------------------------------------------------------------------------------


def test_a_split_teaches_the_parent_items_least_sure_between_parent_and_child() -> None:
    known = Teaching("split", "Space", SCI, "Space", 2)
    assert model_focus(known, {SCI: 0.5, "Space": 0.4, WORLD: 0.1}) == pytest.approx(0.9)
    assert model_focus(known, {SCI: 0.1, "Space": 0.8, WORLD: 0.1}) == pytest.approx(0.3)
    assert model_focus(known, {WORLD: 0.6, SCI: 0.2, "Space": 0.2}) is None  # read as neither
    # The model does not predict the child yet: the items it reads as the parent, in a fixed random order (its
    # certainty among its own topics says nothing of the child).
    assert model_focus(known, {SCI: 0.7, WORLD: 0.3}, draw=0.42) == pytest.approx(0.42)
    assert model_focus(known, {SCI: 0.99, WORLD: 0.01}, draw=0.42) == pytest.approx(0.42)
    assert model_focus(known, {WORLD: 0.7, SCI: 0.3}) is None
    texts = [f"article {i}" for i in range(200)]
    read_as_parent = [{SCI: 0.6 + i / 1000, WORLD: 0.4 - i / 1000} for i in range(200)]
    scores = focus_scores(known, starting(LABELS).split(SCI, "Space"), read_as_parent, [0.0] * 200, texts)
    order = sorted(range(200), key=lambda i: -(scores[i] or 0.0))
    assert scores == focus_scores(known, starting(LABELS).split(SCI, "Space"), read_as_parent, [0.0] * 200, texts)
    # Not by certainty: the most uncertain half does not fill the front of the order.
    assert 30 < sum(i < 100 for i in order[:100]) < 70


def test_a_new_topic_teaches_the_items_read_as_none_of_its_topics_well() -> None:
    added = Teaching("add", "Climate", "", "Climate", 2)
    assert model_focus(added, {WORLD: 0.4, SPORTS: 0.3, BUSINESS: 0.3}) == pytest.approx(0.6)
    assert model_focus(added, {WORLD: 0.97, SPORTS: 0.03}) == pytest.approx(0.03)
    # Once the model predicts it: nearest the boundary between it and its likeliest rival.
    assert model_focus(added, {WORLD: 0.45, "Climate": 0.4, SPORTS: 0.15}) == pytest.approx(0.95)


def test_the_maintainers_words_and_the_model_take_turns_at_the_top() -> None:
    assert interleaved([0.9, 0.1, None, 0.5], [None, 0.8, 0.3, None]) == [1.0, 1.0, 0.5, 0.5]
    taxonomy = starting(LABELS).add("Climate")
    scores = focus_scores(teaching(taxonomy, {}, 10) or pytest.fail("no topic taught"), taxonomy,
                          [{WORLD: 0.9, SPORTS: 0.1}, {WORLD: 0.5, SPORTS: 0.5}, None], [0.0, 0.0, 0.7])
    assert scores == [0.5, 1.0, 1.0]


def test_the_topic_taught_is_the_newest_added_or_split_with_too_few_answers() -> None:
    taxonomy = starting(LABELS).add("Climate", "wildfires and droughts").split(SCI, "Space")
    assert teaching(taxonomy, {}, 5) == Teaching("split", "Space", SCI, "Space", 3)
    older = teaching(taxonomy, {"Space": 5}, 5)
    assert older is not None and (older.kind, older.key, older.words) == ("add", "Climate",
                                                                         "Climate wildfires and droughts")
    assert teaching(taxonomy, {"Space": 5, "Climate": 9}, 5) is None
    assert teaching(starting(LABELS).describe(WORLD, "abroad"), {}, 5) is None


# The draw ----------------------------------------------------------------------------------------------------------


def _pool_for_a_split(store: FeedbackStore) -> None:
    """20 items of each kind: traffic, read as Sci/Tech unsure (the split's focus), and most uncertain elsewhere."""
    store.pool.add([f"traffic article {i}" for i in range(20)], source="t")
    store.pool.add([f"gadget review {i}" for i in range(20)], source="t")
    store.pool.add([f"election coverage {i}" for i in range(20)], source="t")
    with store.database.write() as db:
        db.execute(sa.update(pool).values(traffic=sa.case((pool.c.text.like("traffic%"), 1), else_=0)))
    store.topics.commit(store.topics.current().split(SCI, "Space"), 1)
    store.pool.rescore(scorer({"traffic": [0.9, 0.1, 0, 0], "gadget": [0.4, 0, 0, 0.6],
                          "election": [0.5, 0.5, 0, 0]}), "v1", labels=LABELS)


def test_focus_turns_serve_the_split_parents_unsure_items_and_traffic_turns_traffic(store: FeedbackStore) -> None:
    _pool_for_a_split(store)
    policy = QueuePolicy(traffic_share=0.2, focus_share=0.5, spread=4, teach_until=50)
    kinds = {"traffic": "traffic", "gadget": "focus", "election": "uncertain"}
    served, expected = [], []
    for position in range(20):
        item = store.pool.next_item("anna", policy)
        assert item is not None
        served.append(kinds[item["text"].split()[0]])
        expected.append("traffic" if is_traffic_turn("anna", position, 0.2)
                        else "focus" if is_focus_turn("anna", position, 0.5) else "uncertain")
        store.pool.skip("anna", item["id"])
    assert served == expected and {"traffic", "focus", "uncertain"} <= set(served)


def test_the_queue_stops_teaching_a_topic_once_it_has_enough_answers(store: FeedbackStore) -> None:
    _pool_for_a_split(store)
    policy = QueuePolicy(traffic_share=0.0, focus_share=1.0, spread=4, teach_until=3)
    assert store.pool.next_item("anna", policy)["text"].startswith("gadget")
    for i in range(3):
        store.answers.record(AnswerInput(text=f"A rocket launch {i}", user_label="Space", annotator=f"a{i}", kind="correct"))
    assert store.pool.next_item("anna", policy)["text"].startswith("election")  # the most uncertain, as before
    assert store.pool.refocus(policy.teach_until) is None
    with store.database.read() as db:
        assert db.execute(sa.select(sa.func.count()).where(pool.c.focus.is_not(None))).scalar() == 0


def test_rescoring_keeps_the_models_likeliest_topic(store: FeedbackStore) -> None:
    store.pool.add(["gadget review"], source="t")
    store.pool.rescore(scorer({"gadget": [0.1, 0.2, 0.3, 0.4]}), "v1", labels=[SPORTS, WORLD, BUSINESS, SCI])
    with store.database.read() as db:
        top_key, top_prob = db.execute(sa.select(pool.c.top_key, pool.c.top_prob)).one()
    assert (top_key, top_prob) == (SCI, pytest.approx(0.4))


# Pushed searches ---------------------------------------------------------------------------------------------------

ARTICLES = ["Wildfire smoke blankets the valley as drought deepens", "Central bank raises rates again",
            "Drought and wildfire season starts early in the west", "Striker signs for a record fee",
            "New phone has a bigger screen", "Parliament passes the budget"]


def _uncertain_pool(store: FeedbackStore) -> None:
    store.pool.add(ARTICLES, source="t")
    store.pool.rescore(scorer({"bank": [0.5, 0.5, 0, 0], "": [0.9, 0.1, 0, 0]}), "v1", labels=LABELS)


def test_a_pushed_search_comes_first_for_every_annotator_until_cleared(store: FeedbackStore) -> None:
    _uncertain_pool(store)
    policy = QueuePolicy(traffic_share=0.0, spread=4)
    assert store.pool.push_search("wildfire drought", 10, "maya") == 2  # only the two that share its words
    fires = {ARTICLES[0], ARTICLES[2]}
    for annotator in ("anna", "ben"):
        assert {item["text"] for item in store.pool.next_items(annotator, policy, 2)} == fires
    assert store.pool.pushed_waiting() == 2
    answered = store.pool.next_item("anna", policy)
    store.answers.record(AnswerInput(text=answered["text"], user_label=WORLD, annotator="anna", kind="queue", item_id=answered["id"]))
    assert store.pool.pushed_waiting() == 1
    assert store.pool.next_item("ben", policy)["text"] == (fires - {answered["text"]}).pop()  # settled: not served again
    assert store.pool.clear_pushed() == 2 and store.pool.pushed_waiting() == 0
    assert store.pool.next_item("ben", QueuePolicy(traffic_share=0.0, spread=1))["text"] == ARTICLES[1]  # most uncertain


def test_more_like_this_article_pushes_its_neighbours(store: FeedbackStore) -> None:
    _uncertain_pool(store)
    assert store.pool.push_search("A wildfire spread overnight; the drought left the hills dry.", 1, "maya") == 1
    assert store.pool.next_item("anna", QueuePolicy(traffic_share=0.0, spread=1))["text"] in {ARTICLES[0], ARTICLES[2]}


def test_the_admin_box_pushes_and_clears_and_a_stranger_cannot(store: FeedbackStore) -> None:
    _uncertain_pool(store)
    stranger = QueueSearch(FakeAdmin(store, admin=False))  # type: ignore[arg-type]
    assert stranger.push("wildfire", 50, request=REQUEST) == "Sign in first."  # type: ignore[arg-type]
    assert store.pool.pushed_waiting() == 0
    box = QueueSearch(FakeAdmin(store))  # type: ignore[arg-type]
    assert box.push("wildfire", 50, request=REQUEST).startswith("Pushed 2 articles")  # type: ignore[arg-type]
    assert "2 pushed articles wait" in box.load(request=REQUEST)  # type: ignore[arg-type]
    with store.database.read() as db:
        assert set(db.execute(sa.select(pool.c.pushed_by).where(pool.c.pushed.is_not(None))).scalars()) == {"maya"}
    assert box.push("  ", 50, request=REQUEST).startswith("Nothing pushed")  # type: ignore[arg-type]
    assert box.clear(request=REQUEST).startswith("Cleared 2 pushed articles")  # type: ignore[arg-type]
