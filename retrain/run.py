"""One retrain, in order: snapshot trusted feedback, fine-tune a challenger, publish it, gate it, promote it.

Safety: one run at a time (a kernel file lock that dies with its holder); the feedback database is
backed up and the snapshot is read from the backup, so answers arriving meanwhile cannot tear it;
the challenger is written to a staging directory and only a finished, checked version is committed;
the champion changes by one atomic record replacement. A crash at any point leaves the champion
serving; the next run removes leftovers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.data import load_corpus_or_seed
from core.mlflow_champion import is_tracking_server, mirror_versions
from core.registry import ChampionChanged, ModelRegistry
from feedback.snapshot import backup_database, trusted_split
from retrain.challenger import train_challenger
from retrain.evaluate import judge
from retrain.model import ModelFactory, starting_point
from retrain.publish import log_exported, publish
from retrain.setup import RetrainSetup
from retrain.state import record_run, retrain_lock, write_progress
from retrain.targets import assemble
from retrain.tracking import RETRAIN_EXPERIMENT, Tracker, sync_aliases

log = logging.getLogger(__name__)


@dataclass
class RunResult:
    decision: str  # "promoted" | "refused" | "failed"
    reasons: list[str] = field(default_factory=list)
    champion_before: str | None = None
    challenger: str | None = None
    champion_after: str | None = None
    rows: dict[str, int] = field(default_factory=dict)
    gate: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    mlflow_run_id: str | None = None
    last_answer_id: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def retrain(
    setup: RetrainSetup,
    *,
    model_factory: ModelFactory | None = None,
    track: bool = True,
    on_stage: Callable[[str], None] | None = None,
) -> RunResult:
    """Run one retrain end to end and return its decision. Raises RetrainBusy if one is running."""

    def stage(name: str) -> None:
        write_progress(setup.paths, name)
        if on_stage:
            on_stage(name)

    setup.paths.models_dir.mkdir(parents=True, exist_ok=True)
    factory = model_factory or starting_point(setup.base_model, setup.dropout, setup.policy.warm_start)
    with retrain_lock(setup.paths, setup.database_url):
        if track and is_tracking_server(setup.tracking.uri):
            mirror_versions(setup.tracking.uri, ModelRegistry(setup.paths.models_dir))  # start from @champion
        started = time.perf_counter()
        result = RunResult(decision="failed")
        with Tracker(setup.tracking, RETRAIN_EXPERIMENT, f"retrain-{time.strftime('%Y%m%d-%H%M%S')}", enabled=track) as tracker:
            result.mlflow_run_id = tracker.run_id
            try:
                _retrain(setup, tracker, result, factory, stage)
            finally:
                result.seconds = round(time.perf_counter() - started, 1)
                tracker.set_tags({"decision": result.decision, "reasons": " | ".join(result.reasons)})
        record_run(setup.paths, result.as_dict())
        stage(f"done: {result.decision}")
        return result


def _retrain(
    setup: RetrainSetup, tracker: Tracker, result: RunResult, factory: ModelFactory, stage: Callable[[str], None]
) -> None:
    registry = ModelRegistry(setup.paths.models_dir)
    removed = registry.clean_staging()
    if removed:
        log.info("removed %d leftover staging director%s", len(removed), "y" if len(removed) == 1 else "ies")
    champion = registry.champion()
    if champion is None:
        result.reasons.append("no champion to compare against: run `python -m retrain bootstrap` first")
        return
    result.champion_before = result.champion_after = champion.version

    stage("snapshot")
    snapshot = backup_database(setup.feedback_location, setup.paths.backups_dir)
    split = trusted_split(snapshot, setup.trust, setup.policy.holdout_fraction)
    result.last_answer_id = split.last_answer_id
    corpus = load_corpus_or_seed(setup.data.source, setup.data.val_fraction, setup.data.use_extra)
    rows = assemble(corpus, split.train, split.holdout, setup.policy.base_rows, setup.train.seed)
    result.rows = rows.counts
    if not rows.feedback:
        result.decision = "refused"
        result.reasons.append("no trusted feedback to train on")
        return

    stage("training")
    model, tokenizer, meta = train_challenger(setup, champion, corpus, rows, factory, tracker)

    stage("export")
    exported = publish(model, tokenizer, registry, corpus.validation, setup.export, meta)
    challenger = exported.version
    result.challenger = challenger.version
    log_exported(tracker, exported, corpus.validation, "challenger", name="challenger")

    stage("gate")
    decision = judge(champion, challenger, corpus.validation, rows.holdout, setup.gate, tracker)
    result.gate = decision.as_dict()
    result.reasons = list(decision.reasons)
    tracker.set_tags({f"gate_{k}": v for k, v in result.gate.items() if k != "per_set"})
    promoted = False
    if decision.promote:
        stage("promote")
        reason = f"retrain: macro-F1 {decision.delta:+.4f}, p={decision.p_value:.2g}"
        try:
            # Compare-and-swap: a rollback (or another promotion) while this ran must not be silently undone.
            registry.promote(challenger.version, reason=reason, expected_champion=champion.version)
            promoted = True
        except ChampionChanged as exc:
            result.reasons = [str(exc)]
    if promoted:
        result.decision = "promoted"
        result.champion_after = challenger.version
    else:
        result.decision = "refused"
        registry.note(challenger.version, "refused", result.reasons)
    if tracker.enabled:
        try:
            sync_aliases(setup.tracking.uri, registry, challenger.version)
        except Exception:
            log.exception("could not update MLflow aliases")
