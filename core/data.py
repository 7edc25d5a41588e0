"""Loading labelled news from the hub or from CSVs, and the deterministic split.

A CSV's labels are either all numbers, AG News's 1-4 (its four topics), or all topic names: any 2 to 50 topics of
your own, in the order they first appear (a file naming exactly the AG News four reads as AG News). A file of
names starts with a header line (`label,text` or `label,title,description`).
"""

from __future__ import annotations

import csv
import hashlib
import logging
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

from core.host.net import unreachable
from core.labels import LABELS, UnknownLabelError, label_index
from core.settings.config import SEED_CSV
from core.taxonomy import MAX_TOPICS, MIN_TOPICS, Taxonomy, TaxonomyError, check_name
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


class _Topics:
    """The topics the label column of one or more files names, read line by line: AG News's numbers 1-4, or names
    (trimmed and checked, one topic whatever their case, numbered in order of first appearance). A source is one
    or the other; a mix is refused."""

    def __init__(self) -> None:
        self.numbered: bool | None = None  # unknown until the first label
        self.names: list[str] = []
        self._index: dict[str, int] = {}  # casefolded name -> its index in `names`

    def index(self, raw: str, where: str) -> int:
        """The 0-based topic index of the label `raw` at `where` (file:line); DataSourceError if it cannot be one."""
        text = raw.strip()
        if not text:
            raise DataSourceError(f"{where}: empty label")
        numbered = text.lstrip("+-").isdecimal()
        if self.numbered is None:
            self.numbered = numbered
        elif numbered != self.numbered:
            first = "numbers (AG News's 1-4)" if self.numbered else "topic names"
            raise DataSourceError(f"{where}: label {text!r} in a source whose labels are {first}; "
                                  "use numbers or names, not both")
        if numbered:
            try:
                return label_index(text, one_based=True)
            except UnknownLabelError as exc:
                raise DataSourceError(f"{where}: {exc}") from None
        try:
            name = check_name(text)
        except TaxonomyError as exc:
            raise DataSourceError(f"{where}: {exc}") from None
        folded = name.casefold()
        if folded not in self._index:
            if len(self.names) >= MAX_TOPICS:
                raise DataSourceError(f"{where}: {name!r} would be topic {MAX_TOPICS + 1}; "
                                      f"a source has at most {MAX_TOPICS} topics")
            self._index[folded] = len(self.names)
            self.names.append(name)
        return self._index[folded]

    def labels(self, where: str, counted: bool = True) -> tuple[str, ...]:
        """The topic keys the indices given so far point into; refuses fewer than MIN_TOPICS topics (a source's)
        unless not `counted` (a file read on its own, one of a folder's, say)."""
        if self.numbered in (None, True):
            return LABELS
        if counted and len(self.names) < MIN_TOPICS:
            raise DataSourceError(f"{where} names {len(self.names)} topic ({', '.join(self.names)}); "
                                  f"a source needs at least {MIN_TOPICS}")
        return tuple(self.names)

    def as_ag_news(self) -> list[int] | None:
        """If the names are exactly AG News's four (any case or spelling `core.labels` knows), each name's index in
        `LABELS`, in the order of `names`; else None."""
        try:
            indices = [label_index(name) for name in self.names]
        except UnknownLabelError:
            return None
        return indices if sorted(indices) == list(range(len(LABELS))) else None


def read_csv(path: Path) -> list[Example]:
    """Read one labelled CSV on its own (`label,title,description` or `label,text`, labels 1-4 or topic names);
    each example's `label` indexes the file's topics, AG News's four for a numbered file. A source's topics are
    `read_labelled`'s (it counts them; one file of a folder may name a single topic)."""
    return read_labelled([Path(path)], counted=False)[0][0]


def read_labelled(
    paths: Sequence[Path], *, counted: bool = True, texts: bool = True
) -> tuple[list[list[Example]], tuple[str, ...]]:
    """Read the CSVs of one source: each file's examples, and the topics their `label`s index (one list for all
    the files: a topic named in several is one topic); `counted`: refuse fewer than MIN_TOPICS of them. Without
    `texts` only the topics are read (every file's examples empty): a tenth of the time, the texts' cleaning
    skipped."""
    topics = _Topics()
    files = [_read_rows(Path(path), topics, texts) for path in paths]
    where = ", ".join(Path(p).name for p in paths)
    labels = topics.labels(where, counted)
    ag_news = topics.as_ag_news()
    if ag_news is not None:  # the four by name: read as AG News, in its order, so AG News's models fit them
        files = [[replace(e, label=ag_news[e.label]) for e in examples] for examples in files]
        labels = LABELS
    return files, labels


