"""Loading labelled news from the hub or from AG-News-format CSVs, and the deterministic split."""

from __future__ import annotations

import csv
import hashlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from core.labels import LABELS, UnknownLabelError, label_index
from core.settings.config import SEED_CSV
from core.taxonomy import Taxonomy
from core.text import clean_text, join_title, text_hash
from core.topic_maps import successor

log = logging.getLogger(__name__)

SEED_SOURCE = "seed"
_HASH_BUCKETS = 10_000


class DataSourceError(RuntimeError):
    """A data source that cannot be read; the message names the source and the problem."""


@dataclass(frozen=True)
class Example:
    text: str
    label: int  # 0-based index into its corpus's `labels` (the taxonomy's keys when training)
    # The headline and the body apart, where the source kept them apart (label,title,description CSVs);
    # not part of an example's identity, which is its text.
    title: str = field(default="", compare=False)
    body: str = field(default="", compare=False)
    # After a split, a row labelled before it may be any of a set of topics (indices, `label` among them);
    # empty: exactly `label`. Training's loss is then -log of the set's total probability.
    allowed: tuple[int, ...] = field(default=(), compare=False)


class InputForm(StrEnum):
    """How much of an article a person pastes: people paste headlines more than anything else."""

    FULL = "full"  # title + description, what AG News rows hold
    TITLE = "title"  # the headline alone
    BODY = "body"  # the description alone


def as_form(example: Example, form: InputForm) -> Example | None:
    """The example as `form` reads it, or None when the source did not keep that part apart."""
    if form is InputForm.FULL:
        return example
    text = example.title if form is InputForm.TITLE else example.body
    return Example(text, example.label) if text else None


def in_form(examples: Iterable[Example], form: InputForm) -> list[Example]:
    """Every example that has `form`, read as `form` (a validation set per input form, say)."""
    return [ex for ex in (as_form(e, form) for e in examples) if ex is not None]


@dataclass(frozen=True)
class Corpus:
    """Labelled examples split for training. `description` says where they came from."""

    train: list[Example]
    validation: list[Example]
    test: list[Example] = field(default_factory=list)
    description: str = ""
    labels: tuple[str, ...] = LABELS  # the topic keys that examples' `label` indexes


def examples_under(examples: Iterable[Example], labels: Sequence[str], taxonomy: Taxonomy,
                   version: int = 1) -> list[Example]:
    """`examples` (labels indexing `labels`, given under taxonomy `version`) in the taxonomy's current index space:
    a merged topic's rows count as its target; a split parent's rows allow the set "parent or child" (labelled the
    parent, which is what the topic still is); a row whose topic no longer exists in any form is left out."""
    out = []
    for ex in examples:
        key = labels[ex.label]
        allowed = taxonomy.indices(key, version)
        if not allowed:
            continue
        heir = successor(taxonomy, key)
        label = taxonomy.keys.index(heir) if heir is not None and taxonomy.keys.index(heir) in allowed else allowed[0]
        out.append(Example(ex.text, label, ex.title, ex.body, allowed if len(allowed) > 1 else ()))
    return out


def under_taxonomy(corpus: Corpus, taxonomy: Taxonomy, version: int = 1) -> Corpus:
    """The corpus's rows (its `labels`, given under taxonomy `version`: the base data's are the first version's)
    read in the taxonomy's current index space (`examples_under`). The four-topic corpus under the starting
    taxonomy of the same four comes back unchanged."""
    if corpus.labels == taxonomy.keys and all(taxonomy.allowed(k, version) == {k} for k in corpus.labels):
        return corpus
    return Corpus(examples_under(corpus.train, corpus.labels, taxonomy, version),
                  examples_under(corpus.validation, corpus.labels, taxonomy, version),
                  examples_under(corpus.test, corpus.labels, taxonomy, version),
                  corpus.description, taxonomy.keys)


def is_validation(text: str, val_fraction: float, salt: str = "") -> bool:
    """Whether a text falls in the held-out part; depends on the text alone, so it never drifts.

    A `salt` makes the split independent of the unsalted one: without it, a held-out split drawn from texts
    that were already split by hash (training rows, say) would be empty or skewed.
    """
    digest = text_hash(text)
    if salt:
        digest = hashlib.sha256(f"{salt}\0{digest}".encode()).hexdigest()
    return int(digest[:12], 16) % _HASH_BUCKETS < round(val_fraction * _HASH_BUCKETS)


def split_by_hash(
    examples: Iterable[Example], val_fraction: float, salt: str = ""
) -> tuple[list[Example], list[Example]]:
    """(kept, held out): about `val_fraction` of the texts held out, chosen by (salted) text hash."""
    train: list[Example] = []
    validation: list[Example] = []
    for ex in examples:
        (validation if is_validation(ex.text, val_fraction, salt) else train).append(ex)
    return train, validation


def dedupe(examples: Iterable[Example], exclude: Iterable[Example] = ()) -> list[Example]:
    """Drop repeated texts, and texts that also appear in `exclude` (a held-out split)."""
    seen = {text_hash(ex.text) for ex in exclude}
    out = []
    for ex in examples:
        key = text_hash(ex.text)
        if key not in seen:
            seen.add(key)
            out.append(ex)
    return out


