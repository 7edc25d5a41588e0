"""One retrain: snapshot trusted feedback, fine-tune a challenger, gate it against the champion, promote.

Safety: one run at a time (a kernel file lock that dies with its holder); the feedback database is
backed up and the snapshot is read from the backup, so answers arriving meanwhile cannot tear it;
the challenger is written to a staging directory and only a finished, checked version is committed;
the champion changes by one atomic record replacement. A crash at any point leaves the champion
serving; the next run removes leftovers.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from transformers import PreTrainedTokenizerBase

from core.config import Settings, ensure_home
from core.data import Example, load_corpus_or_seed, split_by_hash
from core.labels import NUM_LABELS, label_index
from core.registry import ModelRegistry, ModelVersion, write_json_atomic
from core.serving import OnnxClassifier
from core.text import text_hash
from feedback.store import FeedbackStore
from feedback.trust import trusted_examples
from retrain.gate import BASE_SET, HOLDOUT_SET, EvalSet, GateConfig, GateDecision, decide
from retrain.model import CHECKPOINT_DIR, NewsClassifier, load_base, load_checkpoint, resolve_base_model
from retrain.pipeline import cap_rows, export_version, log_exported, run_params, served_validation_probs
from retrain.tracking import RETRAIN_EXPERIMENT, Tracker, sync_aliases
from retrain.train import TrainConfig, soft_targets, train

log = logging.getLogger(__name__)

HOLDOUT_FRACTION = 0.25  # share of trusted feedback kept out of training to judge the challenger
_BACKUPS_KEPT = 5
ModelFactory = Callable[[ModelVersion | None], tuple[NewsClassifier, PreTrainedTokenizerBase]]


class RetrainBusy(RuntimeError):
    """Another retrain holds the lock."""


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


@contextlib.contextmanager
def retrain_lock(home: Path) -> Iterator[None]:
    """Hold the one-retrain-at-a-time lock. The kernel drops it if this process dies, so it never sticks."""
    home.mkdir(parents=True, exist_ok=True)
    with (home / "retrain.lock").open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RetrainBusy("another retrain is running") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def state_path(settings: Settings) -> Path:
    return settings.home / "retrain_state.json"


def progress_path(settings: Settings) -> Path:
    return settings.home / "retrain_progress.json"


def write_progress(settings: Settings, stage: str) -> None:
    """Where the current run is, for the admin view and for tests that interrupt a run."""
    import os

    write_json_atomic(progress_path(settings), {"stage": stage, "pid": os.getpid(), "at": time.time()})


def backup_feedback(settings: Settings) -> Path | None:
    """Copy the feedback database with SQLite's backup API; keep the newest few copies."""
    if not settings.feedback_db.is_file():
        return None
    backups = settings.home / "backups"
    backups.mkdir(parents=True, exist_ok=True)
    dest = backups / f"feedback-{time.strftime('%Y%m%d-%H%M%S')}-{time.time_ns() % 1_000_000:06d}.db"
    FeedbackStore(settings.feedback_db).backup(dest)
    for old in sorted(backups.glob("feedback-*.db"))[:-_BACKUPS_KEPT]:
        old.unlink(missing_ok=True)
    return dest


def feedback_snapshot(settings: Settings, snapshot_db: Path | None) -> tuple[list[Example], list[Example], int]:
    """Trusted feedback from a consistent copy, split by text hash into train and holdout parts."""
    if snapshot_db is None:
        return [], [], 0
    store = FeedbackStore(snapshot_db)
    try:
        trusted = trusted_examples(
            store,
            labels_required=settings.labels_required,
            min_checks=settings.min_checks,
            min_check_accuracy=settings.min_check_accuracy,
        )
        last_id = max((row["id"] for row in store.answers(limit=1)), default=0)
    finally:
        store.close()
    examples = [Example(t.text, label_index(t.label)) for t in trusted]
    train_part, holdout = split_by_hash(examples, HOLDOUT_FRACTION, salt="feedback-holdout")
    return train_part, holdout, last_id


def default_model_factory(settings: Settings) -> ModelFactory:
    def factory(champion: ModelVersion | None) -> tuple[NewsClassifier, PreTrainedTokenizerBase]:
        checkpoint = champion.path / CHECKPOINT_DIR if champion else None
        if settings.warm_start and checkpoint is not None and checkpoint.is_dir():
            log.info("warm start from champion %s", champion.version)
            return load_checkpoint(checkpoint)
        return load_base(settings.base_model, settings.dropout)

    return factory


