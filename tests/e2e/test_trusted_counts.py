"""One count of "trusted" everywhere: on a fresh home with three trusted answers, none of which may train (two fall in
the holdout, one in the traffic set), the retrain preview, the admin tiles, the run's log, its decision and
`newsloop status` name the same parts; the run says it stopped before training rather than that a gate kept the
champion; the next preview's duration is the measured one; and no command prints a library's INFO line.

The maintainer's report: the preview said "would train on 0" beside "3 new trusted answers" and a tile of 3 trusted,
the run logged "3 trusted feedback examples", then "There is no trusted feedback to learn from yet", and "the gate
kept the champion" with `"gate": null`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.command_line import ExitCode
from core.data import is_validation
from core.evaluation.decision import FeedbackParts
from core.registry.stages import read_last_run
from core.registry.versions import ModelRegistry
from core.settings.config import PROJECT_ROOT
from core.text import text_hash
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from feedback.traffic.traffic_set import draw
from feedback.training.snapshot import HOLDOUT_SALT
from testkit.models import tiny_settings
from web.admin import report
from web.admin.actions import AdminActions, AdminPolicy
from web.admin.jobs import JobStatus, RetrainJobs
from web.server.identity import IdentityService

pytestmark = pytest.mark.e2e

READER = "anon:reader"  # anyone may train by default (NEWSLOOP_TRAIN_ON=anyone): one answer makes a text trusted
TRAFFIC_SHARE = 0.2  # the queue's default share of the pool drawn into the traffic set


def _texts(count: int, *, holdout: bool, traffic: bool) -> list[str]:
    """Made-up articles the hash splits put where asked (fixed by the text alone, so the same on every run)."""
    found = []
    for i in range(10_000):
        text = f"Reader's story {i}: the council approves the new stadium budget"
        if (is_validation(text, 0.25, HOLDOUT_SALT) == holdout and (draw(text_hash(text)) < TRAFFIC_SHARE) == traffic):
            found.append(text)
            if len(found) == count:
                return found
    raise AssertionError("no such texts")


def _three_trusted_answers(store: FeedbackStore) -> None:
    """Two answers on Classify that the holdout takes, one in the queue on a traffic-set article."""
    for text in _texts(2, holdout=True, traffic=False):
        store.answers.record(AnswerInput(text=text, user_label="Sports", annotator=READER, kind="correct"))
    (traffic_text,) = _texts(1, holdout=False, traffic=True)
    store.pool.add([traffic_text], source="test")
    item = store.pool.next_item(READER, tiny_settings(Path("unused")).queue)  # draws the item into the traffic set
    assert item is not None and item["text"] == traffic_text
    store.answers.record(AnswerInput(text=traffic_text, user_label="Sports", annotator=READER, kind="queue", item_id=item["id"]))


def _command(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ) | {
        "NEWSLOOP_HOME": str(home), "NEWSLOOP_DATA": "seed", "NEWSLOOP_MAX_LENGTH": "64",
        "NEWSLOOP_RETRAIN_BASE_ROWS": "0", "NEWSLOOP_RETRAIN_MAX_MINUTES": "0",
        "MLFLOW_TRACKING_URI": f"sqlite:///{home}/mlflow.db", "PYTHONPATH": str(PROJECT_ROOT),
    }
    env.pop("MLFLOW_LOGGING_LEVEL", None)  # as a shell would start it: the command line quiets the libraries itself
    return subprocess.run([sys.executable, "-m", "newsloop", *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=PROJECT_ROOT)


def _admin(home: Path, store: FeedbackStore) -> AdminActions:
    settings = tiny_settings(home)
    admin = AdminActions(store, registry=ModelRegistry(settings.paths.models_dir), jobs=RetrainJobs(settings.paths),
                         identities=IdentityService(b"0" * 32),
                         policy=AdminPolicy(trust=settings.trust_policy(), retrain=settings.retrain_policy(),
                                            promotion=settings.gate))
    admin.is_admin_event = lambda request, profile=None: True  # type: ignore[method-assign]  # a signed-in admin
    return admin


def test_preview_tiles_log_decision_and_status_state_the_same_counts(tiny_home_copy: Path) -> None:
    home = tiny_home_copy
    store = FeedbackStore(home / "feedback.db")
    try:
        _three_trusted_answers(store)
        parts = FeedbackParts(train=0, holdout=2, traffic=1)
        words = parts.words()
        assert words == ("3 trusted texts: 0 to train on, 2 held out for the gate, "
                         "1 in the traffic set (judged on, never trained on)")
        admin = _admin(home, store)
        preview, _ = admin.retrain_preview(request=object())
        assert words in preview and "it would stop before training" in preview
        assert "3 new trusted answer(s) since the last run" in preview
        assert "a first guess: no run has stopped before training on this host yet" in preview
        assert admin.trusted_parts() == parts
        tiles = report.tiles(store.stats(), admin.trusted_parts(), 0)
        assert '<div class="n">3</div><div class="what">trusted texts</div><div class="what">0 to train on</div>' in tiles
        assert words in tiles  # the tile's hint
    finally:
        store.close()

    run = _command(home, "retrain")
    assert run.returncode == ExitCode.REFUSED, run.stderr  # not promoted, though no gate ran
    assert f"feedback: {words}" in run.stderr
    assert "trusted feedback examples" not in run.stderr  # the old, second count of "trusted"
    record = json.loads(run.stdout)
    assert record["gate"] is None and record["challenger"] is None
    stopped = f"Nothing to train on, so no new model was trained or judged ({words})."
    assert record["reasons"] == [stopped]
    last = read_last_run(tiny_settings(home).paths)
    assert last is not None and last.reasons == [stopped]
    decision = report.decision_text(last)
    assert stopped in decision and "gate" not in decision.replace(words, "")  # no gate claimed beyond the parts' names
    ended = report.progress_html(JobStatus("run", False, ExitCode.REFUSED, "", 100.0, None, ""))
    assert "gate" not in ended and "the decision says why" in ended

    status = _command(home, "status")
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    assert len(lines) < 60 and f"Feedback a retrain would read: {words}" in lines
    assert any(line.strip() == stopped for line in lines)  # the last run's reason
    full = json.loads(_command(home, "status", "--json").stdout)
    assert full["feedback"]["train"] == 0 and full["feedback"]["holdout"] == 2 and full["feedback"]["trusted"] == 3
    assert "confidence_maps" in full["champion_meta"] or "validation" in full["champion_meta"]  # the whole report

    for finished in (run, status):  # no library INFO lines, Alembic's least of all
        assert "alembic" not in finished.stdout + finished.stderr
        assert " INFO mlflow" not in finished.stderr

    # The next preview's duration is the one just measured, for a run of the same kind (one that stops first).
    store = FeedbackStore(home / "feedback.db")
    try:
        preview, _ = _admin(home, store).retrain_preview(request=object())
    finally:
        store.close()
    assert "measured on this host (its last run that stopped before training)" in preview
    assert f"about **{last.seconds:.0f} s**" in preview
