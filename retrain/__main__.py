"""Command line: `python -m retrain {bootstrap,run,rollback,watch,evaluate,status,baseline}`."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from core.config import ConfigError, load_settings
from core.data import DataSourceError

EXIT_OK = 0  # also: a retrain promoted its challenger
EXIT_FAILED = 1
EXIT_REFUSED = 3  # a retrain ran and the gate kept the champion
EXIT_BUSY = 4  # another retrain holds the lock


def _print(payload: object) -> None:
    print(json.dumps(payload, indent=2, sort_keys=True, default=str))


def cmd_bootstrap(args: argparse.Namespace) -> int:
    from retrain.pipeline import bootstrap

    settings = load_settings()
    result = bootstrap(settings, max_rows=args.max_rows, max_minutes=args.max_minutes)
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


def cmd_run(args: argparse.Namespace) -> int:
    from retrain.run import RetrainBusy, retrain

    settings = load_settings()
    try:
        result = retrain(settings, max_minutes=args.max_minutes, base_rows=args.base_rows)
    except RetrainBusy as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BUSY
    _print(result.as_dict())
    return {"promoted": EXIT_OK, "refused": EXIT_REFUSED}.get(result.decision, EXIT_FAILED)


def cmd_rollback(args: argparse.Namespace) -> int:
    from core.registry import ModelRegistry, RegistryError
    from retrain.tracking import sync_aliases

    settings = load_settings()
    registry = ModelRegistry(settings.models_dir)
    try:
        restored = registry.rollback(reason=args.reason)
    except RegistryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    try:
        sync_aliases(settings, registry)
    except Exception as exc:
        print(f"warning: MLflow aliases not updated: {exc}", file=sys.stderr)
    _print({"champion": restored.version, "status": registry.status()["previous"]})
    return EXIT_OK


def cmd_watch(args: argparse.Namespace) -> int:
    import time

    from feedback.store import FeedbackStore
    from retrain.run import RetrainBusy, read_state, retrain

    settings = load_settings()
    interval = args.interval or 60.0
    min_new = args.min_new or settings.retrain_min_feedback
    log = logging.getLogger("retrain.watch")
    log.info("watching: a retrain runs when %d new answers have arrived (checked every %.0f s)", min_new, interval)
    while True:
        last_id = read_state(settings).get("last_run", {}).get("last_answer_id", 0)
        new = FeedbackStore(settings.feedback_db).count_since(last_id) if settings.feedback_db.is_file() else 0
        if new >= min_new:
            log.info("%d new answers since the last run: retraining", new)
            try:
                result = retrain(settings)
                log.info("retrain %s: %s", result.decision, "; ".join(result.reasons) or "ok")
            except RetrainBusy:
                log.info("a retrain is already running")
            except Exception:
                log.exception("retrain failed")
        if args.once:
            return EXIT_OK
        time.sleep(interval)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from core.data import read_csv
    from core.metrics import evaluate_probabilities
    from core.registry import ModelRegistry
    from core.serving import OnnxClassifier

    settings = load_settings()
    champion = ModelRegistry(settings.models_dir).champion()
    if champion is None:
        print("no champion yet: run `python -m retrain bootstrap` first", file=sys.stderr)
        return EXIT_FAILED
    examples = read_csv(Path(args.csv))
    classifier = OnnxClassifier(champion.path, onnx_file=args.onnx_file, threads=settings.onnx_threads)
    probs = classifier.predict_proba([e.text for e in examples])
    report = evaluate_probabilities([e.label for e in examples], probs)
    _print(report | {"model_version": champion.version, "onnx_file": classifier.onnx_file, "csv": args.csv})
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    from core.registry import ModelRegistry

    settings = load_settings()
    _print(ModelRegistry(settings.models_dir).status())
    return EXIT_OK


def cmd_baseline(args: argparse.Namespace) -> int:
    from retrain.baseline import tfidf_svm_baseline

    _print(tfidf_svm_baseline(load_settings(), test_csv=Path(args.csv) if args.csv else None))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m retrain", description="Train, evaluate and manage NewsLoop models.")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("bootstrap", help="train the first champion from NEWSLOOP_DATA (or the seed set)")
    p.add_argument("--max-rows", type=int, default=None, help="cap on training rows (default NEWSLOOP_BOOTSTRAP_MAX_ROWS)")
    p.add_argument("--max-minutes", type=float, default=None, help="training time budget (default NEWSLOOP_BOOTSTRAP_MAX_MINUTES)")
    p.set_defaults(func=cmd_bootstrap)
    p = sub.add_parser("run", help="retrain a challenger on base data + trusted feedback; promote it if it passes the gate")
    p.add_argument("--max-minutes", type=float, default=None, help="training time budget (default NEWSLOOP_RETRAIN_MAX_MINUTES)")
    p.add_argument("--base-rows", type=int, default=None, help="base rows replayed (default NEWSLOOP_RETRAIN_BASE_ROWS)")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("rollback", help="restore the previous champion")
    p.add_argument("--reason", default="manual rollback")
    p.set_defaults(func=cmd_rollback)
    p = sub.add_parser("watch", help="retrain whenever enough new feedback has arrived")
    p.add_argument("--interval", type=float, default=None, help="seconds between checks (default 60)")
    p.add_argument("--min-new", type=int, default=None, help="new answers needed (default NEWSLOOP_RETRAIN_MIN_FEEDBACK)")
    p.add_argument("--once", action="store_true", help="check once and exit")
    p.set_defaults(func=cmd_watch)
    p = sub.add_parser("evaluate", help="score the serving champion on an AG-News-format CSV; prints JSON")
    p.add_argument("--csv", required=True)
    p.add_argument("--onnx-file", default=None, help="model.onnx or model.int8.onnx (default: the one served)")
    p.set_defaults(func=cmd_evaluate)
    p = sub.add_parser("status", help="print the model registry as JSON")
    p.set_defaults(func=cmd_status)
    p = sub.add_parser("baseline", help="TF-IDF + linear SVM on the same rows, for comparison")
    p.add_argument("--csv", default=None, help="also score on this AG-News-format CSV")
    p.set_defaults(func=cmd_baseline)
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
