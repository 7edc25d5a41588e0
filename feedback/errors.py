"""Errors raised by the feedback store, each with a message fit to show a user."""

from __future__ import annotations


class FeedbackError(ValueError):
    """An answer or file the store refuses; the message says why and what is accepted."""


class RateLimited(FeedbackError):
    """Too many answers from one annotator in the last minute."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class PoolImportError(FeedbackError):
    """A pool file with bad rows; nothing from it was written."""

    def __init__(self, message: str, problems: list[tuple[int, str]]) -> None:
        super().__init__(message)
        # (line number, problem) pairs, line numbers 1-based as an editor shows them.
        self.problems = problems
