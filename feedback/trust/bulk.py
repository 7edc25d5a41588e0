"""A maintainer's work on many rows at once (reviewing answers, deciding on label-error candidates): the listing
filters' choice that narrows nothing, how many rows one action may name and one listing shows, and what an action
did, in words that name every row."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from feedback.errors import FeedbackError
from feedback.validate import check_row_id

ANY = "any"  # a listing filter's choice that narrows nothing (the command line's and the admin page's)
MAX_IDS = 1000  # rows one bulk action may name
MAX_SHOWN = 500  # rows one listing returns
_IDS_NAMED = 60  # ids a message names before it says "and N more"


def narrowing(value: object) -> str | None:
    """A listing filter's value as a filter takes it: None when it narrows nothing (not given, empty, or ANY)."""
    return value if isinstance(value, str) and value and value != ANY else None


def chosen_ids(ids: Iterable[object], what: str) -> list[int]:
    """The row ids an action names (`what`: "answer id", "candidate id"), each once, in order; FeedbackError when none
    or more than MAX_IDS are chosen."""
    wanted = sorted({check_row_id(i, what) for i in ids})
    rows = what.removesuffix(" id")
    if not wanted:
        raise FeedbackError(f"choose at least one {rows}")
    if len(wanted) > MAX_IDS:
        raise FeedbackError(f"at most {MAX_IDS} {rows}s at once; {len(wanted)} were chosen")
    return wanted


def shown_limit(limit: int) -> int:
    """A listing's `limit` as at most MAX_SHOWN rows, and at least one."""
    return max(1, min(int(limit), MAX_SHOWN))


def ids_in_words(ids: Iterable[int]) -> str:
    """ "#3, #5, #8", the first few dozen ids and how many more."""
    listed = [f"#{i}" for i in ids]
    more = f" and {len(listed) - _IDS_NAMED} more" if len(listed) > _IDS_NAMED else ""
    return ", ".join(listed[:_IDS_NAMED]) + more


def outcome_in_words(parts: Sequence[tuple[str, Collection[int]]]) -> str:
    """What an action did: a sentence per outcome that has rows ("Accepted 2 answer(s): #3, #5."), `parts` being
    (the outcome in words, its row ids) in the order they are said; "Nothing changed." when none has any."""
    return " ".join(f"{words}: {ids_in_words(ids)}." for words, ids in parts if ids) or "Nothing changed."
