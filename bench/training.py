"""Training speed of a retrain-like fine-tune (all-MiniLM-L6-v2 + MLP head), with and without length bucketing.

Default (a measured sample): `--steps` optimizer steps with length bucketing and the same number without,
on a fixed sample of `--rows` real training rows from NEWSLOOP_DATA, through `retrain.training.loop.train`; with
`--freeze K` also bucketed with the embeddings and K lower layers frozen (a retrain's recipe). Reports
examples/s for each and projects the wall time of one epoch over `--rows` rows: tokenization + training
loop + the validation checks `train` runs (`TrainConfig.eval_checks`, `TrainConfig.eval_rows` rows each).
A whole retrain, stage by stage, is `bench/retrain_speed.py`.

`--full` instead trains all `--rows` rows once, bucketed and with the validation checks, and reports the
real wall time.

Run from the repository root::

    NEWSLOOP_DATA=<data> python bench/training.py [--rows 10000] [--steps 30] [--freeze 3] [--full] [--json OUT]

The last printed line is a one-line `SUMMARY`, compared with the 10-minute retrain target.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import options

TARGET_MINUTES = 10.0


def steps_as_epochs(steps: int, n_rows: int, batch_size: int) -> float:
    # `train` plans ceil(epochs * steps_per_epoch) steps; half a step below keeps float error from adding one.
    return (steps - 0.5) / math.ceil(n_rows / batch_size)


def timed_tokenize(tokenizer: Any, texts: Sequence[str], max_length: int) -> float:
    start = time.perf_counter()
    tokenizer(list(texts), truncation=True, max_length=max_length)
    return time.perf_counter() - start


def timed_validation(model: Any, tokenizer: Any, texts: Sequence[str], max_length: int) -> float:
    """One of the validation checks `train` runs (predict_logits over `eval_rows` texts)."""
    from core.reading import Reading
    from retrain.classifier.tokens import predict_logits

    start = time.perf_counter()
    predict_logits(model, tokenizer, texts, Reading(max_length))
    seconds = time.perf_counter() - start
    model.train()
    return seconds


def mean_padding(lengths: np.ndarray, batch_size: int, bucket: bool, seed: int) -> float:
    """Share of token slots that are padding over one epoch of `make_batches` (why bucketing helps)."""
    from retrain.training.loop import make_batches

    batches = make_batches(lengths.tolist(), batch_size, np.random.default_rng(seed), bucket)
    real = sum(int(lengths[b].sum()) for b in batches)
    slots = sum(int(lengths[b].max()) * len(b) for b in batches)
    return 1.0 - real / slots


def run_sample(args: argparse.Namespace, settings: Any, texts: list[str], labels: list[int],
               val_texts: list[str]) -> dict[str, Any]:
    from bench.common import CpuWatch
    from retrain.classifier.model import load_base
    from retrain.training.loop import train

    start = time.perf_counter()
    model, tokenizer = load_base(settings.model.base_model, settings.model.dropout)
    load_s = time.perf_counter() - start
    base = settings.train_config(batch_size=args.batch_size, threads=args.threads, max_minutes=0)
    tokenize_s = timed_tokenize(tokenizer, texts, base.max_length)
    lengths = np.array([len(x) for x in tokenizer(texts, truncation=True, max_length=base.max_length)["input_ids"]])

    # A few untimed steps first: the first steps of a process pay for allocations and thread start-up.
    warm = base.with_(epochs=steps_as_epochs(3, len(texts), args.batch_size))
    train(model, tokenizer, texts, labels, warm)

    modes: dict[str, Any] = {}
    # Frozen last: freezing stays with the model.
    variants = [("bucketed", True, 0), ("unbucketed", False, 0)]
    variants += [(f"bucketed, {args.freeze} layers frozen", True, args.freeze)] if args.freeze else []
    for name, bucket, freeze in variants:
        epochs = steps_as_epochs(args.steps, len(texts), args.batch_size)
        config = base.with_(epochs=epochs, bucket_by_length=bucket, freeze_layers=freeze)
        watch = CpuWatch()
        result = train(model, tokenizer, texts, labels, config)
        modes[name] = {
            "steps": result.steps,
            "examples": result.examples_seen,
            "seconds": result.seconds,
            "examples_per_second": result.examples_per_second,
            "padding_share": mean_padding(lengths, args.batch_size, bucket, base.seed),
            "other_cpu": watch.share(),
        }
    eval_s = timed_validation(model, tokenizer, val_texts[: base.eval_rows], base.max_length) if val_texts else 0.0
    for mode in modes.values():
        loop_s = len(texts) / mode["examples_per_second"]
        mode["projected_loop_s"] = loop_s
        mode["projected_wall_s"] = tokenize_s + loop_s + base.eval_checks * eval_s
    return {"load_s": load_s, "tokenize_s": tokenize_s, "eval_s": eval_s, "evals": base.eval_checks,
            "mean_tokens": float(lengths.mean()), "modes": modes}


def run_full(args: argparse.Namespace, settings: Any, texts: list[str], labels: list[int],
             val_texts: list[str], val_labels: list[int]) -> dict[str, Any]:
    from retrain.classifier.model import load_base
    from retrain.training.loop import train

    start = time.perf_counter()
    model, tokenizer = load_base(settings.model.base_model, settings.model.dropout)
    load_s = time.perf_counter() - start
    config = settings.train_config(
        epochs=1.0, batch_size=args.batch_size, threads=args.threads, max_minutes=0, bucket_by_length=True
    )
    start = time.perf_counter()
    result = train(model, tokenizer, texts, labels, config, val_texts=val_texts, val_labels=val_labels)
    wall_s = time.perf_counter() - start
    last = result.history[-1] if result.history else {}
    return {"load_s": load_s, "wall_s": wall_s, "loop_s": result.seconds, "steps": result.steps,
            "examples": result.examples_seen, "examples_per_second": result.examples_per_second,
            "val_accuracy": last.get("val_accuracy"), "val_macro_f1": last.get("val_macro_f1")}


def verdict(seconds: float) -> str:
    minutes = seconds / 60.0
    if minutes <= TARGET_MINUTES:
        return f"{minutes:.1f} min, within the {TARGET_MINUTES:g}-min target"
    return f"{minutes:.1f} min, over the {TARGET_MINUTES:g}-min target by {minutes - TARGET_MINUTES:.1f} min"



def main(argv: Sequence[str] | None = None) -> int:
    parser = options.parser(__doc__)
    parser.add_argument("--rows", type=int, default=10_000, help="training rows (one epoch)")
    parser.add_argument("--steps", type=int, default=30, help="measured steps per mode in the sample")
    parser.add_argument("--full", action="store_true", help="really train all --rows rows once (bucketed)")
    parser.add_argument("--freeze", type=int, default=0, help="also measure with the embeddings and K layers frozen")
    parser.add_argument("--batch-size", type=int, default=0, help="0 = NEWSLOOP_BATCH_SIZE")
    parser.add_argument("--threads", type=int, default=0, help="torch threads; 0 = NEWSLOOP_TORCH_THREADS or all")
    parser.add_argument("--progress", action="store_true", help="show the training progress bars")
    parser.add_argument("--json", type=Path, help="also write the numbers to this JSON file")
    args = parser.parse_args(argv)
    if not args.progress:
        os.environ["TQDM_DISABLE"] = "1"

    import torch

    from bench.common import CpuWatch, contention_note, share_cell
    from core.data import load_corpus
    from core.settings.config import load_settings
    from retrain.training.targets import cap_rows

    settings = load_settings()
    args.batch_size = args.batch_size or settings.train.batch_size
    args.threads = args.threads or settings.train.threads
    corpus = load_corpus(settings.data.source, settings.data.val_fraction, settings.data.use_extra)
    rows = cap_rows(corpus.train, args.rows, settings.train.seed)
    texts, labels = [e.text for e in rows], [e.label for e in rows]
    val_texts, val_labels = [e.text for e in corpus.validation], [e.label for e in corpus.validation]
    threads = args.threads or os.cpu_count() or 1
    mode = "full run" if args.full else f"sample of {args.steps} steps per mode"
    print(f"# Training benchmark ({mode}): {len(rows)} rows of {corpus.description}")
    print(f"batch size {args.batch_size}, max_length {settings.train.max_length}, {threads} torch threads "
          f"({os.cpu_count()} cores, {platform.processor() or platform.machine()}); torch {torch.__version__}")
    run_watch = CpuWatch()
    if len(rows) < args.rows:
        print(f"(only {len(rows)} training rows available, fewer than --rows {args.rows})")
    print()

    if args.full:
        out = run_full(args, settings, texts, labels, val_texts, val_labels)
        print(f"Trained {out['examples']} examples ({out['steps']} steps) in {out['wall_s']:.0f} s wall "
              f"(training loop incl. validation checks {out['loop_s']:.0f} s, "
              f"{out['examples_per_second']:.1f} examples/s; base model load {out['load_s']:.1f} s not included); "
              f"final validation accuracy "
              f"{(out['val_accuracy'] or 0) * 100:.2f}%, macro-F1 {(out['val_macro_f1'] or 0) * 100:.2f}%")
        summary = (f"SUMMARY training (measured, bucketed): {out['examples_per_second']:.1f} examples/s; "
                   f"{len(rows)} rows x 1 epoch took {verdict(out['wall_s'])}")
    else:
        out = run_sample(args, settings, texts, labels, val_texts)
        print("| mode | steps | examples/s | padding share | projected loop | projected wall | others' CPU |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, m in out["modes"].items():
            print(f"| {name} | {m['steps']} | {m['examples_per_second']:.1f} | {m['padding_share'] * 100:.0f}% "
                  f"| {m['projected_loop_s'] / 60:.1f} min | {m['projected_wall_s'] / 60:.1f} min "
                  f"| {share_cell(m['other_cpu'])} |")
        print()
        print(f"Fixed costs in the projection: tokenizing {len(rows)} rows {out['tokenize_s']:.1f} s, "
              f"{out['evals']} validation checks x {out['eval_s']:.1f} s; base model load {out['load_s']:.1f} s "
              f"(not included); mean {out['mean_tokens']:.0f} tokens per text")
        b, u = out["modes"]["bucketed"], out["modes"]["unbucketed"]
        budget_s = TARGET_MINUTES * 60 - out["tokenize_s"] - out["evals"] * out["eval_s"]
        affordable = int(b["examples_per_second"] * budget_s)
        print(f"At the bucketed speed, {TARGET_MINUTES:g} minutes fit about {max(0, affordable):,} rows x 1 epoch")
        ratio = b["examples_per_second"] / u["examples_per_second"]
        frozen = [m for name, m in out["modes"].items() if "frozen" in name]
        summary = (f"SUMMARY training: bucketed {b['examples_per_second']:.1f} ex/s vs unbucketed "
                   f"{u['examples_per_second']:.1f} ex/s ({ratio:.2f}x); "
                   + (f"{args.freeze} layers frozen {frozen[0]['examples_per_second']:.1f} ex/s "
                      f"({frozen[0]['examples_per_second'] / b['examples_per_second']:.2f}x bucketed); " if frozen else "")
                   + f"projected {len(rows)}-row epoch {verdict(b['projected_wall_s'])}")
    if args.json:
        args.json.write_text(json.dumps({"rows": len(rows), "batch_size": args.batch_size, "threads": threads,
                                         "full": args.full, "steps": args.steps, **out}, indent=2))
        print(f"wrote {args.json}")
    print(contention_note(run_watch.share()))
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