def predictions(model_dir: Path, examples: list[Example]) -> tuple[np.ndarray, np.ndarray]:
    """Predicted labels and probabilities through the serving path (the file the version serves)."""
    if not examples:
        return np.zeros(0, dtype=int), np.zeros((0, 4), dtype=np.float32)
    probs = OnnxClassifier(model_dir).predict_proba([e.text for e in examples])
    return probs.argmax(axis=1), probs


def retrain(
    settings: Settings,
    *,
    model_factory: ModelFactory | None = None,
    max_minutes: float | None = None,
    base_rows: int | None = None,
    track: bool = True,
    on_stage: Callable[[str], None] | None = None,
) -> RunResult:
    """Run one retrain end to end and return its decision. Raises RetrainBusy if one is running."""
    ensure_home(settings)

    def stage(name: str) -> None:
        write_progress(settings, name)
        if on_stage:
            on_stage(name)

    with retrain_lock(settings.home):
        started = time.perf_counter()
        result = RunResult(decision="failed")
        with Tracker(settings, RETRAIN_EXPERIMENT, f"retrain-{time.strftime('%Y%m%d-%H%M%S')}", enabled=track) as tracker:
            result.mlflow_run_id = tracker.run_id
            try:
                _retrain(settings, tracker, result, model_factory, max_minutes, base_rows, stage)
            finally:
                result.seconds = round(time.perf_counter() - started, 1)
                tracker.set_tags({"decision": result.decision, "reasons": " | ".join(result.reasons)})
        _record_run(settings, result)
        stage(f"done: {result.decision}")
        return result


def _retrain(
    settings: Settings,
    tracker: Tracker,
    result: RunResult,
    model_factory: ModelFactory | None,
    max_minutes: float | None,
    base_rows: int | None,
    stage: Callable[[str], None],
) -> None:
    registry = ModelRegistry(settings.models_dir)
    removed = registry.clean_staging()
    if removed:
        log.info("removed %d leftover staging director%s", len(removed), "y" if len(removed) == 1 else "ies")
    champion = registry.champion()
    if champion is None:
        result.reasons.append("no champion to compare against: run `python -m retrain bootstrap` first")
        return
    result.champion_before = result.champion_after = champion.version

    stage("snapshot")
    snapshot = backup_feedback(settings)
    fb_train, fb_holdout, result.last_answer_id = feedback_snapshot(settings, snapshot)
    corpus = load_corpus_or_seed(settings.data, settings.val_fraction, settings.use_extra_data)
    protected = {text_hash(e.text) for e in corpus.validation}
    fb_train = [e for e in fb_train if text_hash(e.text) not in protected]  # never train on validation texts
    base = cap_rows(corpus.train, settings.retrain_base_rows if base_rows is None else base_rows, settings.seed)
    result.rows = {
        "base_train": len(base),
        "feedback_train": len(fb_train),
        "feedback_holdout": len(fb_holdout),
        "base_validation": len(corpus.validation),
    }
    if not fb_train:
        result.decision = "refused"
        result.reasons.append("no trusted feedback to train on")
        return

    stage("training")
    factory = model_factory or default_model_factory(settings)
    model, tokenizer = factory(champion)
    minutes = settings.retrain_max_minutes if max_minutes is None else max_minutes
    config = TrainConfig.from_settings(
        settings, epochs=settings.retrain_epochs, max_minutes=minutes,
        lr_encoder=settings.retrain_lr_encoder, lr_head=settings.retrain_lr_head,
    )
    texts = [e.text for e in base] + [e.text for e in fb_train]
    labels = [e.label for e in base] + [e.label for e in fb_train]
    weights = [1.0] * len(base) + [settings.feedback_weight] * len(fb_train)
    targets = replay_targets(settings, champion, base, fb_train)
    base_name = champion.version if settings.warm_start else resolve_base_model(settings.base_model)
    tracker.log_params(
        run_params(settings, config, base_name, **result.rows)
        | {"warm_start": settings.warm_start, "feedback_weight": settings.feedback_weight,
           "distill_weight": settings.distill_weight, "champion": champion.version}
    )
    train(
        model, tokenizer, texts, labels, config, weights=weights, targets=targets,
        val_texts=[e.text for e in corpus.validation], val_labels=[e.label for e in corpus.validation],
        on_metrics=tracker.log_step,
    )

    stage("export")
    meta = {
        "kind": "retrain",
        "base_model": base_name,
        "data": f"{corpus.description} + {len(fb_train)} feedback rows",
        "rows": result.rows,
        "parent": champion.version,
        "train_config": config.__dict__,
    }
    exported = export_version(model, tokenizer, registry, corpus.validation, settings, meta)
    challenger = exported.version
    result.challenger = challenger.version
    log_exported(tracker, exported, corpus.validation, "challenger", name="challenger")

    stage("gate")
    decision = gate(settings, champion, challenger, corpus.validation, fb_holdout, tracker)
    result.gate = decision.as_dict()
    result.reasons = list(decision.reasons)
    tracker.set_tags({f"gate_{k}": v for k, v in result.gate.items() if k != "per_set"})
    if not decision.promote:
        result.decision = "refused"
        registry.note(challenger.version, "refused", result.reasons)
        if tracker.enabled:
            _sync(settings, registry, challenger.version)
        return

    stage("promote")
    registry.promote(challenger.version, reason=f"retrain: macro-F1 {decision.delta:+.4f}, p={decision.p_value:.2g}")
    result.decision = "promoted"
    result.champion_after = challenger.version
    if tracker.enabled:
        _sync(settings, registry, challenger.version)