def read_csv(path: Path) -> list[Example]:
    """Read an AG-News-format CSV: `label,title,description` or `label,text`, labels 1-4, header optional."""
    path = Path(path)
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise DataSourceError(f"cannot open {path}: {exc.strerror or exc}") from None
    examples = []
    with handle:
        try:
            rows = list(csv.reader(handle))
        except (csv.Error, UnicodeDecodeError) as exc:
            raise DataSourceError(f"{path} is not a readable UTF-8 CSV file: {exc}") from None
    if not rows:
        raise DataSourceError(f"{path} is empty")
    columns = ["label", "title", "description"] if len(rows[0]) == 3 else ["label", "text"]
    start = 0
    if rows[0] and not rows[0][0].strip().isdigit():  # a header line
        columns = [c.strip().lower() for c in rows[0]]
        start = 1
    if columns not in (["label", "title", "description"], ["label", "text"]):
        raise DataSourceError(
            f"{path}: expected columns label,title,description or label,text; got {','.join(columns)}"
        )
    for line_no, row in enumerate(rows[start:], start=start + 1):
        if not row:
            continue
        if len(row) != len(columns):
            raise DataSourceError(f"{path}:{line_no}: expected {len(columns)} fields, got {len(row)}")
        try:
            label = label_index(row[0], one_based=True)
        except UnknownLabelError as exc:
            raise DataSourceError(f"{path}:{line_no}: {exc}") from None
        raw = join_title(row[1], row[2]) if len(row) == 3 else row[1]
        text = clean_text(raw)
        if not text:
            raise DataSourceError(f"{path}:{line_no}: empty text")
        title, body = (clean_text(row[1]), clean_text(row[2])) if len(row) == 3 else ("", "")
        examples.append(Example(text, label, title, body))
    if not examples:
        raise DataSourceError(f"{path} has no data rows")
    return examples


def _from_folder(folder: Path, val_fraction: float, use_extra: bool) -> Corpus:
    train_csv = folder / "train.csv"
    if not train_csv.is_file():
        raise DataSourceError(f"{folder} has no train.csv (AG News format: label,title,description)")
    train, validation = split_by_hash(read_csv(train_csv), val_fraction)
    parts = [f"{train_csv.name} ({len(train) + len(validation)} rows)"]
    if use_extra:
        # Extra files are partial reconstructions: they only ever add training rows, so the
        # validation split stays a verbatim part of train.csv.
        for extra in sorted(folder.glob("train_*.csv")):
            rows = read_csv(extra)
            train.extend(rows)
            parts.append(f"{extra.name} ({len(rows)} rows)")
    test_csv = folder / "test.csv"
    test = read_csv(test_csv) if test_csv.is_file() else []
    if test:
        parts.append(f"test.csv ({len(test)} rows)")
    # The folder's name, never its path: descriptions reach the page, which must not show server paths.
    return _finish(train, validation, test, f"{folder.name}: " + ", ".join(parts))


def _finish(train: list[Example], validation: list[Example], test: list[Example], description: str) -> Corpus:
    validation = dedupe(validation, exclude=test)
    train = dedupe(train, exclude=[*validation, *test])
    if not train or not validation:
        raise DataSourceError(f"{description}: too few rows to make train and validation splits")
    return Corpus(train, validation, test, description)


def _from_hub(name: str, val_fraction: float) -> Corpus:
    try:
        import datasets

        ds = datasets.load_dataset(name)
    except Exception as exc:
        raise DataSourceError(
            f"cannot load dataset {name!r} from the Hugging Face hub ({type(exc).__name__}: {exc}). "
            "Offline? Set NEWSLOOP_DATA to a folder of AG-News-format CSVs."
        ) from None
    if "train" not in ds:
        raise DataSourceError(f"dataset {name!r} has no 'train' split")

    def convert(split: Sequence[dict]) -> list[Example]:
        out = []
        for row in split:
            raw = row.get("text") or join_title(row.get("title", ""), row.get("description", ""))
            text = clean_text(raw)
            if text:
                out.append(Example(text, label_index(int(row["label"]))))
        return out

    train, validation = split_by_hash(convert(ds["train"]), val_fraction)
    test = convert(ds["test"]) if "test" in ds else []
    return _finish(train, validation, test, f"hub dataset {name} ({len(ds['train'])} train rows)")


def load_seed(val_fraction: float = 0.2) -> Corpus:
    """The project's own hand-written news items: small, but always there."""
    train, validation = split_by_hash(read_csv(SEED_CSV), val_fraction)
    return _finish(train, validation, [], f"{SEED_SOURCE}: {SEED_CSV.name} ({len(train) + len(validation)} rows)")


def load_corpus(source: str, val_fraction: float = 0.1, use_extra: bool = True) -> Corpus:
    """Load `source`: 'seed', a folder with train.csv, one CSV file, or a Hugging Face dataset id."""
    if source == SEED_SOURCE:
        return load_seed()
    path = Path(source).expanduser()
    if path.is_dir():
        return _from_folder(path, val_fraction, use_extra)
    if path.suffix.lower() == ".csv" or path.exists():
        if not path.is_file():
            raise DataSourceError(f"{path} does not exist")
        train, validation = split_by_hash(read_csv(path), val_fraction)
        return _finish(train, validation, [], f"{path.name} ({len(train) + len(validation)} rows)")
    if source.startswith((".", "/", "~")):
        raise DataSourceError(f"{source} does not exist")
    return _from_hub(source, val_fraction)


def load_corpus_or_seed(source: str, val_fraction: float = 0.1, use_extra: bool = True) -> Corpus:
    """Like `load_corpus`, but fall back to the seed set when the source is unavailable."""
    try:
        return load_corpus(source, val_fraction, use_extra)
    except DataSourceError as exc:
        log.warning("%s; falling back to the built-in seed set", exc)
        return load_seed()
