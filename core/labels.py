"""The AG News label set, the single place it is defined, and what its topics mean."""

from __future__ import annotations

from core.taxonomy import Taxonomy

LABELS: tuple[str, ...] = ("World", "Sports", "Business", "Sci/Tech")
NUM_LABELS = len(LABELS)
# What each AG News topic covers (the labelling guidelines' topic list and the buttons' hints), wherever a topic list
# starts as AG News's four and no maintainer described the topic.
AG_NEWS_DESCRIPTIONS = {
    "World": "international affairs, politics and government, conflict, diplomacy, elections, disasters.",
    "Sports": "games, athletes, teams, leagues, results, transfers and coaching.",
    "Business": "companies, markets, earnings, deals, jobs, the economy, prices and trade.",
    "Sci/Tech": "science, research, health research, space, and technology products and the internet.",
}


def is_ag_news_list(taxonomy: Taxonomy) -> bool:
    """Whether the topic list started (its newest fresh start) as AG News's four: its data is AG News."""
    start = next(v for v in reversed(taxonomy.versions) if v.change.kind == "start" or v.version == 1)
    return tuple(t.key for t in start.topics) == LABELS


def descriptions(taxonomy: Taxonomy) -> dict[str, str]:
    """Each current topic's description (key -> text, "" when none): the maintainers' own, else, on a list that
    started as AG News's four, what the AG News topic covers."""
    ag_news = is_ag_news_list(taxonomy)
    return {t.key: t.description or (AG_NEWS_DESCRIPTIONS.get(t.key, "") if ag_news else "")
            for t in taxonomy.topics}

_ALIASES = {name.lower(): i for i, name in enumerate(LABELS)} | {
    "sci-tech": 3,
    "scitech": 3,
    "sci_tech": 3,
    "science/technology": 3,
}


class UnknownLabelError(ValueError):
    """A label that is not one of the four AG News topics."""


def label_index(value: object, *, one_based: bool = False) -> int:
    """Map a label name or number to its 0-based index.

    Numbers are read as 0-based unless `one_based` (AG News CSVs number labels 1-4).
    """
    if isinstance(value, bool):
        raise UnknownLabelError(f"unknown label {value!r}; expected one of {', '.join(LABELS)}")
    if isinstance(value, int):
        index = value - 1 if one_based else value
    else:
        text = str(value).strip()
        # isdecimal, not isdigit: "²" is a digit that int() refuses; the length bound refuses absurd numbers.
        if len(text) <= 4 and text.lstrip("-").isdecimal() and text.lstrip("-").isascii():
            index = int(text) - 1 if one_based else int(text)
        elif text.lower() in _ALIASES:
            return _ALIASES[text.lower()]
        else:
            raise UnknownLabelError(f"unknown label {value!r}; expected one of {', '.join(LABELS)}")
    if not 0 <= index < NUM_LABELS:
        expected = "1-4" if one_based else "0-3"
        raise UnknownLabelError(f"label {value!r} is out of range; expected {expected} or a topic name")
    return index