def _read_rows(path: Path, topics: _Topics, texts: bool = True) -> list[Example]:
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
    if rows[0] and not rows[0][0].strip().isdigit():  # a header line (a file of names has one)
        columns = [c.strip().lower() for c in rows[0]]
        start = 1
    if columns not in (["label", "title", "description"], ["label", "text"]):
        raise DataSourceError(
            f"{path}: expected columns label,title,description or label,text; got {','.join(columns)} "
            "(a file whose labels are topic names starts with that header line)"
        )
    for line_no, row in enumerate(rows[start:], start=start + 1):
        if not row:
            continue
        if len(row) != len(columns):
            raise DataSourceError(f"{path}:{line_no}: expected {len(columns)} fields, got {len(row)}")
        label = topics.index(row[0], f"{path}:{line_no}")
        if not texts:
            continue
        raw = join_title(row[1], row[2]) if len(row) == 3 else row[1]
        text = clean_text(raw)
        if not text:
            raise DataSourceError(f"{path}:{line_no}: empty text")
        title, body = (clean_text(row[1]), clean_text(row[2])) if len(row) == 3 else ("", "")
        examples.append(Example(text, label, title, body))
    if texts and not examples or len(rows) <= start:
        raise DataSourceError(f"{path} has no data rows")
    return examples


def _folder_files(folder: Path, use_extra: bool) -> tuple[Path, list[Path], Path | None]:
    """A data folder's train.csv, its extra training files (train_*.csv) if used, and its test.csv if any."""
    train_csv = folder / "train.csv"
    if not train_csv.is_file():
        raise DataSourceError(f"{folder} has no train.csv (label,title,description or label,text)")
    test_csv = folder / "test.csv"
    return train_csv, sorted(folder.glob("train_*.csv")) if use_extra else [], test_csv if test_csv.is_file() else None


def _from_folder(folder: Path, val_fraction: float, use_extra: bool) -> Corpus:
    train_csv, extras, test_csv = _folder_files(folder, use_extra)
    # Every file of the folder names topics of one list.
    files, labels = read_labelled([train_csv, *extras, *([test_csv] if test_csv else [])])
    train, validation = split_by_hash(files[0], val_fraction)
    parts = [f"{train_csv.name} ({len(train) + len(validation)} rows)"]
    # Extra files are partial reconstructions: they only ever add training rows, so the validation split stays a
    # verbatim part of train.csv.
    for extra, rows in zip(extras, files[1 : 1 + len(extras)], strict=True):
        train.extend(rows)
        parts.append(f"{extra.name} ({len(rows)} rows)")
    test = files[-1] if test_csv else []
    if test:
        parts.append(f"test.csv ({len(test)} rows)")
    # The folder's name, never its path: descriptions reach the page, which must not show server paths.
    return _finish(train, validation, test, f"{folder.name}: " + ", ".join(parts), labels)


def _finish(train: list[Example], validation: list[Example], test: list[Example], description: str,
            labels: tuple[str, ...] = LABELS) -> Corpus:
    validation = dedupe(validation, exclude=test)
    train = dedupe(train, exclude=[*validation, *test])
    if not train or not validation:
        raise DataSourceError(f"{description}: too few rows to make train and validation splits")
    return Corpus(train, validation, test, description, labels)


# How long the hub gets to accept a connection before its data is said unreachable: a second is ample for a host that
# answers, while the hub library's own retries take about 25 s to give up (5 retries, each warning printed twice).
HUB_PROBE_S = 1.0
_TRUE = ("1", "ON", "YES", "TRUE")


def hub_unreachable() -> str | None:
    """Why the Hugging Face hub cannot be reached now (its offline mode is set, or its endpoint does not accept a
    connection within HUB_PROBE_S), or None."""
    for variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(variable, "").strip().upper() in _TRUE:
            return f"{variable} is set"
    return unreachable(os.environ.get("HF_ENDPOINT") or "https://huggingface.co", HUB_PROBE_S)


