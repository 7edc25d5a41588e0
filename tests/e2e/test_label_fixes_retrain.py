"""A real retrain (tiny model) after label fixes that touch validation: the run record carries both models' scores on
validation as labelled and as corrected, and MLflow the number of fixes the challenger saw."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.data import load_seed
from core.labels import LABELS
from core.registry.stages import read_last_run
from core.text import text_hash
from feedback.store import FeedbackStore
from feedback.trust.label_errors import Candidate, Source
from tests.e2e.test_retrain_run import add_feedback, run_retrain, settings_for

pytestmark = pytest.mark.e2e


def test_fixes_on_validation_give_both_scores_and_mlflow_counts_them(tiny_home_copy: Path) -> None:
    import mlflow

    settings = settings_for(tiny_home_copy)
    add_feedback(settings, flip=False)
    validation = load_seed().validation
    wrong = [e for e in validation[:4]]
    store = FeedbackStore(settings.paths.feedback_db)
    store.label_errors.save_search("s1", [
        Candidate(Source.BASE, text_hash(e.text), "validation", e.text, LABELS[e.label], LABELS[(e.label + 1) % 4],
                  0.9) for e in wrong])
    ids = [r["id"] for r in store.label_errors.open_candidates()[0]]
    store.label_errors.decide(ids[:3], "relabel", by="admin")
    store.label_errors.decide(ids[3:], "exclude", by="admin")
    store.close()

    result = run_retrain(settings, track=True)
    assert result.challenger is not None
    record = read_last_run(settings.paths)
    assert record is not None and record.label_fixes == {"live": 4, "base_train": 0, "base_validation": 4}
    scores = record.validation_scores
    assert set(scores) == {"as_labelled", "as_corrected"}
    assert scores["as_labelled"]["champion"]["n"] == len(validation)
    assert scores["as_corrected"]["challenger"]["n"] == len(validation) - 1  # one excluded
    # relabelling three rows to a wrong topic changes the scores: the two views differ
    assert scores["as_labelled"]["challenger"]["accuracy"] != scores["as_corrected"]["challenger"]["accuracy"]
    mlflow.set_tracking_uri(settings.tracking_uri)
    run = mlflow.MlflowClient().get_run(result.mlflow_run_id)
    assert run.data.params["label_fixes"] == "4"
    assert "validation_as_corrected_challenger_accuracy" in run.data.metrics
