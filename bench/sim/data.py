"""The simulation's data: source CSVs, the shifted slice and the labellers' stream, the champion's data folder."""

from __future__ import annotations

import csv
import os
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from core.data import Example, is_validation, read_csv, split_by_hash
from core.labels import label_index
from core.settings.config import PROJECT_ROOT, SEED_CSV
from core.text import text_hash

DEFAULT_DATA = PROJECT_ROOT.parent / "shared" / "data" / "ag_news"
SLICE_LABEL = "Business"
# Oil and energy prices: about 900 Business rows over train.csv and the extra files of the offline copy.
SLICE_KEYWORDS = ("oil", "crude", "opec", "barrel", "barrels", "petroleum", "gasoline",
                  "energy price", "energy prices", "fuel price", "fuel prices")
# The seed set has only five oil articles; the mechanics test takes Business news about markets too.
TINY_KEYWORDS = (*SLICE_KEYWORDS, "energy", "fuel", "price", "prices", "market", "markets", "share", "shares",
                 "stock", "stocks", "profit", "profits")
MIN_SLICE_ROWS = 300  # below this the slice-test part is too small to show a gain


@dataclass(frozen=True)
class SourceFile:
    """One CSV of the data source: its raw rows (written back verbatim) and their parsed examples."""

    name: str  # name in the simulation's data folder: train.csv or train_*.csv
    header: list[str] | None
    rows: list[list[str]]
    examples: list[Example]


@dataclass(frozen=True)
class SlicePlan:
    slice_rows: int
    slice_by_file: dict[str, int]
    slice_stream: list[Example]
    slice_test: list[Example]
    other_stream: list[Example]
    stream: list[Example]  # slice_stream + other_stream, shuffled: what labellers are offered, in this order
    excluded: frozenset[str]  # text hashes kept out of the champion's (and every retrain's) base data
    checks: list[Example] = field(default_factory=list)  # known-answer checks: training rows, labels vouched for


@dataclass(frozen=True)
class SliceOptions:
    """How the slice is cut and the stream drawn (the loop's command-line options)."""

    test_fraction: float = 0.3  # share of the slice held out for testing
    slice_share: float = 0.5  # share of slice articles in the stream
    seed: int = 13
    checks: int = 0  # known-answer checks drawn from non-slice rows


def data_location(data: str | None, tiny: bool = False) -> str:
    """The data the simulation reads: the given one, else the seed set (tiny), NEWSLOOP_DATA or ../shared."""
    return data or ("seed" if tiny else os.environ.get("NEWSLOOP_DATA") or str(DEFAULT_DATA))


def slice_words(keywords: str | None, tiny: bool = False) -> list[str]:
    """Comma-separated keywords, else the default slice keywords (wider ones on the seed set)."""
    return keywords.split(",") if keywords else list(TINY_KEYWORDS if tiny else SLICE_KEYWORDS)


def read_source(path: Path, name: str) -> SourceFile:
    """A CSV with its raw rows aligned to `core.data.read_csv`'s examples (same header and empty-row rules)."""
    examples = read_csv(path)
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    header = rows[0] if rows and rows[0] and not rows[0][0].strip().isdigit() else None
    data = [row for row in rows[1 if header else 0 :] if row]
    if len(data) != len(examples):
        raise RuntimeError(f"{path}: {len(data)} raw rows but {len(examples)} parsed examples")
    return SourceFile(name, header, data, examples)


def load_sources(data: str) -> list[SourceFile]:
    """train.csv and the train_*.csv extras of a local folder, one local CSV, or the seed set."""
    if data == "seed":
        return [read_source(SEED_CSV, "train.csv")]
    path = Path(data).expanduser()
    if path.is_file():
        return [read_source(path, "train.csv")]
    if not (path / "train.csv").is_file():
        raise SystemExit(f"--data {data}: needs a local AG-News folder with train.csv, a CSV file, or 'seed'")
    return [read_source(path / "train.csv", "train.csv")] + [
        read_source(extra, extra.name) for extra in sorted(path.glob("train_*.csv"))
    ]


