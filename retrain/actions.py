"""The model commands (`newsloop bootstrap`, `retrain`, `rollback`, ...): each does its work on loaded settings,
prints its result as JSON and returns the process's exit status (core.command_line.ExitCode). retrain.cli parses
their options."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.command_line import ExitCode
from core.data import InputForm
from core.settings.config import Settings

if TYPE_CHECKING:
    from core.registry.stages import RunRecord
    from feedback.monitoring import TrafficReport
    from feedback.training.readiness import Readiness


def _print(payload: object) -> None:
    print(json.dumps(payload, indent=2, sort_keys=True, default=str))


def parse_forms(spec: str) -> tuple[tuple[InputForm, int], ...]:
    """`full,title:8000,body:6000`: the input forms to train on, each with an optional row cap.

    Raises ValueError naming the known forms (the command line shows it as a bad option value)."""
    forms = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        name, _, cap = part.partition(":")
        try:
            forms.append((InputForm(name), int(cap or 0)))
        except ValueError:
            raise ValueError(
                f"bad form {part!r}: expected one of {', '.join(f.value for f in InputForm)}, optionally :rows"
            ) from None
    if not forms:
        raise ValueError("name at least one input form")
    return tuple(forms)


def bootstrap(settings: Settings, **choices: Any) -> int:
    """Train the first champion from the configured data (or the seed set); `choices` are those of
    BootstrapSetup.from_settings (max_rows, max_minutes, forms, init_from), which checks them."""
    from feedback.home_topics import HomeMismatch
    from retrain.bootstrap import BootstrapError
    from retrain.bootstrap import bootstrap as train_first
    from retrain.inputs import BootstrapSetup

    setup = BootstrapSetup.from_settings(settings, **choices)
    try:
        result = train_first(setup)
    except (BootstrapError, HomeMismatch) as exc:  # --init-from other topics; a home of other topics than the data's
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    report = result.report()
    print(report["compared_with_baseline"], file=sys.stderr)
    _print(report)
    return ExitCode.OK


def retrain(settings: Settings, *, max_minutes: float | None = None, base_rows: int | None = None) -> int:
    """Retrain a challenger and promote it if it passes the gate: ExitCode.OK promoted, ExitCode.REFUSED kept the
    champion, ExitCode.BUSY another retrain holds the lock."""
    from core.host.cpu_share import yield_cpu

    settings = yield_cpu(settings)  # before torch starts a thread: threads inherit the priority
    from retrain.inputs import RetrainSetup
    from retrain.run import retrain as run_retrain
    from retrain.state import RetrainBusy

    setup = RetrainSetup.from_settings(settings, max_minutes=max_minutes, base_rows=base_rows)
    try:
        result = run_retrain(setup)
    except RetrainBusy as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BUSY
    _print(result.as_dict())
    return {"promoted": ExitCode.OK, "refused": ExitCode.REFUSED}.get(result.decision, ExitCode.ERROR)


def rollback(settings: Settings, *, reason: str = "manual rollback", expect: str | None = None) -> int:
    """Restore the previous champion (only if `expect`, when given, is still the champion)."""
    from core.data import DataSourceError, source_labels
    from core.labels import LABELS
    from core.registry.mlflow_champion import is_tracking_server, mirror_versions
    from core.registry.versions import ANY, ModelRegistry, RegistryError
    from retrain.tracking.tracker import sync_aliases

    registry = ModelRegistry(settings.paths.models_dir)
    try:
        if is_tracking_server(settings.tracking_uri):  # replicas follow @champion: start from the server's record
            mirror_versions(settings.tracking_uri, registry,
                            labels=source_labels(settings.data.source, settings.data.use_extra))
        expected = ANY if expect is None else expect
        previous = registry.status()["previous"]
        if previous:  # a model of other topics than the home's list would leave the pages nothing to answer
            from feedback.home_topics import rollback_refusal

            meta = registry.get(previous[0]).meta
            refused = rollback_refusal(settings.storage.database_url or settings.paths.feedback_db, previous[0],
                                       tuple(meta.get("labels") or LABELS))
            if refused:
                print(f"error: {refused}", file=sys.stderr)
                return ExitCode.ERROR
        restored = registry.rollback(reason=reason, expected_champion=expected)
    except (RegistryError, DataSourceError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.ERROR
    try:
        sync_aliases(settings.tracking_uri, registry)
    except Exception as exc:
        print(f"warning: MLflow aliases not updated: {exc}", file=sys.stderr)
    _print({"champion": restored.version, "status": registry.status()["previous"]})
    return ExitCode.OK


def promote(settings: Settings, *, version: str, reason: str, by: str | None = None, expect: str | None = None) -> int:
    """Promote a challenger the gate refused, on a maintainer's word (`retrain.gate.consent`); the watch loop never
    calls this."""
    import contextlib
    import getpass

    from core.registry.versions import ANY, ModelRegistry, RegistryError
    from feedback.store import FeedbackStore
    from retrain.gate.consent import ConsentError, promote_by_hand
    from retrain.inputs import tracking_target
    from retrain.tracking.tracker import sync_aliases

    registry = ModelRegistry(settings.paths.models_dir)
    with contextlib.closing(FeedbackStore.from_settings(settings)) as store:
        topics = store.topics.current()
    try:
        done = promote_by_hand(registry, version, reason, by=by or getpass.getuser(), topics=topics,
                               expected_champion=ANY if expect is None else expect)
    except (ConsentError, RegistryError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    try:
        done.record_in_mlflow(tracking_target(settings))
        sync_aliases(settings.tracking_uri, registry)
    except Exception as exc:  # the registry already serves it: MLflow's record is a copy
        print(f"warning: MLflow not updated: {exc}", file=sys.stderr)
    _print(done.as_dict())
    return ExitCode.OK


def watch(settings: Settings, *, interval: float | None = None, min_new: int | None = None, once: bool = False) -> int:
    """Retrain whenever enough new trusted answers have arrived since the last run, or (with
    NEWSLOOP_MONITOR_RETRAIN_ON_ALERT) while the traffic alert is up and any new trusted answer has; forever, or one
    check."""
    import logging
    import time

    from core.host.cpu_share import yield_cpu

    settings = yield_cpu(settings)  # before torch starts a thread: threads inherit the priority
    from retrain.inputs import RetrainSetup
    from retrain.run import retrain as run_retrain
    from retrain.state import RetrainBusy

    setup = RetrainSetup.from_settings(settings)
    every = interval or 60.0
    needed = min_new or setup.policy.min_feedback
    log = logging.getLogger("retrain.watch")
    log.info("watching: a retrain runs when %d new trusted answers have arrived since the last run "
             "(checked every %.0f s)", needed, every)
    while True:
        new, reason = retrain_reason(settings, needed)
        if reason is not None:
            log.info("retraining: %s", reason)
            try:
                result = run_retrain(setup)
                log.info("retrain %s: %s", result.decision, "; ".join(result.reasons) or "ok")
            except RetrainBusy:
                log.info("a retrain is already running")
            except Exception:
                log.exception("retrain failed")
        else:
            log.info("%d new trusted answers since the last run; waiting for %d", new, needed)
        if once:
            return ExitCode.OK
        time.sleep(every)


def retrain_reason(settings: Settings, needed: int) -> tuple[int, str | None]:
    """New trusted answers since the last run, and why `watch` should retrain now (None: it should wait).

    On the traffic alert (with NEWSLOOP_MONITOR_RETRAIN_ON_ALERT) one new trusted answer is enough: with none, the
    challenger would learn nothing the last run had not, and the gate would refuse it again at every check."""
    import contextlib

    from core.registry.stages import read_last_run
    from feedback.store import FeedbackStore
    from feedback.training.readiness import count_new_trusted

    new = 0
    if settings.storage.database_url or settings.paths.feedback_db.is_file():
        with contextlib.closing(FeedbackStore.from_settings(settings)) as store:
            new = count_new_trusted(store, settings.trust_policy(), read_last_run(settings.paths))
    if new >= needed:
        return new, f"{new} new trusted answers since the last run"
    if settings.monitor.retrain_on_alert and new >= 1 and (alerts := traffic_alerts(settings)):
        return new, "the traffic alert is up (NEWSLOOP_MONITOR_RETRAIN_ON_ALERT): " + " ".join(alerts)
    return new, None


def evaluate(settings: Settings, *, csv: str, onnx_file: str | None = None) -> int:
    """Score the serving champion (or, on a fresh clone, the shipped starter) on a labelled CSV: AG News's numbered
    topics, or topic names the champion predicts."""
    from core.data import read_labelled
    from core.evaluation.metrics import evaluate_probabilities
    from core.registry.starter import install_starter
    from core.registry.versions import ModelRegistry
    from core.serving.classifier import OnnxClassifier

    registry = ModelRegistry(settings.paths.models_dir)
    champion = registry.champion() or install_starter(registry)  # a fresh clone scores the shipped starter
    if champion is None:
        print("no champion and no starter for these labels: run `python -m retrain bootstrap` first", file=sys.stderr)
        return ExitCode.ERROR
    [examples], labels = read_labelled([Path(csv)])
    classifier = OnnxClassifier(champion.path, onnx_file=onnx_file, threads=settings.serving.onnx_threads)
    try:
        probs = classifier.proba_in_label_order([e.text for e in examples], labels=labels)
    except ValueError as exc:  # the file names a topic the champion does not predict
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    report = evaluate_probabilities([e.label for e in examples], probs, labels)
    _print(report | {"model_version": champion.version, "onnx_file": classifier.onnx_file, "csv": csv})
    return ExitCode.OK


def status(settings: Settings, *, as_json: bool = False) -> int:
    """The model registry, the feedback a retrain would see, the last retrain and the champion on its served traffic:
    a summary a person reads, or (`as_json`) the whole report, the champion's metadata and every day included.
    Exits ExitCode.ALERT when the traffic raised the alert."""
    import contextlib
    from dataclasses import asdict

    from core.evaluation.monitor import alert_lines
    from core.registry.stages import read_last_run
    from core.registry.versions import ModelRegistry
    from feedback.monitoring import traffic_report
    from feedback.store import FeedbackStore
    from feedback.training.readiness import readiness

    report = ModelRegistry(settings.paths.models_dir).status()
    last_run = read_last_run(settings.paths)
    alerts: list[str] = []
    ready = traffic = None
    if settings.storage.database_url or settings.paths.feedback_db.is_file():
        with contextlib.closing(FeedbackStore.from_settings(settings)) as store:
            ready = readiness(store, settings.trust_policy(), settings.retrain_policy(), settings.gate, last_run)
            traffic = traffic_report(store, report["champion"], report.get("champion_meta") or {}, settings.monitor,
                                     settings.trust_policy())
            suspicious = store.answers.count("suspicious")  # what the admin view's tile counts
        # The feedback a retrain would see, and whose held-out articles would judge it (and what they could see).
        report["feedback"] = asdict(ready) | {"enough": ready.enough, "judged_by": ready.evidence.mode,
                                              "evidence_words": ready.evidence.words(), "suspicious": suspicious}
        report["traffic"] = traffic.to_dict()
        alerts = alert_lines(traffic.check)
    if as_json:
        _print(report)
    else:
        print("\n".join(status_lines(report, ready, traffic, last_run)))
    for line in alerts:
        print(f"alert: {line}", file=sys.stderr)
    return ExitCode.ALERT if alerts else ExitCode.OK


EVENTS_SHOWN = 5  # the registry's latest events in the summary (--json has the last 20)


def status_lines(report: dict[str, Any], ready: Readiness | None, traffic: TrafficReport | None,
                 last_run: RunRecord | None) -> list[str]:
    """`status` for a person: a few lines per part, no metadata dumps (the champion's confidence maps and data
    files are thousands of lines: `--json` has them)."""
    from core.input_forms import FORM_NAMES

    meta = report.get("champion_meta") or {}
    validation = meta.get("validation") or {}
    served = "int8" if "int8" in str(meta.get("serve_file", "")) else "fp32"
    accuracy = (validation.get(served) or {}).get("accuracy", validation.get("accuracy"))
    lines = [f"Champion: {report['champion'] or 'none (run `newsloop bootstrap`)'}"
             + (f" ({meta.get('kind') or 'retrained'}, validation accuracy {accuracy:.1%}, since "
                f"{meta.get('committed_at', '?')})" if isinstance(accuracy, int | float) else ""),
             f"Rollback to: {', '.join(report['previous']) or 'nothing (no previous champion)'}",
             f"Versions: {', '.join(report['versions']) or 'none'}", "Latest events:"]
    events = report.get("events") or []
    lines += [f"  {str(e.get('at', ''))[:16].replace('T', ' ')} {e.get('action')} {e.get('version')}: "
              f"{e.get('reason') or ' '.join(e.get('reasons') or [])}" for e in events[-EVENTS_SHOWN:]] or ["  none"]
    if last_run is None:
        lines.append("Last retrain: none yet")
    else:
        lines.append(f"Last retrain: {last_run.decision} at {last_run.finished_at or '?'}, {last_run.seconds:.1f} s")
        lines += [f"  {reason}" for reason in last_run.reasons]
    if ready is None:
        lines.append("Feedback: no feedback database yet")
    else:
        lines += [f"Feedback a retrain would read: {ready.parts.words()}",
                  f"  new since the last run: {ready.new_trusted:,} trusted answer(s); a scheduled retrain waits for "
                  f"{ready.min_new:,}",
                  f"  judged by: {ready.evidence.words()}",
                  f"  suspicious answers waiting for review: {report['feedback']['suspicious']:,}, "
                  f"{ready.credible_waiting:,} of them from signed-in or checked people (likely true corrections)"]
    if traffic is not None:
        check = traffic.check
        forms = [f"{FORM_NAMES[c.form]} {c.estimated:.1%} of {c.n:,}" + (" (ALERT)" if c.alert else "")
                 for c in check.forms.values()]
        lines.append(f"Served traffic, last {check.days} day(s), estimated accuracy: {', '.join(forms) or 'nothing served'}")
    lines.append("The whole report, as JSON: newsloop status --json")
    return lines


def traffic_alerts(settings: Settings) -> list[str]:
    """The alert on the champion's served traffic, in words (none: no alert, or no feedback store yet)."""
    import contextlib

    from core.evaluation.monitor import alert_lines
    from core.registry.versions import ModelRegistry
    from feedback.monitoring import traffic_report
    from feedback.store import FeedbackStore

    if not (settings.storage.database_url or settings.paths.feedback_db.is_file()):
        return []
    status = ModelRegistry(settings.paths.models_dir).status()
    with contextlib.closing(FeedbackStore.from_settings(settings)) as store:
        traffic = traffic_report(store, status["champion"], status.get("champion_meta") or {}, settings.monitor,
                                 settings.trust_policy(), days=settings.monitor.window_days)
    return alert_lines(traffic.check)


