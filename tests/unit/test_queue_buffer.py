"""The server side of the page's buffered queue (web.page.labelling.BufferedQueue): items held under ids issued per
tab, answers bound to them, each op against the queue's rate limit, and items one tab holds kept from others."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.serving.limits import RateLimiter
from core.settings.policies import QueuePolicy, StoreLimits
from feedback.store import FeedbackStore
from testkit.fakes import Tab, TabIdentities, UnsureClassifier
from web.page.labelling import BUFFER, BufferedQueue, LabellingQueue
from web.server.session_memory import BoundedMap, queue_item_bytes


def make(tmp_path: Path, items: int = 20, per_minute: int = 1000) -> tuple[BufferedQueue, FeedbackStore]:
    store = FeedbackStore(tmp_path / "f.db", StoreLimits(writes_per_minute=10_000, address_writes_per_minute=10_000))
    store.pool.add([f"Buffered story {i} about ports, cups, banks and chips" for i in range(items)], source="t")
    queue = LabellingQueue(UnsureClassifier(), store, policy=QueuePolicy(), identities=TabIdentities(),  # type: ignore[arg-type]
                           limit=RateLimiter(per_minute, 60.0), items=BoundedMap(100, 10**7, queue_item_bytes))
    return BufferedQueue(queue), store


def sync(buffered: BufferedQueue, tab: Tab, ops: list[dict[str, str]], have: list[str], want: int = BUFFER
         ) -> dict[str, Any]:
    return buffered.sync(json.dumps({"ops": ops, "have": have, "want": want}), tab)


def test_answers_in_one_sync_are_stored_in_order_on_the_items_they_name(tmp_path: Path) -> None:
    buffered, store = make(tmp_path)
    tab = Tab("b1", "t1")
    first = sync(buffered, tab, [], [])
    items = first["items"]
    assert len(items) == BUFFER and len({item["text"] for item in items}) == BUFFER
    ops = [{"op": "answer", "shown": item["shown"], "label": label}
           for item, label in zip(items[:3], ["Sports", "Business", "World"], strict=True)]
    second = sync(buffered, tab, ops, [item["shown"] for item in items[3:]])
    assert [r["status"] for r in second["results"]] == ["saved"] * 3
    assert len(second["items"]) == 3  # topped up again, with new items only
    assert not {i["text"] for i in second["items"]} & {i["text"] for i in items}
    stored = {row["text"]: row["user_label"] for row in store.answers.rows()}
    assert [stored[item["text"]] for item in items[:3]] == ["Sports", "Business", "World"]
    assert "labelled **3**" in second["progress"]
    # Sent again (its answer was lost on the way back): saved once, not twice.
    again = sync(buffered, tab, ops[:1], [])
    assert again["results"][0]["status"] == "saved" and store.answers.count() == 3


def test_an_id_this_tab_was_not_given_stores_nothing(tmp_path: Path) -> None:
    buffered, store = make(tmp_path)
    mine = sync(buffered, Tab("b1", "t1"), [], [])["items"]
    theirs = sync(buffered, Tab("b2", "t1"), [], [])["items"]
    for shown in (theirs[0]["shown"], "made-up", ""):
        result = sync(buffered, Tab("b1", "t1"), [{"op": "answer", "shown": shown, "label": "World"}],
                      [item["shown"] for item in mine])["results"][0]
        assert result["status"] == "stale"
    bad = sync(buffered, Tab("b1", "t1"), [{"op": "answer", "shown": mine[0]["shown"], "label": "Nonsense"}],
               [item["shown"] for item in mine])["results"][0]
    assert bad["status"] == "refused"
    assert store.answers.count() == 0


def test_two_tabs_are_not_given_the_same_items_while_others_are_left(tmp_path: Path) -> None:
    buffered, _ = make(tmp_path, items=12)
    one = {item["text"] for item in sync(buffered, Tab("b1", "t1"), [], [])["items"]}
    two = {item["text"] for item in sync(buffered, Tab("b2", "t1"), [], [])["items"]}
    assert len(one) == len(two) == BUFFER and not one & two
    # Only 2 items are left unheld: a third tab gets those, then shares items held by the others.
    three = {item["text"] for item in sync(buffered, Tab("b3", "t1"), [], [])["items"]}
    assert len(three) == BUFFER and len(three - one - two) == 2


def test_every_op_counts_against_the_queue_limit(tmp_path: Path) -> None:
    buffered, store = make(tmp_path, per_minute=4)
    tab = Tab("b1", "t1")
    items = sync(buffered, tab, [], [])["items"]  # a refill alone: 1
    ops = [{"op": "answer", "shown": item["shown"], "label": "World"} for item in items[:4]]
    out = sync(buffered, tab, ops, [item["shown"] for item in items[4:]])  # 3 fit, the 4th waits
    assert [r["status"] for r in out["results"]] == ["saved", "saved", "saved", "retry"]
    assert out["retry_s"] > 0 and store.answers.count() == 3


@pytest.mark.parametrize("payload", ["", "not json", "[]", json.dumps({"ops": "x", "have": 3, "want": "many"}),
                                     json.dumps({"ops": [{"op": "drop tables"}], "want": True})])
def test_a_malformed_sync_is_read_as_asking_for_nothing(tmp_path: Path, payload: str) -> None:
    buffered, store = make(tmp_path)
    out = buffered.sync(payload, Tab("b1", "t1"))
    assert out["results"] == [] and out["items"] == [] and store.answers.count() == 0
