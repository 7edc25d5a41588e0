"""User feedback: the SQLite answer store, the labelling queue, and the rules for trusted examples."""

from feedback.errors import FeedbackError, PoolImportError, RateLimited
from feedback.labelling.answers import AnswerInput, RecordResult
from feedback.labelling.pool import ImportReport
from feedback.store import FeedbackStore
from feedback.training.snapshot import FeedbackSplit, read_trusted
from feedback.trust.rules import TrustedExample, select_trusted

__all__ = [
    "AnswerInput",
    "FeedbackError",
    "FeedbackSplit",
    "FeedbackStore",
    "ImportReport",
    "PoolImportError",
    "RateLimited",
    "RecordResult",
    "TrustedExample",
    "read_trusted",
    "select_trusted",
]
