"""User feedback: the SQLite answer store, the labelling queue, and the rules for trusted examples."""

from feedback.errors import FeedbackError, PoolImportError, RateLimited
from feedback.queue import ImportReport
from feedback.store import FeedbackStore, RecordResult
from feedback.trust import TrustedExample, trusted_examples

__all__ = [
    "FeedbackError",
    "FeedbackStore",
    "ImportReport",
    "PoolImportError",
    "RateLimited",
    "RecordResult",
    "TrustedExample",
    "trusted_examples",
]
