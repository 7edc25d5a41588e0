"""Rows read through a maintainer's label fixes: base rows and trusted answers with their corrected label, excluded
rows left out (the decisions are `feedback.trust.label_errors`'s).

Per row (source and text hash), the newest live decision counts, and only while the row still has the label it was
decided on: a fix is about that label, so a row whose label changed since (the crowd settled it otherwise, the data
file was edited) trains as it now is.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from core.data import Example
from core.labels import LABELS
from core.text import text_hash
from feedback.meaning import SET_MARK
from feedback.store import FeedbackStore
from feedback.trust.label_errors import Action, Source
from feedback.trust.rules import TrustedExample

_Key = tuple[str, str, str]  # (source, text hash, the label decided on)


@dataclass(frozen=True)
class LabelFixes:
    """The live decisions that change training: relabels and exclusions, by (source, text hash, label before)."""

    relabel: dict[_Key, str] = field(default_factory=dict)  # -> the new label
    exclude: frozenset[_Key] = frozenset()

    @classmethod
    def from_decisions(cls, decisions: Iterable[dict[str, Any]]) -> LabelFixes:
        """From `LabelErrors.live_fixes()` rows (oldest first): the newest per row and label wins; keep changes nothing."""
        newest: dict[_Key, dict[str, Any]] = {}
        for row in sorted(decisions, key=lambda r: int(r["id"])):
            if row.get("undone_at"):
                continue
            newest[(row["source"], row["text_hash"], row["label_before"])] = row
        return cls(
            relabel={k: r["label_after"] for k, r in newest.items() if r["action"] == Action.RELABEL},
            exclude=frozenset(k for k, r in newest.items() if r["action"] == Action.EXCLUDE),
        )

    def __len__(self) -> int:
        return len(self.relabel) + len(self.exclude)

    def examples(self, rows: Sequence[Example], source: Source = Source.BASE,
                 labels: Sequence[str] = LABELS) -> list[Example]:
        """`rows` (labels as indices into `labels`, their corpus's topic keys) as training reads them: relabelled,
        excluded ones left out. A relabel to a topic `labels` lacks leaves the row as it is."""
        if not self:
            return list(rows)
        out = []
        for row in rows:
            key = (source.value, text_hash(row.text), _read(row, labels))
            if key in self.exclude:
                continue
            after = self.relabel.get(key)
            if after is not None and after in labels:
                row = replace(row, label=list(labels).index(after), allowed=())
            out.append(row)
        return out

    def trusted(self, rows: Sequence[TrustedExample]) -> list[TrustedExample]:
        """Trusted answers' texts as training reads them (source "answer")."""
        if not self:
            return list(rows)
        out = []
        for row in rows:
            key = (Source.ANSWER.value, row.text_hash or text_hash(row.text), row.label)
            if key in self.exclude:
                continue
            after = self.relabel.get(key)
            out.append(row if after is None else replace(row, label=after))
        return out

    def touched(self, rows: Sequence[Example], source: Source = Source.BASE, labels: Sequence[str] = LABELS) -> int:
        """How many of `rows` (labels indexing `labels`) a fix changes (relabels or leaves out)."""
        if not self:
            return 0
        keys = self.exclude | self.relabel.keys()
        return sum((source.value, text_hash(row.text), _read(row, labels)) in keys for row in rows)


def _read(row: Example, labels: Sequence[str]) -> str:
    """A row's label as a decision names it: a key, or a split's "B or C" set as `feedback.meaning` joins it."""
    return SET_MARK.join(labels[i] for i in row.allowed) if row.allowed else labels[row.label]


def read_fixes(store: FeedbackStore) -> LabelFixes:
    """The store's live label fixes."""
    return LabelFixes.from_decisions(store.label_errors.live_fixes())
