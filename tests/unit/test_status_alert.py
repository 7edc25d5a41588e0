"""The traffic alert outside the page: `newsloop status` exits non-zero while it is up, and `watch` retrains on it
only when NEWSLOOP_MONITOR_RETRAIN_ON_ALERT says so. The real console script, the shipped starter as champion (its
validation accuracy is real, so an estimate can fall below it), a real store."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from core.command_line import ExitCode
from core.evaluation.estimate import Tally
from core.labels import LABELS
from core.registry.starter import install_starter
from core.registry.versions import ModelRegistry
from core.settings.config import load_settings
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from feedback.traffic.served import TallyKey, save_tallies, utc_day
from retrain.actions import retrain_reason


def _newsloop(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    script = shutil.which("newsloop", path=str(Path(sys.executable).parent))
    assert script, "the console script is not installed: pip install -e ."
    return subprocess.run([script, *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NEWSLOOP_HOME": str(home), **env})


def _home_with_starter(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    assert install_starter(ModelRegistry(home / "models")) is not None
    FeedbackStore(home / "feedback.db").close()
    return home


def _serve_unsure_headlines(home: Path, n: int = 150, confidence: float = 0.5) -> None:
    """Tallies of `n` headlines the champion was only `confidence` sure of, as a server writes them."""
    champion = ModelRegistry(home / "models").champion()
    assert champion is not None
    rows = np.full((n, len(LABELS)), (1 - confidence) / 3)
    rows[:, 0] = confidence
    store = FeedbackStore(home / "feedback.db")
    save_tallies(store.database, "test", {TallyKey(utc_day(), "title", champion.version): Tally().add(rows)})
    store.close()


def test_status_exits_non_zero_while_the_alert_is_up(tmp_path: Path) -> None:
    home = _home_with_starter(tmp_path)
    quiet = _newsloop(home, "status", "--json")
    assert quiet.returncode == ExitCode.OK, quiet.stderr
    assert json.loads(quiet.stdout)["traffic"]["alerts"] == []

    _serve_unsure_headlines(home)
    alerting = _newsloop(home, "status", "--json")
    assert alerting.returncode == ExitCode.ALERT, alerting.stderr
    traffic = json.loads(alerting.stdout)["traffic"]
    assert traffic["alerts"] == ["title"] and traffic["forms"]["title"]["n"] == 150
    assert "alert: Estimated accuracy on headline texts is 50.0%" in alerting.stderr
    summary = _newsloop(home, "status")  # without --json: a summary a person reads, the same exit status
    assert summary.returncode == ExitCode.ALERT and len(summary.stdout.splitlines()) < 60
    assert "headline 50.0% of 150 (ALERT)" in summary.stdout and "confidence_maps" not in summary.stdout
    # A margin wider than the drop, or fewer texts than a form needs: no alert.
    assert _newsloop(home, "status", NEWSLOOP_MONITOR_ALERT_POINTS="60").returncode == ExitCode.OK
    assert _newsloop(home, "status", NEWSLOOP_MONITOR_MIN_TEXTS="151").returncode == ExitCode.OK


def test_watch_retrains_on_the_alert_only_when_told_to_and_only_with_something_new(tmp_path: Path) -> None:
    home = _home_with_starter(tmp_path)
    _serve_unsure_headlines(home)
    settings = load_settings(home=home)
    assert retrain_reason(settings.with_(monitor_retrain_on_alert=True), 50) == (0, None)  # nothing new to learn
    store = FeedbackStore(home / "feedback.db")
    store.answers.record(AnswerInput(text="Shares of the chip maker jumped after strong earnings.", user_label="Business",
                 annotator="user:ann", kind="correct", verified=True))
    store.close()
    assert retrain_reason(settings, 50) == (1, None)  # off by default: one answer is not the 50 needed
    new, reason = retrain_reason(settings.with_(monitor_retrain_on_alert=True), 50)
    assert new == 1 and reason is not None
    assert reason.startswith("the traffic alert is up") and "headline texts is 50.0%" in reason
    assert retrain_reason(settings, 1) == (1, "1 new trusted answers since the last run")
