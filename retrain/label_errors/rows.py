"""The rows a label-error search reads: every base row and every trusted answer, read through the label fixes, each
named by where it comes from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.data import SEED_SOURCE, Corpus, read_csv
from core.settings.config import SEED_CSV
from core.settings.policies import TrustPolicy
from core.taxonomy import Taxonomy
from core.text import text_hash
from feedback.meaning import SET_MARK, allowed_keys
from feedback.store import FeedbackStore
from feedback.training.fixes import LabelFixes
from feedback.trust.label_errors import Source
from feedback.trust.rules import select_trusted


@dataclass(frozen=True)
class Row:
    """One row the search reads: its text and label (as training reads it, through the fixes) and where it is from."""

    source: Source
    text: str
    label: int  # an index into the taxonomy's keys
    origin: str
    # After a split, a row labelled before it is "B or C" (indices, `label` among them): it has no single label to
    # doubt, so it is not fitted; it is offered first, with the likelier of its topics (issue: after a split).
    allowed: tuple[int, ...] = ()

    def given(self, keys: Sequence[str]) -> str:
        """The label as stored on a candidate: a key, or a set's keys joined as `feedback.meaning` joins them."""
        return SET_MARK.join(keys[i] for i in self.allowed) if self.allowed else keys[self.label]


def base_rows(corpus: Corpus, data_source: str, fixes: LabelFixes) -> list[Row]:
    """Every base row (training and validation), once per text, read through the fixes, named by file and row where
    the source is a folder or a file of CSVs (rows numbered from 1 after the header), else by split and position."""
    where = _csv_rows(SEED_CSV if data_source == SEED_SOURCE else Path(data_source).expanduser())
    rows: list[Row] = []
    seen: set[str] = set()
    for split, examples in (("train", corpus.train), ("validation", corpus.validation)):
        for i, example in enumerate(fixes.examples(examples, labels=corpus.labels)):
            digest = text_hash(example.text)
            if digest not in seen:
                seen.add(digest)
                rows.append(Row(Source.BASE, example.text, example.label, where.get(digest, f"{split} row {i + 1}"),
                                example.allowed))
    return rows


def _csv_rows(path: Path) -> dict[str, str]:
    files = sorted([path / "train.csv", *path.glob("train_*.csv")]) if path.is_dir() else [path]
    where: dict[str, str] = {}
    for file in files:
        if file.suffix.lower() != ".csv" or not file.is_file():
            continue
        for number, example in enumerate(read_csv(file), start=1):
            where.setdefault(text_hash(example.text), f"{file.name} row {number}")
    return where


def answer_rows(store: FeedbackStore, policy: TrustPolicy, fixes: LabelFixes, taxonomy: Taxonomy) -> list[Row]:
    """Every trusted answer's text (read through the fixes, labels as they mean under `taxonomy`), named by its
    newest answer giving that label."""
    answers = store.answers.rows(taxonomy=taxonomy)  # newest first
    newest: dict[tuple[str, str], dict[str, Any]] = {}
    for answer in answers:
        newest.setdefault((answer["text_hash"], answer["user_label"]), answer)
    rows = []
    for trusted in fixes.trusted(select_trusted(answers, store.pool.gold_labels(taxonomy=taxonomy), policy)):
        digest = trusted.text_hash or text_hash(trusted.text)
        named = newest.get((digest, trusted.label))
        origin = (f"answer #{named['id']} by {named['annotator']}, {str(named['created_at'])[:10]}"
                  if named else "answer") + (f" ({trusted.votes} agree)" if trusted.votes > 1 else "")
        keys = [k for k in allowed_keys(trusted.label) if k in taxonomy.keys]
        if not keys:
            continue
        indices = tuple(sorted(taxonomy.keys.index(k) for k in keys))
        rows.append(Row(Source.ANSWER, trusted.text, indices[0], origin, indices if len(indices) > 1 else ()))
    return rows
