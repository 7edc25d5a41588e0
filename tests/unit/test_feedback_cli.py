"""Tests of `python -m feedback`: import, export and stats against the configured database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.command_line import ExitCode
from feedback.__main__ import main
from feedback.database.schema import CURRENT_VERSION
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"  # does not exist yet: the CLI creates it
    monkeypatch.setenv("NEWSLOOP_HOME", str(home))
    return home


def test_import_then_stats_and_export(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pool = tmp_path / "pool.csv"
    pool.write_text("text\nFirst story\nSecond story\nFirst story\n", encoding="utf-8")
    assert main(["import", str(pool)]) == 0
    assert "imported 2 new items" in capsys.readouterr().out
    FeedbackStore(home / "feedback.db").answers.record(AnswerInput(text="=1+1", user_label="World", annotator="a", kind="correct"))

    assert main(["stats"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["pool"]["items"] == 2 and stats["answers"] == 1

    assert main(["export", "--format", "csv"]) == 0
    assert "'=1+1" in capsys.readouterr().out
    out = tmp_path / "answers.jsonl"
    assert main(["export", "--format", "jsonl", "--out", str(out)]) == 0
    assert json.loads(out.read_text(encoding="utf-8"))["text"] == "=1+1"


def test_bad_pool_file_exits_non_zero_with_message(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text('{"text": "fine"}\nnot json\n', encoding="utf-8")
    assert main(["import", str(pool)]) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert "line 2: malformed JSON" in err and "Traceback" not in err
    assert main(["import", str(tmp_path / "missing.csv")]) == ExitCode.BAD_INPUT
    assert "cannot read" in capsys.readouterr().err


def test_import_with_skip_bad_imports_the_good_rows_and_lists_every_bad_one(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pool = tmp_path / "articles.csv"
    rows = [f"Article {i}: " + "the council met again. " * (900 if i % 3 == 0 else 5) for i in range(30)]
    pool.write_text("text\n" + "\n".join(rows) + "\n\"\"\n", encoding="utf-8")  # 10 of 20,700 characters; an empty one
    assert main(["import", "--skip-bad", str(pool)]) == 0
    out = capsys.readouterr().out
    assert "imported 20 new items" in out and "11 bad rows left out:" in out
    assert out.count("  line ") == 11 and "line 2: text is 20,710 characters; at most 20,000" in out
    assert "line 32: empty text" in out

def test_bad_configuration_exits_non_zero_with_message(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NEWSLOOP_FEEDBACK_PER_MINUTE", "0")
    assert main(["stats"]) == ExitCode.CONFIG
    assert "NEWSLOOP_FEEDBACK_PER_MINUTE" in capsys.readouterr().err


def test_tables_describes_a_backup_read_only(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = FeedbackStore(tmp_path / "feedback.db")
    store.answers.record(AnswerInput(text="A story", user_label="World", annotator="a", kind="correct"))
    store.database.backup(tmp_path / "backup.db")
    assert main(["tables", str(tmp_path / "backup.db")]) == 0
    described = json.loads(capsys.readouterr().out)
    assert described["schema_version"] == CURRENT_VERSION and described["tables"]["answers"]["rows"] == 1
    assert described["tables"]["served_tallies"]["rows"] == 0
    assert described["tables"]["pool"] == {"rows": 0, "columns": [
        "id", "text", "text_hash", "source", "added_at", "uncertainty", "scored_by", "gold_label", "held_by",
        "held_reason", "traffic", "top_key", "top_prob", "probabilities", "focus", "pushed", "pushed_by", "pushed_at"]}
    assert main(["tables", str(tmp_path / "missing.db")]) == ExitCode.BAD_INPUT and not (tmp_path / "missing.db").exists()


def test_queue_push_puts_a_search_first_and_clear_takes_it_out(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pool = tmp_path / "pool.csv"
    pool.write_text("text\nWildfire smoke over the valley\nRates rise again\nA wildfire in the hills\n", encoding="utf-8")
    assert main(["import", str(pool)]) == 0
    assert main(["queue", "push", "wildfire", "--count", "5", "--by", "maya"]) == 0
    assert "pushed 2 articles to the front of the queue (2 pushed articles waiting)" in capsys.readouterr().out
    assert FeedbackStore(home / "feedback.db").pool.pushed_waiting() == 2
    assert main(["queue", "push", "   "]) == ExitCode.BAD_INPUT
    assert main(["queue", "clear"]) == 0
    assert "cleared 2 pushed articles" in capsys.readouterr().out


def test_a_reader_that_stops_reading_ends_the_output_quietly(home: Path) -> None:
    """`newsloop stats | head` printed "error: [Errno 32] Broken pipe"; a command whose reader goes away ends as click
    ends it: no message, status 1 (a pipeline reads the last command's)."""
    import os
    import subprocess
    import sys

    from core.settings.config import PROJECT_ROOT
    from core.settings.policies import StoreLimits

    home.mkdir()
    store = FeedbackStore(home / "feedback.db", StoreLimits(writes_per_minute=100_000,
                                                             address_writes_per_minute=100_000))
    long_story = " and its long aftermath" * 60  # 150 answers of ~1.4 KB: an export far larger than a pipe's buffer
    for i in range(150):
        store.answers.record(AnswerInput(text=f"Story number {i} about the summit{long_story}", user_label="World",
                     annotator=f"a{i % 7}", kind="correct"))
    store.close()
    env = os.environ | {"NEWSLOOP_HOME": str(home), "PYTHONPATH": str(PROJECT_ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "newsloop", "export", "--format", "csv"], cwd=PROJECT_ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"id,")
    proc.stdout.close()  # as `head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == ExitCode.ERROR and err == ""
