"""The traffic set: pool items set aside by a random draw, offered in random turns of the queue, whose trusted
labels judge challengers and are never trained on (`feedback.training.snapshot`).

Why: the uncertainty queue asks about the items the champion finds hardest, so its labels are a biased,
small sample of what users send. A share of pool items, chosen by a salted hash of the text (independent
of any model), is kept out of the uncertainty order; a share of each annotator's queue turns offers one
of them, uniformly at random among the newest unlabelled ones. Their labels are an unbiased sample of the
pool on which the gate can show a gain.

An item's membership is drawn once, when the queue first sees it (`pool.traffic` NULL -> 0 or 1), so
changing the share later never moves an item that may have been trained on into the traffic set. Items
that already have answers when drawn are never traffic. A maintainer may raise the share from the admin page
(`maintain_share`), to get the gate the held-out articles it needs sooner.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import sqlalchemy as sa

from core.text import text_hash
from feedback.database.db import Database, iso_time
from feedback.database.query import count
from feedback.database.tables import answers, maintained, pool, skips
from feedback.errors import FeedbackError

SALT = "traffic"


def draw(digest: str) -> float:
    """A number in [0, 1) fixed by the text's hash (salted, so it is independent of the other hash splits)."""
    return int(hashlib.sha256(f"{SALT}\0{digest}".encode()).hexdigest()[:12], 16) / 16**12


SHARE_KEY = "traffic_share"  # the `maintained` row a maintainer's traffic share is kept in


def maintained_share(conn: sa.Connection) -> float | None:
    """The traffic share a maintainer set on the admin page (over QueuePolicy.traffic_share), or None."""
    value = conn.execute(sa.select(maintained.c.value).where(maintained.c.key == SHARE_KEY)).scalar()
    return float(value) if value is not None else None


def maintain_share(db: Database, share: float, by: str, at: str) -> None:
    """Set the traffic share every replica's queue uses from now on (items drawn before keep their membership)."""
    if not 0.0 <= share < 1.0:
        raise FeedbackError(f"the traffic share is a fraction from 0 to below 1, not {share}")
    with db.write() as conn:
        conn.execute(sa.delete(maintained).where(maintained.c.key == SHARE_KEY))
        conn.execute(sa.insert(maintained).values(key=SHARE_KEY, value=repr(float(share)), set_by=by, set_at=at))


class TrafficShare:
    """The share a maintainer set on the admin page, over the setting (`FeedbackStore.traffic_share`)."""

    def __init__(self, db: Database, clock: Callable[[], float]) -> None:
        self._db, self._clock = db, clock

    def maintained(self) -> float | None:
        with self._db.read() as conn:
            return maintained_share(conn)

    def set(self, share: float, by: str) -> None:
        maintain_share(self._db, share, by, iso_time(self._clock()))


def mark_new_items(db: Database, share: float) -> int:
    """Draw the traffic membership of pool items the queue has not seen yet; returns how many were drawn."""
    answered = sa.exists().where(answers.c.text_hash == pool.c.text_hash)
    query = sa.select(pool.c.id, pool.c.text_hash, answered).where(pool.c.traffic.is_(None), pool.c.gold_label.is_(None))
    with db.read() as conn:
        undrawn = list(conn.execute(query))
    if not undrawn:
        return 0
    marks = [{"drawn": int(not was_answered and draw(digest) < share), "item": item_id}
             for item_id, digest, was_answered in undrawn]
    # `traffic IS NULL` again: another process may have drawn them meanwhile (with the same result).
    mark = (sa.update(pool).where(pool.c.id == sa.bindparam("item"), pool.c.traffic.is_(None))
            .values(traffic=sa.bindparam("drawn")))
    with db.write() as conn:
        conn.execute(mark, marks)
    return len(marks)


def traffic_turn(conn: sa.Connection, annotator: str, share: float) -> bool:
    """Whether this annotator's next ordinary queue item should come from the traffic set.

    Keyed by the annotator's position (answers and skips so far), so a reload does not re-roll it, and
    about `share` of each annotator's turns are traffic turns.
    """
    if share <= 0:
        return False
    return is_traffic_turn(annotator, turn_position(conn, annotator), share)


def turn_position(conn: sa.Connection, annotator: str) -> int:
    """How many turns this annotator has taken: answers (of any status) and skips so far."""
    answered = count(conn, sa.select(sa.func.count()).where(answers.c.annotator == annotator))
    skipped = count(conn, sa.select(sa.func.count()).where(skips.c.annotator == annotator))
    return answered + skipped


def is_traffic_turn(annotator: str, position: int, share: float) -> bool:
    """Whether turn `position` (answers and skips before it) of this annotator is a traffic turn: a fixed draw."""
    return share > 0 and int(text_hash(f"traffic-turn:{annotator}:{position}")[:12], 16) / 16**12 < share


def read_traffic(conn: sa.Connection) -> set[str]:
    """The text hashes of the traffic set's items."""
    return set(conn.execute(sa.select(pool.c.text_hash).where(pool.c.traffic == 1)).scalars())


def traffic_texts(conn: sa.Connection, leave_out: set[str], limit: int) -> list[str]:
    """Up to `limit` texts of the traffic set's items, in a fixed random order (their text hashes'), leaving out
    those whose hash is in `leave_out` (a retrain leaves out the ones with trusted answers, which judge it)."""
    query = sa.select(pool.c.text, pool.c.text_hash).where(pool.c.traffic == 1).order_by(pool.c.text_hash)
    texts = []
    for text, digest in conn.execute(query):
        if digest not in leave_out:
            texts.append(text)
            if len(texts) >= limit:
                break
    return texts
