"""Every check the feedback store makes on its input, once: labels, probabilities, texts, annotators, pool rows."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from core.taxonomy import Taxonomy, TaxonomyError
from core.text import clean_text, text_hash
from feedback.errors import FeedbackError

KINDS = ("confirm", "correct", "queue")


class Status(StrEnum):
    """An answer's status, as stored (the values are the words in the database and in exports)."""

    # Appended only: exports number statuses by position (feedback.export.dataset's ClassLabel).
    OK = "ok"
    SUSPICIOUS = "suspicious"  # the model was very sure of another label: waits for a maintainer
    ACCEPTED = "accepted"  # reviewed: counts for training
    REJECTED = "rejected"  # reviewed: never trains
    UNDONE = "undone"  # taken back by its annotator
    REPLACED = "replaced"  # its annotator gave another label later on the same text and channel


STATUSES: tuple[Status, ...] = tuple(Status)
# Answers their annotator took back: undone, or replaced by a later answer on the same text and channel. They
# stay for audit but nothing counts them.
WITHDRAWN = (Status.UNDONE, Status.REPLACED)
# What neither trust nor any count of live answers counts: withdrawn, or rejected by a maintainer.
NOT_COUNTED = (*WITHDRAWN, Status.REJECTED)
REVIEW_STATUSES = (Status.ACCEPTED, Status.REJECTED)
EXPORT_FORMATS = ("csv", "jsonl")
_MAX_ID_CHARS = 200
_MAX_ROW_ID = 2**63  # SQLite's INTEGER range
# Softmax outputs in float32 do not sum to exactly 1.
_PROBABILITY_SUM_TOLERANCE = 0.01


@dataclass(frozen=True)
class PoolRow:
    """One pool text that passed the checks, ready to insert."""

    line: int
    text: str
    text_hash: str
    label: str | None = None  # the topic's key in the store's taxonomy; only for a known-answer check


def _one_of(value: object, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise FeedbackError(f"unknown {what} {value!r}; expected one of {', '.join(allowed)}")
    return str(value)


def check_kind(kind: object) -> str:
    """An answer's kind, one of KINDS."""
    return _one_of(kind, KINDS, "kind")


def check_status(status: object) -> Status:
    """An answer status to filter by, one of STATUSES."""
    return Status(_one_of(status, STATUSES, "status"))


def check_review_status(status: object) -> Status:
    """A maintainer's review of an answer, one of REVIEW_STATUSES."""
    return Status(_one_of(status, REVIEW_STATUSES, "review status"))


def check_export_format(fmt: object) -> str:
    """An export format, one of EXPORT_FORMATS."""
    return _one_of(fmt, EXPORT_FORMATS, "export format")


def is_valid_unicode(text: str) -> bool:
    """Whether `text` can be stored as UTF-8 (a lone surrogate such as "\\ud800" cannot)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_annotator(annotator: object) -> str:
    """A pseudonymous annotator id, stripped; never empty, at most 200 characters, valid Unicode."""
    if not isinstance(annotator, str) or not annotator.strip():
        raise FeedbackError("annotator id is required (a pseudonymous id, not empty)")
    if len(annotator) > _MAX_ID_CHARS or not is_valid_unicode(annotator):
        raise FeedbackError(f"annotator id must be valid text of at most {_MAX_ID_CHARS} characters")
    return annotator.strip()


def check_address(address: object) -> str | None:
    """A client address key (already a keyed hash), or None when the answer did not come over the web."""
    if address is None:
        return None
    if not isinstance(address, str) or not address.strip() or len(address) > _MAX_ID_CHARS or not address.isascii():
        raise FeedbackError(f"address must be a non-empty ASCII key of at most {_MAX_ID_CHARS} characters")
    return address


def check_row_id(value: object, what: str = "id") -> int:
    """A database row id: a positive whole number that fits SQLite's integers."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and not 0 < value < _MAX_ROW_ID:
        value = "out of range"  # str() of a huge int can itself fail
    digits = str(value).strip() if isinstance(value, int | str) and not isinstance(value, bool) else ""
    if not (digits.isdecimal() and digits.isascii() and len(digits) <= 19 and 0 < int(digits) < _MAX_ROW_ID):
        raise FeedbackError(f"{what} must be a whole number from 1 to {_MAX_ROW_ID - 1}, got {str(value)[:40]!r}")
    return int(digits)


def check_model_text(value: object, what: str) -> str | None:
    """What an answer says of the model (`what`: its "model_version", its "predicted_label"): None, or text of at most
    200 characters."""
    if value is not None and (not isinstance(value, str) or len(value) > _MAX_ID_CHARS):
        raise FeedbackError(f"{what} must be text of at most {_MAX_ID_CHARS} characters")
    return value


def check_model_version(model_version: object) -> str:
    """The model version a pool rescore is tagged with; never empty."""
    if not isinstance(model_version, str) or not model_version.strip():
        raise FeedbackError("model_version is required to rescore the pool")
    return model_version


def canonical_label(value: object, taxonomy: Taxonomy, field: str = "label") -> str:
    """The taxonomy's key for a label: a current name or key (any case, common aliases), a former name of a renamed
    or merged topic, or a 0-based position (`Taxonomy.key_of`). Refused naming the current topics otherwise."""
    try:
        return taxonomy.key_of(value)
    except TaxonomyError as exc:
        split = " was split into " in str(exc)  # a split topic's old name: the message says which to answer
        raise FeedbackError(str(exc) if split else
                            f"unknown {field} {value!r}; expected one of {', '.join(taxonomy.names)}") from None


def pool_label(value: object, taxonomy: Taxonomy) -> str:
    """A check's label as a topic key; numbers are 1-based positions in the taxonomy's order, as AG News's CSVs
    number their classes 1-4."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise FeedbackError(f"missing label; expected one of {', '.join(taxonomy.names)} (or 1-{len(taxonomy.keys)})")
    text = str(value).strip() if not isinstance(value, bool) else ""
    if isinstance(value, int) and not isinstance(value, bool) or (len(text) <= 4 and text.isascii() and text.isdecimal()):
        number = int(text)
        if not 1 <= number <= len(taxonomy.keys):
            raise FeedbackError(f"label {value!r} is out of range; expected 1-{len(taxonomy.keys)} or a topic name")
        return taxonomy.keys[number - 1]
    return canonical_label(value, taxonomy)


def model_label(value: object, taxonomy: Taxonomy, model_labels: Sequence[str] = ()) -> str:
    """A model's predicted label: one of `model_labels` (the model's own, which a taxonomy change may have left
    behind) as given, else the taxonomy's key for it."""
    text = " ".join(str(value).split()) if isinstance(value, str) else ""
    for label in model_labels:
        if text.casefold() == label.casefold():
            return label
    return canonical_label(value, taxonomy, "predicted_label")


