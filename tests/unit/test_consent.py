"""A refused challenger promoted on a maintainer's word (`newsloop promote`): the reason, who and the gate's numbers in
the registry's history, `status --json` and MLflow; refused without a reason or for a version the gate never refused;
a rollback undoes it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from core.command_line import ExitCode
from core.registry.versions import ModelRegistry
from core.taxonomy import starting
from retrain import actions
from retrain.gate.consent import ConsentError, promote_by_hand
from testkit.models import tiny_settings

EVIDENCE = {"mode": "own", "champion_score": 0.916, "challenger_score": 0.926, "p_value": 0.06,
            "refused_because": ["On your own 345 articles, a loss of 2.00 points or more cannot be ruled out."],
            "power": "With 345 held-out articles of your own, a gain under about 1.3 points is invisible to the gate.",
            "judged_against": "v0001"}


def copy_of_champion(registry: ModelRegistry) -> str:
    staging = registry.new_staging()
    shutil.copytree(registry.get("v0001").path, staging, dirs_exist_ok=True)
    return registry.commit(staging, dict(registry.get("v0001").meta)).version


def refused_challenger(home: Path) -> ModelRegistry:
    """The tiny home's champion v0001, and v0002 (a copy) that the gate refused with EVIDENCE."""
    registry = ModelRegistry(home / "models")
    registry.note(copy_of_champion(registry), "refused", EVIDENCE["refused_because"], evidence=EVIDENCE)
    return registry


def test_a_refused_challenger_is_promoted_with_the_reason_and_the_gates_numbers(tiny_home_copy: Path) -> None:
    registry = refused_challenger(tiny_home_copy)
    topics = starting(registry.get("v0002").meta["labels"])
    with pytest.raises(ConsentError, match="say why"):
        promote_by_hand(registry, "v0002", "   ", by="maya", topics=topics)
    never_judged = copy_of_champion(registry)
    with pytest.raises(ConsentError, match=f"never refused {never_judged}"):
        promote_by_hand(registry, never_judged, "because", by="maya", topics=topics)
    with pytest.raises(ConsentError, match="cannot serve them"):
        promote_by_hand(registry, "v0002", "because", by="maya", topics=topics.add("Health"))
    done = promote_by_hand(registry, "v0002", "the golden set misses our new desk", by="maya", topics=topics)
    assert registry.champion().version == "v0002" and done.replaced == "v0001"  # type: ignore[union-attr]
    event = registry.read_record()["events"][-1]
    assert (event["action"], event["by"], event["manual"], event["evidence"]) == ("promote", "maya", True, EVIDENCE)
    assert "Promoted by hand by maya: the golden set misses our new desk" in event["reason"]
    assert "cannot be ruled out" in event["reason"]  # the gate's refusal, in the history's own line
    with pytest.raises(ConsentError, match="already serves"):
        promote_by_hand(registry, "v0002", "again", by="maya", topics=topics)
    registry.rollback(reason="undo")
    assert registry.champion().version == "v0001"  # type: ignore[union-attr]


def test_newsloop_promote_records_in_status_and_mlflow(tiny_home_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    refused_challenger(tiny_home_copy)
    settings = tiny_settings(tiny_home_copy)
    assert actions.promote(settings, version="v0002", reason="", by="maya") == ExitCode.BAD_INPUT
    assert "say why" in capsys.readouterr().err
    assert actions.promote(settings, version="v0002", reason="our desk knows", by="maya", expect="v0001") == ExitCode.OK
    printed = json.loads(capsys.readouterr().out)
    assert printed["champion"] == "v0002" and printed["manual"] is True and printed["evidence"] == EVIDENCE
    actions.status(settings, as_json=True)
    status = json.loads(capsys.readouterr().out)
    assert status["champion"] == "v0002"
    assert status["events"][-1]["by"] == "maya" and status["events"][-1]["evidence"]["challenger_score"] == 0.926
    import mlflow

    mlflow.set_tracking_uri(settings.tracking_uri)
    runs = mlflow.search_runs(search_all_experiments=True, filter_string="tags.kind = 'manual_promotion'")
    assert len(runs) == 1 and runs.iloc[0]["tags.promoted_by"] == "maya"
    assert runs.iloc[0]["tags.reason"] == "our desk knows"
