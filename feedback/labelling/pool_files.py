"""Reading labelling-pool files (CSV/JSONL) into checked pool rows, naming every bad line."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import NoReturn

from core.taxonomy import Taxonomy
from core.text import clean_text, join_title
from feedback.errors import FeedbackError, PoolImportError
from feedback.validate import PoolRow, check_pool_row

# Enough to find and fix a broken file without flooding the screen.
_PROBLEMS_SHOWN = 20
_FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


def read_pool_file(
    path: Path, *, max_chars: int, labelled: bool = False, taxonomy: Taxonomy | None = None, skip_bad: bool = False
) -> tuple[list[PoolRow], list[tuple[int, str]]]:
    """Read and validate every row of a CSV or JSONL pool file: (the good rows, the bad lines with why).

    CSV needs a header with a `text` column, or `title` and `description` columns; JSONL needs one
    object per line with `text`, or `title` and `description`. With `labelled` (known-answer checks)
    every row also needs a `label`: a topic of `taxonomy` by name, or its 1-based position (AG News's class
    numbers 1-4 for its four topics); otherwise labels are
    ignored. Raises PoolImportError naming every bad line (unless `skip_bad`: then they are returned beside the
    good rows), or FeedbackError when the file cannot be read at all or has no good row.
    """
    path = Path(path)
    fmt = _FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise FeedbackError(f"unsupported pool file type {path.suffix or '(none)'!r}; use .csv or .jsonl")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FeedbackError(f"cannot read {path}: {exc.strerror or exc}") from None
    text = _decode(data, path)
    parse = _parse_csv if fmt == "csv" else _parse_jsonl
    rows, problems = parse(text, max_chars, labelled, taxonomy)
    if problems and not skip_bad:
        _raise_problems(path, problems)
    if not rows:
        raise FeedbackError(f"{path.name} has no rows to import" + (f" ({len(problems)} bad)" if problems else ""))
    return rows, problems


def _decode(data: bytes, path: Path) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    problems = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append((number, f"invalid UTF-8 (byte {exc.start + 1} of the line); save the file as UTF-8"))
    # A UTF-8 sequence never contains a newline byte, so some line above failed to decode.
    _raise_problems(path, problems)


def _raise_problems(path: Path, problems: list[tuple[int, str]]) -> NoReturn:
    shown = "\n".join(f"  line {line}: {problem}" for line, problem in problems[:_PROBLEMS_SHOWN])
    more = f"\n  ... and {len(problems) - _PROBLEMS_SHOWN} more" if len(problems) > _PROBLEMS_SHOWN else ""
    noun = "row" if len(problems) == 1 else "rows"
    raise PoolImportError(f"{path.name}: {len(problems)} bad {noun}; nothing was imported (--skip-bad imports the "
                          f"good rows and lists the others)\n{shown}{more}", problems)


def cleaned(text: str) -> str:
    """The text as labellers should read it: HTML entities ("#39;", "quot;", "&amp;") and the corpus's other
    scraping artifacts undone by `core.text.clean_text`, line by line so paragraph breaks survive."""
    # Only `clean_text` itself, line by line: the stored text keeps the raw text's `text_hash`, so answers
    # given on the raw text (a pasted correction) still name this pool item.
    lines = [clean_text(line) for line in text.split("\n")]
    kept = [line for i, line in enumerate(lines) if line or (i and lines[i - 1])]  # one blank line at most
    return "\n".join(kept).strip()


def _row(
    line: int, text: str, label: object, max_chars: int, rows: list[PoolRow], problems: list[tuple[int, str]],
    labelled: bool, taxonomy: Taxonomy | None,
) -> None:
    try:
        rows.append(check_pool_row(line, cleaned(text), label, max_chars=max_chars, labelled=labelled,
                                   taxonomy=taxonomy))
    except FeedbackError as exc:
        problems.append((line, str(exc)))


def _parse_csv(
    text: str, max_chars: int, labelled: bool, taxonomy: Taxonomy | None
) -> tuple[list[PoolRow], list[tuple[int, str]]]:
    rows: list[PoolRow] = []
    problems: list[tuple[int, str]] = []
    # newline="" keeps quoted line breaks intact for the csv module.
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = [name.strip().lower() for name in next(reader, [])]
    except csv.Error as exc:
        return rows, [(reader.line_num, f"malformed CSV header: {exc}")]
    if "text" in header:
        columns = [header.index("text")]
    elif "title" in header and "description" in header:
        columns = [header.index("title"), header.index("description")]
    else:
        found = ", ".join(repr(name) for name in header) or "none"
        raise FeedbackError(f"CSV needs a header with a 'text' column, or 'title' and 'description'; found {found}")
    if labelled and "label" not in header:
        raise FeedbackError("a file of known-answer checks needs a 'label' column")
    label_column = header.index("label") if labelled else None
    while True:
        start = reader.line_num + 1
        try:
            record = next(reader, None)
        except csv.Error as exc:
            # The csv module cannot resynchronise after a broken quote, so later rows are unchecked.
            problems.append((start, f"malformed CSV ({exc}); rows after this one were not checked"))
            break
        if record is None:
            break
        if not record:
            continue  # blank line
        if len(record) != len(header):
            problems.append((start, f"expected {len(header)} fields, found {len(record)}"))
            continue
        value = record[columns[0]] if len(columns) == 1 else join_title(record[columns[0]], record[columns[1]])
        label = record[label_column] if label_column is not None else None
        _row(start, value, label, max_chars, rows, problems, labelled, taxonomy)
    return rows, problems


def _parse_jsonl(
    text: str, max_chars: int, labelled: bool, taxonomy: Taxonomy | None
) -> tuple[list[PoolRow], list[tuple[int, str]]]:
    rows: list[PoolRow] = []
    problems: list[tuple[int, str]] = []
    # split("\n") rather than splitlines(): JSON strings may legally hold U+2028 and friends.
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append((number, f"malformed JSON: {exc.msg} (column {exc.colno})"))
            continue
        if not isinstance(obj, dict):
            problems.append((number, "expected a JSON object"))
            continue
        if isinstance(obj.get("text"), str):
            value = obj["text"]
        elif isinstance(obj.get("title"), str) and isinstance(obj.get("description"), str):
            value = join_title(obj["title"], obj["description"])
        else:
            problems.append((number, "needs a string 'text' field, or 'title' and 'description' fields"))
            continue
        _row(number, value, obj.get("label"), max_chars, rows, problems, labelled, taxonomy)
    return rows, problems