def normalise_probabilities(
    value: Mapping[str, float] | Sequence[float] | np.ndarray, taxonomy: Taxonomy
) -> dict[str, float]:
    """Probabilities as {label: p}, keyed by the model's own labels: from a mapping (a label that names a current
    topic, in any spelling, is stored as its key; another label, the model's own, as given), or from a sequence in
    the taxonomy's order. At least two labels, each 0-1, summing to 1."""
    try:
        if isinstance(value, Mapping):
            probs: dict[str, float] = {}
            for key, p in value.items():
                if not isinstance(key, str) or not key.strip():
                    raise FeedbackError(f"probability labels must be text, not {key!r}")
                probs[_probability_key(key, taxonomy)] = float(p)
        else:
            flat = np.asarray(value, dtype=np.float64).ravel()
            if flat.size != len(taxonomy.keys):
                raise FeedbackError(f"expected {len(taxonomy.keys)} probabilities (one per topic), got {flat.size}")
            probs = dict(zip(taxonomy.keys, (float(p) for p in flat), strict=True))
    except (TypeError, ValueError) as exc:
        if isinstance(exc, FeedbackError):
            raise
        raise FeedbackError(f"probabilities must be numbers: {exc}") from None
    if len(probs) < 2:
        raise FeedbackError(f"probabilities need at least two labels, got {', '.join(probs) or 'none'}")
    if not all(math.isfinite(p) and 0.0 <= p <= 1.0 for p in probs.values()):
        raise FeedbackError("probabilities must be between 0 and 1")
    if abs(sum(probs.values()) - 1.0) > _PROBABILITY_SUM_TOLERANCE:
        raise FeedbackError(f"probabilities must sum to 1, got {sum(probs.values()):.3f}")
    return probs


def _probability_key(label: str, taxonomy: Taxonomy) -> str:
    """A probability's label: the current key it names (by name or key, any case), else the label as given (a model
    may predict a topic the taxonomy no longer has: its probability is its own)."""
    text = " ".join(label.split())
    folded = text.casefold()
    for topic in taxonomy.topics:
        if folded in (topic.key.casefold(), topic.name.casefold()):
            return topic.key
    return text


def text_problem(text: str, max_chars: int) -> str | None:
    """Why a text cannot be labelled, or None when it is fine."""
    if not is_valid_unicode(text):
        return "text contains characters that are not valid Unicode (lone surrogates)"
    if not clean_text(text):
        return "empty text"
    if len(text) > max_chars:
        return f"text is {len(text):,} characters; at most {max_chars:,} are allowed"
    return None


def check_answer_text(text: object, max_chars: int) -> str:
    """The text an answer is about: a string `text_problem` finds nothing wrong with."""
    if not isinstance(text, str):
        raise FeedbackError("text must be a string")
    problem = text_problem(text, max_chars)
    if problem:
        raise FeedbackError(f"cannot store this answer: {problem}")
    return text


def check_pool_row(
    line: int, text: object, label: object, *, max_chars: int, labelled: bool, taxonomy: Taxonomy | None = None
) -> PoolRow:
    """A pool row from a text and (for a known-answer check, `labelled`) its label.

    Raises FeedbackError whose message is the bare problem, so callers can list it beside the line.
    """
    problem = text_problem(text, max_chars) if isinstance(text, str) else "not a string"
    if problem:
        raise FeedbackError(problem)
    name = None
    if labelled:
        if taxonomy is None:
            raise FeedbackError("a known-answer check needs the taxonomy its label is read in")
        name = pool_label(label, taxonomy)
    assert isinstance(text, str)  # text_problem above refused anything else
    return PoolRow(line=line, text=text.strip(), text_hash=text_hash(text), label=name)


def check_probability_rows(probabilities: object, rows: int | None = None) -> np.ndarray:
    """A scorer's output as an (n, labels) float array of finite numbers, with `rows` rows when given."""
    probs = np.asarray(probabilities, dtype=np.float64)
    if rows is not None and (probs.ndim != 2 or probs.shape[0] != rows):
        raise FeedbackError(f"scorer returned shape {probs.shape} for {rows} texts")
    if probs.ndim != 2 or probs.shape[1] < 2:
        raise FeedbackError(f"scorer must return an (n, labels) array of probabilities; got shape {probs.shape}")
    if not np.all(np.isfinite(probs)):
        raise FeedbackError("scorer returned NaN or infinite probabilities")
    return probs
