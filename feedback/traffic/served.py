"""What was served, kept as tallies: per UTC day, input form and model version, the counts and sums from which the
champion's accuracy on its traffic is estimated (core.evaluation.estimate.Tally). No text is kept.

Each writing process (a server, a replica) owns its rows (`writer`) and writes its whole running tally each time,
replacing its row: no read-modify-write, so replicas never lose each other's counts and a write may be repeated.
Readers sum the writers' rows.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass

import sqlalchemy as sa

from core.evaluation.estimate import Tally
from feedback.database.db import Database, iso_time
from feedback.database.query import insert_on_conflict
from feedback.database.tables import served_tallies


@dataclass(frozen=True, order=True)
class TallyKey:
    """Which day (UTC, YYYY-MM-DD), input form (core.data.InputForm value) and model version a tally counts."""

    day: str
    form: str
    model_version: str


def utc_day(timestamp: float | None = None) -> str:
    """The UTC day of `timestamp` (now by default), as the tallies name it."""
    return time.strftime("%Y-%m-%d", time.gmtime(time.time() if timestamp is None else timestamp))


def save_tallies(db: Database, writer: str, tallies: Mapping[TallyKey, Tally]) -> None:
    """Write `writer`'s running tallies, each replacing that writer's row for its key."""
    if not tallies:
        return
    now = iso_time(time.time())
    values = [{"day": key.day, "form": key.form, "model_version": key.model_version, "writer": writer,
               "n": tally.n, "confidence_sum": tally.confidence_sum, "variance_sum": tally.variance_sum,
               "confusion": json.dumps(tally.confusion), "confidence_counts": json.dumps(tally.confidence_counts),
               "updated_at": now} for key, tally in sorted(tallies.items())]
    with db.write("served", relaxed=True) as conn:
        statement = insert_on_conflict(conn, served_tallies)
        conn.execute(statement.on_conflict_do_update(
            index_elements=["day", "form", "model_version", "writer"],
            set_={name: statement.excluded[name] for name in
                  ("n", "confidence_sum", "variance_sum", "confusion", "confidence_counts", "updated_at")},
        ), values)


def read_tallies(db: Database, since_day: str = "", model_version: str | None = None) -> dict[TallyKey, Tally]:
    """Every writer's tallies summed, per key, for days from `since_day` on (and one version, if given)."""
    query = sa.select(served_tallies).where(served_tallies.c.day >= since_day)
    if model_version is not None:
        query = query.where(served_tallies.c.model_version == model_version)
    summed: dict[TallyKey, Tally] = {}
    with db.read() as conn:
        for row in conn.execute(query).mappings():
            key = TallyKey(row["day"], row["form"], row["model_version"])
            tally = Tally(n=int(row["n"]), confidence_sum=float(row["confidence_sum"]),
                          variance_sum=float(row["variance_sum"]),
                          confusion=tuple(tuple(float(x) for x in r) for r in json.loads(row["confusion"])),
                          confidence_counts=tuple(int(x) for x in json.loads(row["confidence_counts"])))
            summed[key] = summed.get(key, Tally()) + tally
    return summed
