"""One round's outcome: the record the round driver fills and every report, plot and JSON file reads."""

from __future__ import annotations

from dataclasses import dataclass

ORDERS = ("uncertainty", "random")  # labelling orders: the feedback queue, or a uniform sample of its pool


@dataclass
class RoundRow:
    order: str
    round: int
    labels: int  # answers recorded so far
    corrections: int  # of which kind 'correct' (the model was wrong, or a malicious answer said so)
    malicious: int  # wrong answers so far
    suspicious: int  # answers the trust rules marked suspicious so far
    champion: str
    slice_acc: float
    base_acc: float
    decision: str  # start | promoted | refused | failed | no labels
    reason: str = ""
    challenger: str | None = None
    challenger_slice_acc: float | None = None
    challenger_base_acc: float | None = None
    worse_on_base: bool | None = None  # promoted, and worse on base validation than the champion it replaced
    feedback_train: int = 0
    feedback_holdout: int = 0
    retrain_s: float = 0.0
    seconds: float = 0.0
    checks: int = 0  # answers on known-answer checks so far (part of `labels`)
    caught: int = 0  # annotators the retrain did not train on (failed checks or low agreement)
    poisoned: int = 0  # feedback rows the trust rules passed with a wrong label
