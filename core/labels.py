"""The AG News label set, the single place it is defined."""

from __future__ import annotations

LABELS: tuple[str, ...] = ("World", "Sports", "Business", "Sci/Tech")
NUM_LABELS = len(LABELS)

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
