"""Command line: `python -m retrain {bootstrap,run,rollback,watch,evaluate,status,baseline,starter}`."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from core.data import DataSourceError, InputForm
from core.settings.config import ConfigError, load_settings

EXIT_OK = 0  # also: a retrain promoted its challenger
EXIT_FAILED = 1
EXIT_REFUSED = 3  # a retrain ran and the gate kept the champion
EXIT_BUSY = 4  # another retrain holds the lock


def _print(payload: object) -> None:
    print(json.dumps(payload, indent=2, sort_keys=True, default=str))


def cmd_bootstrap(args: argparse.Namespace) -> int:
    from retrain.bootstrap import bootstrap
    from retrain.setup import BootstrapSetup

    setup = BootstrapSetup.from_settings(
        load_settings(), max_rows=args.max_rows, max_minutes=args.max_minutes, forms=args.forms,
        init_from=args.init_from,
    )
    result = bootstrap(setup)
    v = result.exported.version
    _print(
        {
            "champion": v.version,
            "data": result.corpus.description,
            "rows": v.meta["rows"],
            "validation": v.meta["validation"],
            "serve_file": v.meta["serve_file"],
            "train_seconds": round(result.train.seconds, 1),
            "wall_seconds": round(result.seconds, 1),
        }
    )
    return EXIT_OK


def parse_forms(spec: str) -> tuple[tuple[InputForm, int], ...]:
    """`full,title:8000,body:6000`: the input forms to train on, each with an optional row cap."""
    forms = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        name, _, cap = part.partition(":")
        try:
            forms.append((InputForm(name), int(cap or 0)))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"bad form {part!r}: expected one of {', '.join(f.value for f in InputForm)}, optionally :rows"
            ) from None
    if not forms:
        raise argparse.ArgumentTypeError("name at least one input form")
    return tuple(forms)


def cmd_run(args: argparse.Namespace) -> int:
    from core.host.cpu_share import yield_cpu

    settings = yield_cpu(load_settings())  # before torch starts a thread: threads inherit the priority
    from retrain.run import retrain
    from retrain.setup import RetrainSetup
    from retrain.state import RetrainBusy

    setup = RetrainSetup.from_settings(settings, max_minutes=args.max_minutes, base_rows=args.base_rows)
    try:
        result = retrain(setup)
    except RetrainBusy as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BUSY
    _print(result.as_dict())
    return {"promoted": EXIT_OK, "refused": EXIT_REFUSED}.get(result.decision, EXIT_FAILED)


def cmd_rollback(args: argparse.Namespace) -> int:
    from core.registry.mlflow_champion import is_tracking_server, mirror_versions
    from core.registry.versions import ANY, ModelRegistry, RegistryError
    from retrain.tracking import sync_aliases

    settings = load_settings()
    registry = ModelRegistry(settings.models_dir)
    try:
        if is_tracking_server(settings.tracking_uri):  # replicas follow @champion: start from the server's record
            mirror_versions(settings.tracking_uri, registry)
        expected = ANY if args.expect is None else args.expect
        restored = registry.rollback(reason=args.reason, expected_champion=expected)
    except RegistryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    try:
        sync_aliases(settings.tracking_uri, registry)
    except Exception as exc:
        print(f"warning: MLflow aliases not updated: {exc}", file=sys.stderr)
    _print({"champion": restored.version, "status": registry.status()["previous"]})
    return EXIT_OK


def cmd_watch(args: argparse.Namespace) -> int:
    import contextlib
    import time

    from core.host.cpu_share import yield_cpu

    settings = yield_cpu(load_settings())  # before torch starts a thread: threads inherit the priority
    from core.registry.stages import read_last_run
    from feedback.readiness import count_new_trusted
    from feedback.store import FeedbackStore
    from retrain.run import retrain
    from retrain.setup import RetrainSetup
    from retrain.state import RetrainBusy

    setup = RetrainSetup.from_settings(settings)
    interval = args.interval or 60.0
    min_new = args.min_new or setup.policy.min_feedback
    log = logging.getLogger("retrain.watch")
    log.info("watching: a retrain runs when %d new trusted answers have arrived since the last run "
             "(checked every %.0f s)", min_new, interval)
    while True:
        new = 0
        if setup.database_url or setup.paths.feedback_db.is_file():
            with contextlib.closing(FeedbackStore.from_settings(settings)) as store:
                new = count_new_trusted(store, setup.trust, read_last_run(setup.paths))
        if new >= min_new:
            log.info("%d new trusted answers since the last run: retraining", new)
            try:
                result = retrain(setup)
                log.info("retrain %s: %s", result.decision, "; ".join(result.reasons) or "ok")
            except RetrainBusy:
                log.info("a retrain is already running")
            except Exception:
                log.exception("retrain failed")
        else:
            log.info("%d new trusted answers since the last run; waiting for %d", new, min_new)
        if args.once:
            return EXIT_OK
        time.sleep(interval)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from core.data import read_csv
    from core.evaluation.metrics import evaluate_probabilities
    from core.registry.starter import install_starter
    from core.registry.versions import ModelRegistry
    from core.serving.classifier import OnnxClassifier

    settings = load_settings()
    registry = ModelRegistry(settings.paths.models_dir)
    champion = registry.champion() or install_starter(registry)  # a fresh clone scores the shipped starter
    if champion is None:
        print("no champion and no starter for these labels: run `python -m retrain bootstrap` first", file=sys.stderr)
        return EXIT_FAILED
    examples = read_csv(Path(args.csv))
    classifier = OnnxClassifier(champion.path, onnx_file=args.onnx_file, threads=settings.onnx_threads)
    probs = classifier.proba_in_label_order([e.text for e in examples])
    report = evaluate_probabilities([e.label for e in examples], probs)
    _print(report | {"model_version": champion.version, "onnx_file": classifier.onnx_file, "csv": args.csv})
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    import contextlib
    from dataclasses import asdict

    from core.registry.stages import read_last_run
    from core.registry.versions import ModelRegistry
    from feedback.readiness import readiness
    from feedback.store import FeedbackStore

    settings = load_settings()
    status = ModelRegistry(settings.models_dir).status()
    if settings.database_url or settings.paths.feedback_db.is_file():
        with contextlib.closing(FeedbackStore.from_settings(settings)) as store:
            ready = readiness(store, settings.trust_policy(), settings.retrain_policy(), settings.gate_config(),
                              read_last_run(settings.paths))
        # The feedback a retrain would see, and how many more traffic labels the gate needs for the target gain.
        status["feedback"] = asdict(ready) | {"enough": ready.enough, "traffic_more": ready.traffic.more}
    _print(status)
    return EXIT_OK


def cmd_baseline(args: argparse.Namespace) -> int:
    from retrain.baseline import tfidf_svm_baseline
    from retrain.setup import BootstrapSetup

    setup = BootstrapSetup.from_settings(load_settings())
    _print(tfidf_svm_baseline(setup.data, setup.max_rows, setup.train.seed, Path(args.csv) if args.csv else None))
    return EXIT_OK


def cmd_starter(args: argparse.Namespace) -> int:
    from core.data import load_corpus
    from core.registry.starter import STARTER_DIR
    from core.registry.versions import ModelRegistry
    from retrain.starter import calibrate_starter, data_files, package_starter, reexport_starter

    settings = load_settings()
    data = settings.data_source()
    if args.calibrate:
        corpus = load_corpus(data.source, data.val_fraction, data.use_extra)
        meta = calibrate_starter(Path(args.out) if args.out else STARTER_DIR, corpus.validation)
        _print({"temperature": meta["temperature"], "calibration": meta["calibration"]})
        return EXIT_OK
    if args.reexport:
        corpus = load_corpus(data.source, data.val_fraction, data.use_extra)
        meta = reexport_starter(
            Path(args.out) if args.out else STARTER_DIR, corpus.validation, settings.export_config(),
            description=corpus.description, data=data_files(data.source),
        )
        _print({"source_version": meta["source_version"], "validation": meta["validation"],
                "file_bytes": meta["file_bytes"]})
        return EXIT_OK
    registry = ModelRegistry(settings.paths.models_dir)
    version = registry.get(args.version) if args.version else registry.champion()
    if version is None:
        print("error: no champion to pack; train one with `python -m retrain bootstrap`", file=sys.stderr)
        return EXIT_FAILED
    corpus = load_corpus(data.source, data.val_fraction, data.use_extra)
    meta = package_starter(
        version, Path(args.out) if args.out else STARTER_DIR, corpus.validation,
        description=corpus.description, data=data_files(data.source), command=args.command,
    )
    _print({"source_version": version.version, "validation": meta["validation"], "file_bytes": meta["file_bytes"]})
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m retrain", description="Train, evaluate and manage NewsLoop models.")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("bootstrap", help="train the first champion from NEWSLOOP_DATA (or the seed set)")
    p.add_argument("--max-rows", type=int, default=None, help="cap on training rows (default NEWSLOOP_BOOTSTRAP_MAX_ROWS)")
    p.add_argument("--max-minutes", type=float, default=None, help="training time budget (default NEWSLOOP_BOOTSTRAP_MAX_MINUTES)")
    p.add_argument("--forms", type=parse_forms, default="full",
                   help="input forms trained on, each with an optional row cap: e.g. full:8000,title,body:6000")
    p.add_argument("--init-from", default="", help="continue training from this checkpoint folder (e.g. models/starter/checkpoint)")
    p.set_defaults(func=cmd_bootstrap)
    p = sub.add_parser("run", help="retrain a challenger on base data + trusted feedback; promote it if it passes the gate")
    p.add_argument("--max-minutes", type=float, default=None, help="training time budget (default NEWSLOOP_RETRAIN_MAX_MINUTES)")
    p.add_argument("--base-rows", type=int, default=None, help="base rows replayed (default NEWSLOOP_RETRAIN_BASE_ROWS)")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("rollback", help="restore the previous champion")
    p.add_argument("--reason", default="manual rollback")
    p.add_argument("--expect", default=None, help="roll back only if this version is still the champion")
    p.set_defaults(func=cmd_rollback)
    p = sub.add_parser("watch", help="retrain whenever enough new trusted feedback has arrived")
    p.add_argument("--interval", type=float, default=None, help="seconds between checks (default 60)")
    p.add_argument("--min-new", type=int, default=None,
                   help="new trusted answers since the last run needed (default NEWSLOOP_RETRAIN_MIN_FEEDBACK)")
    p.add_argument("--once", action="store_true", help="check once and exit")
    p.set_defaults(func=cmd_watch)
    p = sub.add_parser("evaluate", help="score the serving champion on an AG-News-format CSV; prints JSON")
    p.add_argument("--csv", required=True)
    p.add_argument("--onnx-file", default=None, help="model.onnx or model.int8.onnx (default: the one served)")
    p.set_defaults(func=cmd_evaluate)
    p = sub.add_parser("status", help="print the model registry and the feedback a retrain would see, as JSON")
    p.set_defaults(func=cmd_status)
    p = sub.add_parser("baseline", help="TF-IDF + linear SVM on the same rows, for comparison")
    p.add_argument("--csv", default=None, help="also score on this AG-News-format CSV")
    p.set_defaults(func=cmd_baseline)
    p = sub.add_parser("starter", help="pack the champion (or --version) as the starter model shipped with the project")
    p.add_argument("--version", default=None, help="model version to pack (default: the champion)")
    p.add_argument("--out", default=None, help="output folder (default: models/starter in the project)")
    p.add_argument("--command", default="", help="the command that trained it, recorded in the model card")
    p.add_argument("--reexport", action="store_true",
                   help="instead, export the starter's own checkpoint again with the current export recipe, in place")
    p.add_argument("--calibrate", action="store_true",
                   help="instead, fit the starter's temperature on validation (every input form) and record it, in place")
    p.set_defaults(func=cmd_starter)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except (ConfigError, DataSourceError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