def _in_hub_cache(name: str) -> bool:
    """Whether a copy of hub dataset `name` may be in this machine's cache (the hub's or the datasets library's
    folders, where their environment variables or defaults put them)."""
    home = Path(os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                / "huggingface")
    hub = Path(os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE") or home / "hub")
    sets = Path(os.environ.get("HF_DATASETS_CACHE") or home / "datasets")
    return (hub / f"datasets--{name.replace('/', '--')}").is_dir() or any(sets.glob(f"*{name.split('/')[-1]}*"))


def _offline_mode() -> None:
    """Read the hub's datasets from the local cache only, for the rest of this process (no retries on a hub that
    does not answer): the environment for libraries not imported yet, their settings for those that are."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    for module, attribute in (("huggingface_hub.constants", "HF_HUB_OFFLINE"), ("datasets.config", "HF_HUB_OFFLINE")):
        if module in sys.modules:
            setattr(sys.modules[module], attribute, True)


def _from_hub(name: str, val_fraction: float) -> Corpus:
    why = hub_unreachable()
    if why is not None:
        if not _in_hub_cache(name):  # said at once, without importing the datasets library
            raise DataSourceError(f"cannot load dataset {name!r}: the Hugging Face hub cannot be reached ({why}) and "
                                  "no copy is cached here. Offline? Set NEWSLOOP_DATA to a folder or file of labelled CSVs")
        _offline_mode()
    try:
        import datasets

        ds = datasets.load_dataset(name)
    except Exception as exc:
        raise DataSourceError(
            f"cannot load dataset {name!r} from the Hugging Face hub ({type(exc).__name__}: {exc}). "
            "Offline? Set NEWSLOOP_DATA to a folder or file of labelled CSVs"
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


def _kind(source: str) -> str:
    """What `source` names: "seed", "folder", "file", "missing" (a path that is not there) or "hub" (a dataset id)."""
    if source == SEED_SOURCE:
        return "seed"
    path = Path(source).expanduser()
    if path.is_dir():
        return "folder"
    if path.is_file():
        return "file"
    if path.suffix.lower() == ".csv" or path.exists() or source.startswith((".", "/", "~")):
        return "missing"
    return "hub"


def load_corpus(source: str, val_fraction: float = 0.1, use_extra: bool = True) -> Corpus:
    """Load `source`: 'seed', a folder with train.csv, one CSV file, or a Hugging Face dataset id (AG News's
    numbered labels). `Corpus.labels` are the source's topics: AG News's four, or the names its CSVs use."""
    kind = _kind(source)
    if kind == "seed":
        return load_seed()
    path = Path(source).expanduser()
    if kind == "folder":
        return _from_folder(path, val_fraction, use_extra)
    if kind == "missing":
        raise DataSourceError(f"{source} does not exist")
    if kind == "file":
        [rows], labels = read_labelled([path])
        train, validation = split_by_hash(rows, val_fraction)
        return _finish(train, validation, [], f"{path.name} ({len(train) + len(validation)} rows)", labels)
    return _from_hub(source, val_fraction)


def load_corpus_or_seed(source: str, val_fraction: float = 0.1, use_extra: bool = True) -> Corpus:
    """Like `load_corpus`, but read the built-in seed set (AG News's topics) when a hub dataset cannot be loaded:
    the hub reads AG News's format only, so the seed set has its topics. A file or folder is never replaced by it,
    refused or missing: training on AG News instead of the data someone named would hide their mistake. The
    seed set's description then says whose place it took; one warning line says why."""
    try:
        return load_corpus(source, val_fraction, use_extra)
    except DataSourceError as exc:
        if _kind(source) != "hub":
            raise
        seed = load_seed()
        rows = len(seed.train) + len(seed.validation)
        log.warning("%s; reading the built-in AG News seed set (%d rows) instead", exc, rows)
        return replace(seed, description=f"{seed.description}, in place of {source} (not reachable)")


def source_labels(source: str, use_extra: bool = True) -> tuple[str, ...]:
    """The topics `load_corpus_or_seed(source)` gives its examples, without loading a dataset from the hub (AG
    News's four, as the seed set's): what a starter or a champion must predict to fit the configured data. Raises
    DataSourceError as it does, for a file or folder that is there but refused, or a path that is not there."""
    kind = _kind(source)
    path = Path(source).expanduser()
    if kind in ("seed", "hub"):
        return LABELS
    if kind == "missing":
        raise DataSourceError(f"{source} does not exist")
    if kind == "folder":
        train_csv, extras, test_csv = _folder_files(path, use_extra)
        return read_labelled([train_csv, *extras, *([test_csv] if test_csv else [])], texts=False)[1]
    return read_labelled([path], texts=False)[1]


def data_name(source: str) -> str:
    """The data as people name it: a file's or folder's name (never its path: names reach the page), a hub dataset's
    id, or "the seed set"."""
    kind = _kind(source)
    if kind == "seed":
        return "the seed set"
    return source if kind == "hub" else Path(source).expanduser().name


def is_ag_news(source: str, use_extra: bool = True) -> bool:
    """Whether the configured data is AG News (its four topics): the hub's dataset, the seed set, or files that name
    them. Only then may the project's own AG News texts (the seed set, the demo pool, Classify's examples) stand in
    for the data's. Raises DataSourceError as `source_labels` does."""
    return source_labels(source, use_extra) == LABELS
