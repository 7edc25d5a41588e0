"""Queue items a tab holds are held in the feedback database (feedback.labelling.reservations), so tabs on two
replicas (two stores over one database, on SQLite and on PostgreSQL) are never handed the same article while
others remain; holds end with an answer, a skip, a dropped item, or their expiry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.serving.limits import RateLimiter
from core.settings.policies import QueuePolicy, StoreLimits
from feedback.store import FeedbackStore
from testkit.fakes import FixedClock, Tab, TabIdentities, UnsureClassifier
from testkit.pg_cluster import StoreFactory
from testkit.races import at_once
from web.page.labelling import BUFFER, BufferedQueue, LabellingQueue
from web.server.session_memory import BoundedMap, queue_item_bytes

# The uncertainty order only (every tab draws from the same few), and an item stays wanted after one answer.
POLICY = QueuePolicy(traffic_share=0.0, labels_required=2)






def replicas(make_store: StoreFactory, tmp_path: Path, items: int, clock: FixedClock, n: int = 2
             ) -> tuple[list[BufferedQueue], list[FeedbackStore]]:
    """`n` replicas' queues, each over its own store (its own connections) on one database holding `items` items."""
    limits = StoreLimits(writes_per_minute=10_000, address_writes_per_minute=10_000)
    stores: list[FeedbackStore] = [make_store(tmp_path / "f.db", limits, clock=clock) for _ in range(n)]
    stores[0].pool.add([f"Replica story {i} about ports, cups, banks and chips" for i in range(items)], source="t")
    queues = [BufferedQueue(LabellingQueue(
        UnsureClassifier(), store, policy=POLICY, identities=TabIdentities(),  # type: ignore[arg-type]
        limit=RateLimiter(10_000, 60.0), items=BoundedMap(100, 10**7, queue_item_bytes))) for store in stores]
    return queues, stores


def sync(queue: BufferedQueue, tab: Tab, ops: list[dict[str, str]] | None = None, have: list[str] | None = None,
         want: int = BUFFER) -> dict[str, Any]:
    return queue.sync(json.dumps({"ops": ops or [], "have": have or [], "want": want}), tab)


def texts(out: dict[str, Any]) -> set[str]:
    return {item["text"] for item in out["items"]}


def test_tabs_on_two_replicas_are_not_given_the_same_items_while_others_remain(
    make_store: StoreFactory, tmp_path: Path
) -> None:
    (one, two), _ = replicas(make_store, tmp_path, items=12, clock=FixedClock())
    a = texts(sync(one, Tab("b1")))
    b = texts(sync(two, Tab("b2")))
    assert len(a) == len(b) == BUFFER and not a & b
    # Two items are left that nobody holds: a third tab gets both, then shares what the others hold.
    c = texts(sync(one, Tab("b3")))
    assert len(c) == BUFFER and len(c - a - b) == 2


def test_many_tabs_racing_on_two_replicas_never_share_an_item_while_others_remain(
    make_store: StoreFactory, tmp_path: Path
) -> None:
    tabs = 6
    queues, _ = replicas(make_store, tmp_path, items=tabs * BUFFER + 5, clock=FixedClock())
    given = at_once(tabs, lambda i: texts(sync(queues[i % 2], Tab(f"b{i}"))))
    every = [text for got in given for text in got]
    assert len(every) == tabs * BUFFER and len(set(every)) == len(every)


def test_items_a_tab_answers_or_drops_are_free_for_other_tabs_at_once(
    make_store: StoreFactory, tmp_path: Path
) -> None:
    (one, two), stores = replicas(make_store, tmp_path, items=2 * BUFFER, clock=FixedClock())
    first = sync(one, Tab("b1"))["items"]
    assert not texts({"items": first}) & texts(sync(two, Tab("b2")))  # every item is held now
    # b1 answers its first item and drops the rest (a reload): it asks for nothing more.
    out = sync(one, Tab("b1"), [{"op": "answer", "shown": first[0]["shown"], "label": "Sports"}], have=[], want=0)
    assert out["results"][0]["status"] == "saved" and stores[0].answers.count() == 1
    # On the other replica, a third tab is given exactly what b1 held (still wanted: 2 labels settle an item).
    assert texts(sync(two, Tab("b3"))) == texts({"items": first})


def test_a_hold_expires_so_a_closed_tab_does_not_keep_its_items(make_store: StoreFactory, tmp_path: Path) -> None:
    clock = FixedClock()
    (one, two), _ = replicas(make_store, tmp_path, items=2 * BUFFER, clock=clock)
    a = texts(sync(one, Tab("b1")))
    mine = sync(two, Tab("b2"))["items"]
    assert not a & texts({"items": mine})
    # b1's tab is closed; b2's keeps asking, which renews what it holds. After the hold's time, b3 is given what
    # b1 held, and nothing b2 holds.
    clock.now += POLICY.reservation_s / 2
    sync(two, Tab("b2"), have=[item["shown"] for item in mine])
    clock.now += POLICY.reservation_s / 2 + 1
    assert texts(sync(one, Tab("b3"))) == a


def test_a_batch_is_held_at_once_and_other_holders_get_the_rest_first(make_store: StoreFactory, tmp_path: Path) -> None:
    clock = FixedClock()
    one, two = (make_store(tmp_path / "f.db", clock=clock) for _ in range(2))
    one.pool.add([f"Batch story {i}" for i in range(6)], source="t")
    mine = one.pool.next_items("anon:a", POLICY, 4, holder="tab-a")
    assert len({item["id"] for item in mine}) == 4
    theirs = two.pool.next_items("anon:b", POLICY, 4, holder="tab-b")
    # The two nobody held come first, then two tab-a holds (nothing else is left); none twice.
    assert len({item["id"] for item in theirs}) == 4
    assert {item["id"] for item in theirs[:2]}.isdisjoint(item["id"] for item in mine)
    assert len({item["id"] for item in theirs[2:]} & {item["id"] for item in mine}) == 2