def baseline(settings: Settings, *, csv: str | None = None) -> int:
    """TF-IDF + linear SVM on the bootstrap's rows, for comparison (also scored on `csv` when given)."""
    from retrain.inputs import BootstrapSetup
    from retrain.training.baseline import tfidf_svm_baseline

    setup = BootstrapSetup.from_settings(settings)
    _print(tfidf_svm_baseline(setup.data, setup.max_rows, setup.train.seed, Path(csv) if csv else None))
    return ExitCode.OK


def starter(
    settings: Settings,
    *,
    version: str | None = None,
    out: str | None = None,
    command: str = "",
    reexport: bool = False,
    calibrate: bool = False,
) -> int:
    """Pack the champion (or `version`) as the shipped starter; or, in place, export the starter again
    (`reexport`) or fit its temperature (`calibrate`)."""
    from core.data import load_corpus
    from core.registry.starter import STARTER_DIR
    from core.registry.versions import ModelRegistry
    from retrain.export.starter import calibrate_starter, data_files, package_starter, reexport_starter, rows_seen

    data = settings.data
    folder = Path(out) if out else STARTER_DIR
    if calibrate:
        corpus = load_corpus(data.source, data.val_fraction, data.use_extra)
        meta = calibrate_starter(folder, corpus.validation)
        _print({"temperature": meta["temperature"], "calibration": meta["calibration"]})
        return ExitCode.OK
    if reexport:
        corpus = load_corpus(data.source, data.val_fraction, data.use_extra)
        meta = reexport_starter(
            folder, corpus.validation, settings.export_config(),
            description=corpus.description, data=data_files(data.source),
        )
        _print({"source_version": meta["source_version"], "validation": meta["validation"],
                "file_bytes": meta["file_bytes"]})
        return ExitCode.OK
    registry = ModelRegistry(settings.paths.models_dir)
    chosen = registry.get(version) if version else registry.champion()
    if chosen is None:
        print("error: no champion to pack; train one with `python -m retrain bootstrap`", file=sys.stderr)
        return ExitCode.ERROR
    corpus = load_corpus(data.source, data.val_fraction, data.use_extra)
    meta = package_starter(
        chosen, folder, corpus.validation,
        description=corpus.description, data=data_files(data.source), command=command,
        seen=rows_seen(data.source, {e.text for e in corpus.train}),
    )
    _print({"source_version": chosen.version, "validation": meta["validation"], "file_bytes": meta["file_bytes"]})
    return ExitCode.OK


def label_errors(settings: Settings, *, limit: int = 1000, encoder: str = "base") -> int:
    """Search the base rows and trusted answers for likely label errors and store the candidates for review
    (`newsloop review label-errors`, the admin page's panel); ExitCode.BAD_INPUT when there are too few rows."""
    import contextlib
    from dataclasses import asdict

    from core.data import load_corpus_or_seed
    from core.host.cpu_share import yield_cpu
    from feedback.store import FeedbackStore

    settings = yield_cpu(settings)  # before torch starts a thread: threads inherit the priority
    from retrain.label_errors.search import search

    data = settings.data
    corpus = load_corpus_or_seed(data.source, data.val_fraction, data.use_extra)
    settings.paths.feedback_db.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(FeedbackStore.from_settings(settings)) as store:
        try:
            report = search(store, corpus, data.source, settings.trust_policy(), models_dir=settings.paths.models_dir,
                            cache_dir=settings.paths.embeddings_cache, base_model=settings.model.base_model,
                            max_length=settings.train.max_length, limit=limit, seed=settings.train.seed,
                            use_champion=encoder == "champion",
                            min_topic_rows=settings.label_errors.min_topic_rows)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return ExitCode.BAD_INPUT
    _print(asdict(report))
    return ExitCode.OK