def keyword_pattern(words: Sequence[str]) -> re.Pattern[str]:
    """One case-insensitive whole-word pattern for the keywords; longest first, spaces match any whitespace."""
    alternatives = sorted({w.strip().lower() for w in words if w.strip()}, key=len, reverse=True)
    return re.compile(r"\b(?:" + "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in alternatives) + r")\b", re.I)


def plan_slice(
    sources: list[SourceFile],
    pattern: re.Pattern[str],
    *,
    test_fraction: float,
    other_share: float,
    val_fraction: float,
    seed: int,
    checks: int = 0,
) -> SlicePlan:
    """Pick the slice, split it by text hash into stream and slice-test parts, and draw the non-slice stream.

    Stream and slice-test articles come from rows outside base validation, so validation stays what it is:
    the data's own validation split, slice rows included (the champion never trains on validation rows
    anyway). A validation set without the slice would punish every challenger that learns it: the
    champion's "energy is Sci/Tech" shortcut would look right there and the correction look like a regression.
    `checks` known-answer checks are drawn from the remaining non-slice rows; they stay in the training data.
    """
    slice_label = label_index(SLICE_LABEL)
    seen: set[str] = set()
    in_slice: list[Example] = []
    others: list[Example] = []
    by_file: dict[str, int] = {}
    for source in sources:
        for ex in source.examples:
            digest = text_hash(ex.text)
            if digest in seen:
                continue
            seen.add(digest)
            if is_validation(ex.text, val_fraction):
                continue
            if ex.label == slice_label and pattern.search(ex.text):
                in_slice.append(ex)
                by_file[source.name] = by_file.get(source.name, 0) + 1
            else:
                others.append(ex)
    slice_stream, slice_test = split_by_hash(in_slice, test_fraction, salt="slice-test")
    rng = random.Random(seed)
    wanted = round(len(slice_stream) * other_share / (1.0 - other_share)) if other_share < 1.0 else 0
    other_stream = rng.sample(others, min(wanted, len(others)))
    stream = slice_stream + other_stream
    rng.shuffle(stream)
    excluded = frozenset(text_hash(ex.text) for ex in (*in_slice, *other_stream))
    # Drawn after the stream, so runs without checks see the same stream as before checks existed.
    remaining = [ex for ex in others if text_hash(ex.text) not in excluded]
    check_rows = rng.sample(remaining, min(checks, len(remaining)))
    return SlicePlan(len(in_slice), by_file, slice_stream, slice_test, other_stream, stream, excluded, check_rows)


def write_training_folder(sources: list[SourceFile], excluded: frozenset[str], dest: Path) -> dict[str, int]:
    """An AG-News-format folder holding every source row except the excluded texts; rows kept per file."""
    dest.mkdir(parents=True, exist_ok=True)
    kept: dict[str, int] = {}
    for source in sources:
        with (dest / source.name).open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            if source.header:
                writer.writerow(source.header)
            n = 0
            for row, ex in zip(source.rows, source.examples, strict=True):
                if text_hash(ex.text) not in excluded:
                    writer.writerow(row)
                    n += 1
        kept[source.name] = n
    return kept


def prepare_slice(
    data: str, words: Sequence[str], dest: Path, options: SliceOptions, val_fraction: float
) -> tuple[SlicePlan, dict[str, int]]:
    """Pick the slice and the stream, and write the champion's data folder without them to `dest`."""
    sources = load_sources(data)
    plan = plan_slice(sources, keyword_pattern(words), test_fraction=options.test_fraction,
                      other_share=1.0 - options.slice_share, val_fraction=val_fraction, seed=options.seed,
                      checks=options.checks)
    return plan, write_training_folder(sources, plan.excluded, dest)
