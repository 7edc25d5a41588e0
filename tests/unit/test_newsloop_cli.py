"""The `newsloop` console script as a user runs it after the README's install, and its aliases."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.command_line import ExitCode
from core.settings.config import setting_fields
from feedback.cli import COMMANDS as FEEDBACK_COMMANDS
from feedback.labelling.answers import AnswerInput
from newsloop.cli import cli, main
from retrain.cli import COMMANDS as RETRAIN_COMMANDS

SECRET = "a-very-long-admin-password-1234"


def _newsloop(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    script = shutil.which("newsloop", path=str(Path(sys.executable).parent))
    assert script, "the console script is not installed: pip install -e ."
    return subprocess.run([script, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_help_lists_every_subcommand() -> None:
    done = _newsloop("--help")
    assert done.returncode == 0, done.stderr
    for name in ("serve", "bootstrap", "retrain", "rollback", "watch", "evaluate", "status", "export", "review",
                 "starter", "config"):
        assert f"  {name} " in done.stdout, name


def test_config_prints_every_setting_with_its_source_and_masks_secrets(tmp_path: Path) -> None:
    env_file = tmp_path / "newsloop.env"
    env_file.write_text("NEWSLOOP_MAX_BATCH=8\nexport NEWSLOOP_HUB_TOKEN='hf_file_secret_value'\n", encoding="utf-8")
    clean = {name: value for name, value in os.environ.items() if not name.startswith("NEWSLOOP_")}
    done = subprocess.run(
        [shutil.which("newsloop", path=str(Path(sys.executable).parent)) or "newsloop", "config", "--json"],
        capture_output=True, text=True, timeout=120,
        env=clean | {"NEWSLOOP_ADMIN_PASSWORD": SECRET, "NEWSLOOP_PORT": "7999", "NEWSLOOP_ENV_FILE": str(env_file),
                     "NEWSLOOP_HOME": str(tmp_path / "home")},
    )
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout and "hf_file_secret_value" not in done.stdout
    rows = {row["env"]: row for row in json.loads(done.stdout)}
    assert set(rows) == {item.env for item in setting_fields()}
    assert rows["NEWSLOOP_ADMIN_PASSWORD"] == rows["NEWSLOOP_ADMIN_PASSWORD"] | {"value": "********", "source": "env"}
    assert rows["NEWSLOOP_HUB_TOKEN"]["value"] == "********"
    assert rows["NEWSLOOP_HUB_TOKEN"]["source"] == f"file:{env_file}"
    assert (rows["NEWSLOOP_PORT"]["value"], rows["NEWSLOOP_PORT"]["source"]) == ("7999", "env")
    assert (rows["NEWSLOOP_MAX_BATCH"]["value"], rows["NEWSLOOP_MAX_BATCH"]["source"]) == ("8", f"file:{env_file}")
    assert (rows["NEWSLOOP_MAX_LENGTH"]["source"]) == "default"
    assert rows["NEWSLOOP_USERS"]["value"] == "(unset)"


def test_config_table_masks_secrets_and_a_bad_setting_is_one_line() -> None:
    done = _newsloop("config", env={"NEWSLOOP_ADMIN_PASSWORD": SECRET})
    assert done.returncode == 0 and SECRET not in done.stdout
    assert any(line.startswith("NEWSLOOP_ADMIN_PASSWORD") and "********  (env)" in line
               for line in done.stdout.splitlines())
    bad = _newsloop("config", env={"NEWSLOOP_MAX_BATCH": "lots"})
    assert bad.returncode == ExitCode.CONFIG and "NEWSLOOP_MAX_BATCH" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize("args", [["config"], ["stats"], ["status"], ["serve"]])
def test_a_bad_setting_exits_the_same_status_from_every_command(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # One table of exit statuses (core.command_line.ExitCode): a feedback command, a model command, the
    # configuration and the server all say a bad setting the same way.
    monkeypatch.setenv("NEWSLOOP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NEWSLOOP_MAX_BATCH", "lots")
    assert main(args) == ExitCode.CONFIG
    assert "NEWSLOOP_MAX_BATCH" in capsys.readouterr().err


def test_the_aliases_are_the_same_commands() -> None:
    assert cli.commands["retrain"] is RETRAIN_COMMANDS["run"]
    for name, command in RETRAIN_COMMANDS.items():
        assert cli.commands["retrain" if name == "run" else name] is command
    for name, command in FEEDBACK_COMMANDS.items():
        assert cli.commands[name] is command


@pytest.mark.parametrize("module", ["retrain", "feedback"])
def test_python_dash_m_aliases_still_answer(module: str) -> None:
    done = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert ("bootstrap" if module == "retrain" else "export") in done.stdout


def test_status_counts_the_suspicious_answers_the_admin_tile_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 59: `status` said 0 suspicious answers (those of signed-in or checked people) while the tile said 2."""
    from feedback.store import FeedbackStore
    from web.admin.report import tiles

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("NEWSLOOP_HOME", str(home))
    monkeypatch.setenv("NEWSLOOP_DATA", "seed")
    store = FeedbackStore(home / "feedback.db")
    for i in range(2):  # anonymous answers the model was very sure were another topic
        store.answers.record(AnswerInput(text=f"Striker scores twice, story {i}", user_label="Business", annotator=f"anon{i}",
                     kind="correct", probabilities={"World": 0.02, "Sports": 0.95, "Business": 0.02, "Sci/Tech": 0.01}))
    assert '<div class="n">2</div><div class="what">suspicious waiting</div>' in tiles(store.stats(), None, 0)
    store.close()
    assert main(["status"]) == 0
    assert ("suspicious answers waiting for review: 2, 0 of them from signed-in or checked people"
            in capsys.readouterr().out)
