"""One retrain, in order: snapshot trusted feedback, fine-tune a challenger, publish it, gate it, promote it.

Safety: one run at a time (a kernel file lock that dies with its holder); the feedback database is
backed up and the snapshot is read from the backup, so answers arriving meanwhile cannot tear it;
the challenger is written to a staging directory and only a finished, checked version is committed;
the champion changes by one atomic record replacement. A crash at any point leaves the champion
serving; the next run removes leftovers.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.data import Corpus, load_corpus_or_seed, source_labels, under_taxonomy
from core.evaluation.decision import FeedbackParts, GateResult, Rule, RuleResult, describe
from core.registry.mlflow_champion import is_tracking_server, mirror_versions
from core.registry.stages import Outcome, RowCounts, RunRecord, Stage, read_last_run
from core.registry.versions import ChampionChanged, ModelRegistry, ModelVersion
from core.settings.policies import GateConfig
from core.taxonomy import Taxonomy, starting
from feedback.store import FeedbackStore
from feedback.training.fixes import LabelFixes
from feedback.training.snapshot import FeedbackSplit, backup_database, trusted_split
from retrain.challenger import Traffic, train_challenger
from retrain.classifier.model import ModelFactory, starting_point
from retrain.export.publish import log_exported, publish
from retrain.export.scoring import model_labels
from retrain.gate.judge import Evidence, judge, validation_scores
from retrain.inputs import RetrainSetup
from retrain.state import record_run, retrain_lock, write_progress
from retrain.topics.prior import MATCH_TEXTS
from retrain.topics.taught import BALANCE_CAP, balanced
from retrain.tracking.tracker import RETRAIN_EXPERIMENT, Tracker, sync_aliases
from retrain.training.lexical import retrain_lexical
from retrain.training.targets import TrainingRows, assemble

log = logging.getLogger(__name__)


def retrain(
    setup: RetrainSetup,
    *,
    model_factory: ModelFactory | None = None,
    track: bool = True,
    on_stage: Callable[[Stage], None] | None = None,
) -> RunRecord:
    """Run one retrain end to end and return its record (also kept in the state file, even when the run
    fails). Raises RetrainBusy if one is running, and whatever a failed run raised."""

    def stage(name: Stage, decision: str = "") -> None:
        write_progress(setup.paths, name, decision)
        if on_stage:
            on_stage(name)

    setup.paths.models_dir.mkdir(parents=True, exist_ok=True)
    factory = model_factory or starting_point(setup.base_model, setup.dropout, setup.policy.warm_start,
                                            setup.train.seed)
    with retrain_lock(setup.paths, setup.database_url):
        if track and is_tracking_server(setup.tracking.uri):
            # start from @champion; a server with none gets the shipped starter only if it predicts the data's topics
            mirror_versions(setup.tracking.uri, ModelRegistry(setup.paths.models_dir),
                            labels=source_labels(setup.data.source, setup.data.use_extra))
        started = time.perf_counter()
        previous = read_last_run(setup.paths)
        result = RunRecord(decision=Outcome.FAILED.value)
        with Tracker(setup.tracking, RETRAIN_EXPERIMENT, f"retrain-{time.strftime('%Y%m%d-%H%M%S')}", enabled=track) as tracker:
            result.mlflow_run_id = tracker.run_id
            try:
                _retrain(setup, tracker, result, factory, stage)
            except Exception as exc:
                result.decision = Outcome.FAILED.value
                result.error = f"{type(exc).__name__}: {exc}"
                # `watch` should try again once feedback allows, not wait for new answers beyond these.
                result.last_answer_id = previous.last_answer_id if previous else 0
                raise
            finally:
                result.seconds = round(time.perf_counter() - started, 1)
                result.refresh_reasons()
                record_run(setup.paths, result)
                stage(Stage.DONE, result.decision)
                track_decision(tracker, result, setup.gate)
        return result


def read_through(corpus: Corpus, fixes: LabelFixes) -> Corpus:
    """The base rows as a retrain reads them: relabelled where a maintainer fixed a label, excluded rows left out
    of training and of the validation the gate judges on."""
    if not fixes:
        return corpus
    return Corpus(fixes.examples(corpus.train, labels=corpus.labels),
                  fixes.examples(corpus.validation, labels=corpus.labels), corpus.test,
                  f"{corpus.description}, read through {len(fixes)} label fix(es)", corpus.labels)


def snapshot_taxonomy(snapshot: Path | None, champion_labels: tuple[str, ...]) -> Taxonomy:
    """The taxonomy as the feedback snapshot holds it (its first version: the champion's topics)."""
    if snapshot is None:
        return starting(champion_labels)
    store = FeedbackStore(snapshot)
    try:
        return store.topics.current(champion_labels)
    finally:
        store.close()


def new_topic_words(gate: GateResult) -> list[str]:
    """The plain words on each topic new to the model (its held-out answers, recall and precision)."""
    return [describe(r) for r in gate.rules if r.rule == Rule.NEW_TOPIC]


def track_decision(tracker: Tracker, result: RunRecord, gate: GateConfig) -> None:
    """The decision in MLflow: the gate's settings as params, every rule's verdict and the headline numbers as
    tags (the full record is the run's gate.json artifact)."""
    tracker.log_params({f"gate_{name}": value for name, value in gate.model_dump().items()} | {
        "rows_traffic": result.rows.get("traffic", 0)})
    tags: dict[str, object] = {"decision": result.decision, "reasons": " | ".join(result.reasons)}
    if result.gate is not None:
        tags |= {"gate_promote": result.gate.promote, "gate_p_value": result.gate.p_value,
                 "gate_delta": result.gate.delta}
    for rule in result.rules:
        key = f"gate_rule_{rule.rule.value}" + (f"_{re.sub(r'[^A-Za-z0-9_]', '_', rule.subject)}" if rule.subject else "")
        tags[key] = "passed" if rule.passed else "failed"
    tracker.set_tags(tags)
    tracker.log_metrics({"run_seconds": result.seconds})  # the measured duration (the state file's history keeps it too)


def _retrain(
    setup: RetrainSetup, tracker: Tracker, result: RunRecord, factory: ModelFactory, stage: Callable[..., None]
) -> None:
    """The run's stages, each recorded in `result` as it goes: the champion, the feedback snapshot, the challenger
    trained and published, the gate, and the promotion or refusal."""
    registry = ModelRegistry(setup.paths.models_dir)
    champion = _find_champion(registry, result)
    if champion is None:
        return

    stage(Stage.SNAPSHOT)
    read = _read_snapshot(setup, champion, result)
    if not read.rows.feedback:
        result.decision = Outcome.REFUSED.value
        return

    stage(Stage.TRAINING)
    model, tokenizer, meta = train_challenger(setup, champion, read.corpus, read.rows, factory, tracker,
                                              len(read.split.fixes),
                                              traffic=Traffic(read.split.traffic, read.split.unlabelled_traffic))
    lexical = retrain_lexical(read.rows, len(read.taxonomy.keys), setup.train, setup.policy.feedback_weight)

    stage(Stage.EXPORT)
    exported = publish(model, tokenizer, registry, read.corpus.validation, setup.export, meta, lexical)
    challenger = exported.version
    result.challenger = challenger.version
    log_exported(tracker, exported, read.corpus.validation, "challenger", name="challenger")

    stage(Stage.GATE)
    gate = _judge(setup, tracker, result, champion, challenger, read)
    promoted = gate.promote and _promote(registry, gate, result, champion, challenger, stage)
    _record_decision(setup, tracker, registry, result, promoted, champion, challenger)


@dataclass(frozen=True)
class _Snapshot:
    """What a run reads once, from its feedback snapshot and the base data: the taxonomy it trains and is judged on,
    the trusted answers split, the base rows as labelled and as read through the label fixes, and its rows."""

    taxonomy: Taxonomy
    split: FeedbackSplit
    as_labelled: Corpus
    corpus: Corpus
    rows: TrainingRows


def _find_champion(registry: ModelRegistry, result: RunRecord) -> ModelVersion | None:
    """The champion a run starts from (none: the run stops, its check failed), after removing a crashed run's
    leftovers."""
    removed = registry.clean_staging()
    if removed:
        log.info("removed %d leftover staging director%s", len(removed), "y" if len(removed) == 1 else "ies")
    champion = registry.champion()
    result.checks.append(RuleResult(Rule.CHAMPION, champion is not None, subject=champion.version if champion else ""))
    if champion is not None:
        result.champion_before = result.champion_after = champion.version
    return champion


def _read_snapshot(setup: RetrainSetup, champion: ModelVersion, result: RunRecord) -> _Snapshot:
    """Back up the feedback database and read the run's rows from the copy; the counts and the feedback check go to
    `result`."""
    snapshot = backup_database(setup.feedback_location, setup.paths.backups_dir)
    # Read once, from the same snapshot as the answers: a change made while this runs does not touch this run,
    # which trains on, and is judged on, the taxonomy it started with.
    taxonomy = snapshot_taxonomy(snapshot, model_labels(champion))
    split = trusted_split(snapshot, setup.trust, setup.policy.holdout_fraction, taxonomy,
                          unlabelled_traffic=MATCH_TEXTS if setup.policy.match_taught_prior or setup.policy.read_traffic else 0)
    result.last_answer_id = split.last_answer_id
    if split.left_out:
        log.info("%d trusted texts left out: their topic is gone from taxonomy version %d", split.left_out,
                 taxonomy.version)
    as_labelled, corpus = _base_rows(setup, taxonomy, split.fixes, result)
    rows = assemble(corpus, split.train, split.holdout, setup.policy.base_rows, setup.train.seed,
                    setup.policy.feedback_repeats, taxonomy, split.golden)
    if setup.policy.balance_taught:
        rows = balanced(rows, len(taxonomy.keys), setup.policy.feedback_weight, BALANCE_CAP)
    if split.golden:
        log.info("golden set: %d articles judge the challenger (%d trusted answers on them set aside)",
                 len(split.golden), split.on_golden)
    counts = rows.counts
    result.rows = RowCounts(base_train=counts["base_train"], feedback_train=counts["feedback_train"],
                            feedback_holdout=counts["feedback_holdout"], traffic=len(split.traffic),
                            base_validation=counts["base_validation"], golden=len(split.golden))
    parts = FeedbackParts(train=len(rows.feedback), holdout=len(split.holdout), traffic=len(split.traffic),
                          left_out=rows.on_validation)
    log.info("feedback: %s", parts.words())
    result.checks.append(RuleResult(Rule.FEEDBACK, bool(rows.feedback), n=parts.train, left_out=parts.left_out,
                                    holdout=parts.holdout, traffic=parts.traffic))
    return _Snapshot(taxonomy, split, as_labelled, corpus, rows)


def _base_rows(setup: RetrainSetup, taxonomy: Taxonomy, fixes: LabelFixes, result: RunRecord) -> tuple[Corpus, Corpus]:
    """The base rows in the taxonomy's topics, as labelled and through the label fixes (which name topics as the
    taxonomy does); how many rows the fixes touch goes to `result`."""
    as_labelled = under_taxonomy(load_corpus_or_seed(setup.data.source, setup.data.val_fraction, setup.data.use_extra),
                                 taxonomy)
    corpus = read_through(as_labelled, fixes)
    result.label_fixes = {"live": len(fixes),
                          "base_train": fixes.touched(as_labelled.train, labels=as_labelled.labels),
                          "base_validation": fixes.touched(as_labelled.validation, labels=as_labelled.labels)}
    if fixes:
        log.info("label fixes: %d live, %d touch base training rows, %d base validation rows", len(fixes),
                 result.label_fixes["base_train"], result.label_fixes["base_validation"])
    return as_labelled, corpus


def _judge(setup: RetrainSetup, tracker: Tracker, result: RunRecord, champion: ModelVersion,
           challenger: ModelVersion, read: _Snapshot) -> GateResult:
    """The gate's decision (also into `result`), and both models' validation scores as labelled and as corrected
    while the label fixes touch what the gate judged on."""
    evidence = Evidence(read.corpus.validation, read.rows.holdout, read.split.traffic, read.split.golden)
    gate = result.gate = judge(champion, challenger, evidence, setup.gate, tracker, read.taxonomy)
    for words in new_topic_words(gate):
        log.info("%s", words)
    if result.label_fixes["base_validation"]:
        result.validation_scores = validation_scores(champion, challenger, read.as_labelled.validation,
                                                     read.corpus.validation)
        tracker.log_metrics({f"validation_{part}_{who}_accuracy": score["accuracy"]
                             for part, models in result.validation_scores.items() for who, score in models.items()})
    return gate


def _promote(registry: ModelRegistry, gate: GateResult, result: RunRecord, champion: ModelVersion,
             challenger: ModelVersion, stage: Callable[..., None]) -> bool:
    """Promote the challenger the gate passed, unless the champion changed meanwhile; whether it was."""
    stage(Stage.PROMOTE)
    reason = "; ".join([f"retrain: macro-F1 {gate.delta:+.4f}, p={gate.p_value:.2g}", *new_topic_words(gate)])
    promoted = False
    try:
        # Compare-and-swap: a rollback (or another promotion) while this ran must not be silently undone.
        registry.promote(challenger.version, reason=reason, expected_champion=champion.version)
        promoted = True
    except ChampionChanged:
        log.warning("not promoted: the champion changed while this run ran")
    now = registry.champion()
    result.checks.append(RuleResult(Rule.CHAMPION_UNCHANGED, promoted, subject=champion.version,
                                    note=now.version if now else ""))
    return promoted


def _record_decision(setup: RetrainSetup, tracker: Tracker, registry: ModelRegistry, result: RunRecord,
                     promoted: bool, champion: ModelVersion, challenger: ModelVersion) -> None:
    """The decision in `result` and the registry (a refused challenger's note carries the gate's evidence), and the
    MLflow aliases updated."""
    result.refresh_reasons()
    if promoted:
        result.decision = Outcome.PROMOTED.value
        result.champion_after = challenger.version
    else:
        result.decision = Outcome.REFUSED.value
        registry.note(challenger.version, "refused", result.reasons,
                      evidence=result.gate.summary() | {"judged_against": champion.version} if result.gate else None)
    if tracker.enabled:
        try:
            sync_aliases(setup.tracking.uri, registry, challenger.version)
        except Exception:
            log.exception("could not update MLflow aliases")
