"""The pool is scored in the background (feedback.labelling.scoring): items added while the server runs become
scored by the champion without any queue request, a new champion scores them again, and a failing round is
tried again; the queue's own requests never score."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from core.settings.policies import QueuePolicy
from feedback.database.tables import pool
from feedback.labelling.scoring import PoolScoring
from feedback.store import FeedbackStore
from testkit.fakes import StandInModel, TabIdentities
from web.page.actions import NewsLoopActions
from web.server.serving import PageLimits

TIMEOUT_S = 60.0  # generous: a loaded CI machine may be slow; the thread looks every 0.05 s here


def eventually(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


class Champion:
    """A scorer whose version can change, that counts the texts it scored and can be made to fail."""

    def __init__(self) -> None:
        self.version: str | None = "v1"
        self.scored: list[str] = []
        self.failing = False
        self.lock = threading.Lock()

    def __call__(self, texts: list[str]) -> np.ndarray:
        if self.failing:
            raise RuntimeError("the model is being swapped")
        with self.lock:
            self.scored += texts
        return np.array([[0.4, 0.3, 0.2, 0.1] if "sure" not in t else [0.97, 0.01, 0.01, 0.01] for t in texts])


def scored_by(store: FeedbackStore) -> dict[str, str | None]:
    with store.database.read() as conn:
        return {text: by for text, by in conn.execute(pool.select().with_only_columns(pool.c.text, pool.c.scored_by))}


@pytest.fixture
def running(tmp_path: Path):  # type: ignore[no-untyped-def]
    store = FeedbackStore(tmp_path / "f.db")
    champion = Champion()
    scoring = PoolScoring(store.pool, lambda: champion.version, champion, interval_s=0.05)
    scoring.start()
    yield store, champion, scoring
    scoring.stop()


def test_items_added_while_running_are_scored_without_a_queue_request(running) -> None:  # type: ignore[no-untyped-def]
    store, champion, _ = running
    store.pool.add([f"Imported story {i} about ports and banks" for i in range(40)], source="import.csv")
    eventually(lambda: set(scored_by(store).values()) == {"v1"}, "every imported item scored by v1")
    assert store.stats()["pool"]["scored"] == 40
    # A new champion scores every item again, by itself.
    champion.version = "v2"
    eventually(lambda: set(scored_by(store).values()) == {"v2"}, "every item scored again by v2")
    assert len(champion.scored) == 80


def test_a_failed_round_is_tried_again(running) -> None:  # type: ignore[no-untyped-def]
    store, champion, _ = running
    champion.failing = True
    store.pool.add(["A story the model cannot score yet"], source="t")
    time.sleep(0.3)  # several looks, each failing
    assert scored_by(store) == {"A story the model cannot score yet": None}
    champion.failing = False
    eventually(lambda: set(scored_by(store).values()) == {"v1"}, "scored once the model works again")


def test_nothing_is_scored_without_a_champion(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "f.db")
    store.pool.add(["A story"], source="t")
    champion = Champion()
    champion.version = None
    assert PoolScoring(store.pool, lambda: champion.version, champion, interval_s=60).run_once() == 0
    assert champion.scored == [] and scored_by(store) == {"A story": None}


class NeverScores:
    """A champion that fails the test if anything asks it to score the pool."""

    version = "v1"
    model = StandInModel()

    def predict(self, texts: list[str]) -> list[object]:
        raise AssertionError("nothing is classified here")

    def proba_in_label_order(self, texts: list[str]) -> np.ndarray:
        raise AssertionError("the queue scored the pool inside a labeller's request")




def test_the_page_queue_serves_unscored_items_at_once_without_scoring(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "f.db")
    store.pool.add([f"Unscored story {i} about ports and banks" for i in range(8)], source="t")
    actions = NewsLoopActions(NeverScores(), store, limits=PageLimits(), queue=QueuePolicy(),  # type: ignore[arg-type]
                              identities=TabIdentities())  # type: ignore[arg-type]
    out = actions.buffered.sync(json.dumps({"ops": [], "have": [], "want": 5}), object())
    assert len(out["items"]) == 5 and not out["error"]
    assert store.stats()["pool"]["scored"] == 0


def test_unscored_items_are_never_mixed_in_with_the_least_sure(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "f.db")
    store.pool.add([f"Scored story {i}" for i in range(3)], source="t")
    store.pool.rescore(lambda texts: np.tile([0.4, 0.3, 0.2, 0.1], (len(texts), 1)), "v1")
    store.pool.add([f"New unscored story {i}" for i in range(5)], source="t")
    policy = QueuePolicy(traffic_share=0.0)
    served = []
    for _ in range(8):
        item = store.pool.next_item("anon:a", policy, holder="tab")
        assert item is not None
        served.append(item["text"])
        store.pool.skip("anon:a", item["id"])
    # The three scored ones first (the least sure), then the new ones.
    assert sorted(served[:3]) == [f"Scored story {i}" for i in range(3)]
    assert sorted(served[3:]) == [f"New unscored story {i}" for i in range(5)]


def test_after_each_batch_the_thread_rests_as_long_as_the_batch_took(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "f.db")
    store.pool.add([f"Paced story {i}" for i in range(70)], source="t")  # three batches of at most 32
    now = [0.0]
    batches: list[int] = []

    def scorer(texts: list[str]) -> np.ndarray:
        batches.append(len(texts))
        now[0] += 0.25  # each batch "takes" 0.25 s on the fake clock
        return np.tile([0.4, 0.3, 0.2, 0.1], (len(texts), 1))

    scoring = PoolScoring(store.pool, lambda: "v1", scorer, interval_s=60, clock=lambda: now[0])
    rests: list[float] = []
    scoring._stopped.wait = lambda timeout=None: rests.append(timeout) or False  # type: ignore[method-assign]
    assert scoring.run_once() == 70
    assert batches == [32, 32, 6] and rests == [0.25, 0.25, 0.25]


def test_a_round_keeps_each_items_likeliest_topic_under_the_champions_own_labels(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "f.db")
    store.pool.add(["an article"], source="test")
    labels = ("Sci/Tech", "Business", "World", "Sports")  # the champion's own order, not the taxonomy's
    assert PoolScoring(store.pool, lambda: "v1", Champion(), interval_s=60.0, labels=lambda: labels).run_once() == 1
    with store.database.read() as conn:
        top_key, probabilities = conn.execute(pool.select().with_only_columns(pool.c.top_key,
                                                                              pool.c.probabilities)).one()
    assert top_key == "Sci/Tech" and list(json.loads(probabilities)) == list(labels)
