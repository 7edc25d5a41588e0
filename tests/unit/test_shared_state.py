"""State replicas share through the feedback database: rate limits, admin sessions, queue items, the retrain lock."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.serving.limits import RateLimiter
from core.storage.paths import HomePaths
from feedback.database.shared_state import (
    Busy,
    SharedAdminSessions,
    SharedMap,
    SharedRateLimiter,
    database_lock,
    shared_failure_throttle,
)
from retrain.state import RetrainBusy, retrain_lock
from testkit.fakes import FixedClock
from testkit.pg_cluster import Cluster, StoreFactory
from testkit.races import at_once


def test_rate_limit_counts_the_hits_of_every_replica(make_store: StoreFactory, tmp_path: Path) -> None:
    clock = FixedClock()
    one, two = (make_store(tmp_path / "f.db").database for _ in range(2))  # two processes' own connections
    a, b = SharedRateLimiter(one, "classify", 3, 60.0, clock), SharedRateLimiter(two, "classify", 3, 60.0, clock)
    assert [a.check("client"), b.check("client"), a.check("client")] == [0.0, 0.0, 0.0]
    clock.now += 10
    assert b.check("client") == pytest.approx(50.0) and a.peek("client") == pytest.approx(50.0)
    assert b.check("someone else") == 0.0
    assert SharedRateLimiter(one, "queue", 3, 60.0, clock).check("client") == 0.0  # buckets are separate
    clock.now += 51
    assert b.peek("client") == 0.0 and a.check("client") == 0.0


def test_racing_replicas_never_get_more_than_the_limit(make_store: StoreFactory, tmp_path: Path) -> None:
    limiters = [SharedRateLimiter(make_store(tmp_path / "f.db").database, "classify", 5, 60.0) for _ in range(4)]
    allowed = at_once(12, lambda i: limiters[i % 4].check("client") == 0.0)
    assert sum(allowed) == 5


def test_admin_session_opened_on_one_replica_is_valid_on_the_other_until_it_expires(
    make_store: StoreFactory, tmp_path: Path
) -> None:
    clock = FixedClock()
    one, two = (SharedAdminSessions(make_store(tmp_path / "f.db").database, 600.0, clock) for _ in range(2))
    one.open("browser-1")
    assert two.valid("browser-1") and not two.valid("browser-2") and not two.valid("")
    with pytest.raises(ValueError, match="needs a browser id"):
        one.open("")
    clock.now += 601
    assert not two.valid("browser-1")
    one.open("browser-1")
    two.close("browser-1")
    assert not one.valid("browser-1")


def test_queue_item_given_by_one_replica_is_answered_on_the_other(make_store: StoreFactory, tmp_path: Path) -> None:
    clock = FixedClock()
    one, two = (SharedMap(make_store(tmp_path / "f.db").database, "queue_item", 3600.0, clock) for _ in range(2))
    item = {"id": 7, "text": "An article", "uncertainty": 0.5}
    one.put("session-a", item)
    assert two.get("session-a") == item and two.get("session-b") is None
    one.put("session-a", item | {"id": 8})
    assert two.pop("session-a")["id"] == 8 and one.get("session-a") is None and one.pop("session-a") is None
    one.put("session-c", item)
    clock.now += 3601
    assert two.get("session-c") is None


def test_retrain_lock_on_the_database_excludes_other_machines(pg_cluster: Cluster, tmp_path: Path) -> None:
    url = pg_cluster.create_database()
    # Two machines: two homes, so the file lock cannot be what stops the second.
    with retrain_lock(HomePaths(tmp_path / "a"), url):
        with pytest.raises(RetrainBusy):
            (tmp_path / "b").mkdir()
            with retrain_lock(HomePaths(tmp_path / "b"), url):
                pass
        with pytest.raises(Busy), database_lock(url):
            pass
    with retrain_lock(HomePaths(tmp_path / "b"), url):  # released when the holder is done
        pass


def test_a_shared_limiter_is_the_in_memory_rule_over_a_database_store(make_store: StoreFactory, tmp_path: Path) -> None:
    clock = FixedClock()
    shared = SharedRateLimiter(make_store(tmp_path / "f.db").database, "classify", 3, 60.0, clock)
    memory = RateLimiter(3, 60.0, clock)
    for step in (0, 1, 1, 5, 30, 24, 0.5, 60):  # the same events give the same answers, whichever store
        clock.now += step
        assert shared.check("client", cost=2 if step == 5 else 1) == pytest.approx(memory.check("client", cost=2 if step == 5 else 1))
        assert shared.peek("client") == pytest.approx(memory.peek("client"))
    assert shared.check("client", cost=4) == memory.check("client", cost=4) == 60.0  # more than the limit at once


def test_sign_in_failures_counted_in_the_database_throttle_every_replica(make_store: StoreFactory, tmp_path: Path) -> None:
    one, two = (shared_failure_throttle(make_store(tmp_path / "f.db").database, per_key=2, everyone=3) for _ in range(2))
    assert isinstance(one.per_key, RateLimiter) and isinstance(one.everyone, RateLimiter)  # the one limiter
    one.failed("addr:a")
    assert two.wait("addr:a") == 0.0 and two.delay() == 0.0
    two.failed("addr:a")
    assert one.wait("addr:a") > 0 and one.wait("addr:b") == 0.0
    one.failed("addr:b")
    two.failed("addr:c")  # four failures from everyone: over the shared limit of 3, so every attempt is slowed
    assert one.delay() == two.delay() == one.slow_s


def test_shared_web_state_keeps_the_page_state_in_the_database(make_store: StoreFactory, tmp_path: Path) -> None:
    from app import identity_service, shared_web_state
    from core.registry.versions import ModelRegistry
    from testkit.models import tiny_settings
    from web.admin.actions import AdminActions, AdminShared
    from web.admin.jobs import RetrainJobs
    from web.page.actions import NewsLoopActions, PageShared
    from web.server.serving import PageLimits

    store = make_store(tmp_path / "f.db")
    settings = tiny_settings(tmp_path / "home", classify_per_minute=2, admin_session_minutes=5,
                             database_url=str(store.path))
    assert shared_web_state(tiny_settings(tmp_path / "home"), store) == ({}, {})  # no database URL: in memory

    def replica() -> tuple[NewsLoopActions, AdminActions]:
        identities = identity_service(settings)
        page_state, admin_state = shared_web_state(settings, store)
        actions = NewsLoopActions(None, store, limits=PageLimits.from_settings(settings), queue=settings.queue,
                                  identities=identities, shared=PageShared(**page_state))
        admin = AdminActions(store, registry=ModelRegistry(tmp_path / "models"), jobs=RetrainJobs(settings.paths),
                             identities=identities, shared=AdminShared(**admin_state))
        return actions, admin

    (one, one_admin), (two, two_admin) = replica(), replica()
    assert one.classify_limit.check("client") == two.classify_limit.check("client") == 0.0
    assert one.classify_limit.check("client") > 0  # the limit of 2 a minute counts both replicas
    one.queue_items.put("session", {"id": 1, "text": "An article"})
    assert two.queue_items.get("session") == {"id": 1, "text": "An article"}
    one_admin.sessions.open("browser")
    assert two_admin.sessions.valid("browser") and two_admin.sessions.ttl_s == 300.0
    for _ in range(5):  # failed sign-ins on one replica lock that address out on the other too
        one_admin.throttle.failed("addr:guesser")
    assert two_admin.throttle.wait("addr:guesser") > 0 and two_admin.throttle.wait("addr:admin") == 0
    ticket = one_admin.tickets.issue("browser", admin=True)  # issued by the sign-in on one replica...
    assert two_admin.tickets.redeem(ticket, "browser") is True  # ...redeemed by the tab's request on the other
    assert one_admin.tickets.redeem(ticket, "browser") is None