def replay_targets(
    settings: Settings, champion: ModelVersion, base: list[Example], feedback: list[Example]
) -> np.ndarray:
    """Training targets: base rows blend their label with the champion's served probabilities; feedback
    rows keep their (smoothed) label, since changing the champion's answer there is the point."""
    teacher = None
    if settings.distill_weight > 0 and base:
        teacher = OnnxClassifier(champion.path).proba_in_label_order([e.text for e in base])
    base_targets = soft_targets(
        [e.label for e in base], NUM_LABELS, settings.label_smoothing, teacher, settings.distill_weight
    )
    feedback_targets = soft_targets([e.label for e in feedback], NUM_LABELS, settings.label_smoothing)
    return np.concatenate([base_targets, feedback_targets])


def gate(
    settings: Settings,
    champion: ModelVersion,
    challenger: ModelVersion,
    validation: list[Example],
    holdout: list[Example],
    tracker: Tracker,
) -> GateDecision:
    """Score both models through the same serving path on the same sets, then apply the pure gate."""
    sets = []
    for name, examples in ((BASE_SET, validation), (HOLDOUT_SET, holdout)):
        if not examples:
            continue
        if name == BASE_SET:  # both versions scored this set when exported: reuse, don't recompute
            champ_probs = served_validation_probs(champion, examples)
            champ_pred, chall_pred = champ_probs.argmax(axis=1), served_validation_probs(challenger, examples).argmax(axis=1)
        else:
            champ_pred, champ_probs = predictions(champion.path, examples)
            chall_pred, _ = predictions(challenger.path, examples)
        y = np.array([e.label for e in examples])
        sets.append(EvalSet(name, y, champ_pred, chall_pred))
        if name == BASE_SET:
            from core.metrics import evaluate_probabilities

            tracker.log_evaluation("champion_validation", y.tolist(), champ_probs, evaluate_probabilities(y, champ_probs))
    config = GateConfig(
        margin=settings.gate_margin, alpha=settings.gate_alpha, recall_tolerance=settings.gate_recall_tolerance,
        base_tolerance=settings.gate_base_tolerance,
    )
    decision = decide(sets, config)
    tracker.log_dict(decision.as_dict(), "gate.json")
    return decision


def _sync(settings: Settings, registry: ModelRegistry, challenger: str | None) -> None:
    try:
        sync_aliases(settings, registry, challenger)
    except Exception:
        log.exception("could not update MLflow aliases")


def _record_run(settings: Settings, result: RunResult) -> None:
    """Remember the last run (its decision, and the newest feedback it saw, for `watch`)."""
    path = state_path(settings)
    write_json_atomic(path, {"last_run": result.as_dict(), "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})


def read_state(settings: Settings) -> dict[str, Any]:
    import json

    try:
        return json.loads(state_path(settings).read_text())
    except FileNotFoundError:
        return {}
