"""A retrain reads through the maintainer's label fixes: the challenger's training rows and the validation the gate
judges on are exactly the fixed ones (the training itself is replaced, so this runs in seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest

import retrain.run as run_module
from core.data import Example, load_seed
from core.labels import LABELS
from core.registry.stages import read_last_run
from core.settings.policies import StoreLimits
from core.text import text_hash
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from feedback.trust.label_errors import Candidate, Source
from retrain.inputs import RetrainSetup
from retrain.training.targets import TrainingRows
from testkit.models import tiny_settings


class _Stop(Exception):
    """Raised by the stand-in trainer once it has seen the rows."""


def _other(label: int) -> str:
    return LABELS[(label + 1) % len(LABELS)]


def test_the_next_challenger_trains_and_is_judged_on_exactly_the_fixed_rows(
        tiny_home_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = tiny_settings(tiny_home_copy, retrain_base_rows=0)
    corpus = load_seed()
    store = FeedbackStore(settings.paths.feedback_db, StoreLimits(writes_per_minute=10_000))
    for i, ex in enumerate(corpus.train[:30]):  # trusted feedback, or the run stops before training
        store.answers.record(AnswerInput(text=ex.text, user_label=LABELS[ex.label], annotator=f"tester-{i % 3}", kind="correct"))
    relabel, excluded, undone, kept = corpus.train[40], corpus.train[41], corpus.train[42], corpus.train[43]
    val_row = corpus.validation[0]
    rows = [relabel, excluded, undone, kept, val_row]
    store.label_errors.save_search("s1", [
        Candidate(Source.BASE, text_hash(e.text), f"row {i}", e.text, LABELS[e.label], _other(e.label), 0.9)
        for i, e in enumerate(rows)])
    ids = {r["text"]: r["id"] for r in store.label_errors.open_candidates()[0]}
    store.label_errors.decide([ids[relabel.text], ids[val_row.text]], "relabel", by="admin")
    decided = store.label_errors.decide([ids[excluded.text], ids[undone.text]], "exclude", by="admin").decided
    store.label_errors.decide([ids[kept.text]], "keep", by="admin")
    store.label_errors.undo([decided[ids[undone.text]]], by="admin")
    store.close()

    seen: list[TrainingRows] = []
    params: list[int] = []

    def trainer(setup, champion, corpus, rows, factory, tracker, label_fixes=0, **_):  # type: ignore[no-untyped-def]
        seen.append(rows)
        params.append(label_fixes)
        raise _Stop

    monkeypatch.setattr(run_module, "train_challenger", trainer)
    with pytest.raises(_Stop):
        run_module.retrain(RetrainSetup.from_settings(settings), track=False)

    [rows_seen] = seen
    expected = [Example(e.text, LABELS.index(_other(e.label))) if e.text == relabel.text else e
                for e in corpus.train if e.text != excluded.text]
    assert [(e.text, e.label) for e in rows_seen.base] == [(e.text, e.label) for e in expected]
    assert undone.text in {e.text for e in rows_seen.base} and kept in rows_seen.base
    assert [(e.text, e.label) for e in rows_seen.validation] == [
        (e.text, LABELS.index(_other(e.label)) if e.text == val_row.text else e.label) for e in corpus.validation]
    assert params == [3]  # relabel x2 and one exclusion live; the keep changes no row
    record = read_last_run(settings.paths)
    assert record is not None and record.label_fixes == {"live": 3, "base_train": 2, "base_validation": 1}
