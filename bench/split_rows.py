"""After a split, how well does the retrain read the parent's earlier rows? The part of the recipe for a changed
taxonomy that decides them (retrain.topics.split_rows.read_set_rows), measured on the real rows without a fine-tune.

A split of --into (default Business) into it and --topic (default Sci/Tech): the training rows of both become set
rows "Business or Sci/Tech", except N of them drawn as exact answers given after the split. The answers are drawn
with --asked-child-share of them on the child (the queue chooses what it asks, so this is rarely the rows' own mix),
and the set rows are kept at their natural mix or thinned to --set-child-share of the child. For each N the table
gives the share of set rows whose target's likelier topic is their true one, and the child's estimated share of
the set rows against the truth (the mean of the targets), for the product's reading (a balanced, strongly
regularised linear model) and three variants: sklearn's default strength, the answers' own mix as the prior, and
the set rows' mix estimated by EM. The embeddings are the base encoder's (the product reads the
champion's, which trained on the merged topic: the base encoder never saw these labels).

    NEWSLOOP_DATA=../shared/data/ag_news python -m bench.split_rows --cache ../embeddings
    python -m bench.split_rows --quick     # seconds: the seed set and a tiny random encoder (mechanics only)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.label_errors import bench_embeddings
from bench.options import add_data, add_val_fraction, default_data, parser
from core.data import Example, load_corpus
from core.settings.policies import MAX_LENGTH
from retrain.topics.split_rows import SET_READER_C, read_set_rows

# name -> (balanced class weights, C, mix by EM)
VARIANTS = {"the product's (balanced, C=0.003)": (True, SET_READER_C, False),
            "sklearn's default strength (C=1)": (True, 1.0, False),
            "the answers' own mix (not balanced)": (False, SET_READER_C, False),
            "the rows' mix estimated by EM": (True, SET_READER_C, True)}


def scenario(rows: Sequence[Example], vectors: np.ndarray, parent: int, child: int, answers: int, *,
             asked_child_share: float, set_child_share: float | None, seed: int) -> list[dict[str, object]]:
    """One split: `answers` exact answers drawn from the parent's and child's rows, the rest as set rows; each
    variant's reading of the set rows."""
    rng = np.random.default_rng(seed)
    ours = [i for i, e in enumerate(rows) if e.label in (parent, child)]
    of_child = [i for i in ours if rows[i].label == child]
    of_parent = [i for i in ours if rows[i].label == parent]
    n_child = round(answers * asked_child_share)
    asked = [*rng.choice(of_child, n_child, replace=False), *rng.choice(of_parent, answers - n_child, replace=False)]
    left_child = [i for i in of_child if i not in set(asked)]
    left_parent = [i for i in of_parent if i not in set(asked)]
    if set_child_share is not None:  # thin the child's rows so they make this share of the set rows
        keep = round(len(left_parent) * set_child_share / (1 - set_child_share))
        left_child = sorted(rng.choice(left_child, min(keep, len(left_child)), replace=False).tolist())
    olds = sorted(left_child + left_parent)
    examples = ([Example(rows[i].text, rows[i].label) for i in asked]
                + [Example(rows[i].text, parent, allowed=(parent, child)) for i in olds])
    truth = np.array([rows[i].label == child for i in olds])
    by_text = {rows[i].text: vectors[i] for i in ours}

    def embed(texts: Sequence[str]) -> np.ndarray:
        return np.stack([by_text[t] for t in texts])

    out = []
    for name, (balanced, strength, estimate_mix) in VARIANTS.items():
        resolved = read_set_rows(embed, examples, max(parent, child) + 1, seed, balanced=balanced,
                                 strength=strength, estimate_mix=estimate_mix)
        assert resolved is not None
        read_child = resolved.targets[:, child] > resolved.targets[:, parent]
        out.append({"variant": name, "answers": answers, "set_rows": len(olds),
                    "right": float((read_child == truth).mean()), "child_share": float(truth.mean()),
                    "estimated": resolved.prior[child], "child_recall": float(read_child[truth].mean()),
                    "parent_recall": float((~read_child[~truth]).mean())})
    return out


def report(title: str, results: list[dict[str, object]]) -> str:
    lines = [f"**{title}**", "", "| answers | variant | set rows read right | child recall | parent recall | "
             "child share: estimated / true |", "|---:|---|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r['answers']} | {r['variant']} | {r['right']:.3f} | {r['child_recall']:.3f} | "
                     f"{r['parent_recall']:.3f} | {r['estimated']:.2f} / {r['child_share']:.2f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser(__doc__, "python -m bench.split_rows")
    add_data(args)
    add_val_fraction(args)
    args.add_argument("--topic", default="Sci/Tech", help="the child a split carves out (default Sci/Tech)")
    args.add_argument("--into", default="Business", help="the parent it is carved from (default Business)")
    args.add_argument("--answers", default="25,50,100,200", help="exact answers after the split, per run")
    args.add_argument("--asked-child-share", type=float, default=0.5, help="share of the answers on the child")
    args.add_argument("--set-child-share", type=float, default=None,
                      help="thin the child's set rows to this share (default: their natural share)")
    args.add_argument("--seed", type=int, default=0)
    args.add_argument("--model", default="", help="base encoder (default all-MiniLM-L6-v2)")
    args.add_argument("--cache", type=Path, default=None, help="embeddings cache folder (bench/label_errors.py's)")
    args.add_argument("--quick", action="store_true", help="the seed set and a tiny random encoder: mechanics only")
    options = args.parse_args(argv)
    started = time.perf_counter()
    corpus = load_corpus("seed" if options.quick else options.data or default_data(), options.val_fraction, False)
    texts = [e.text for e in corpus.train] + [e.text for e in corpus.validation]
    cache = options.cache or Path(".cache-bench")
    vectors = bench_embeddings(cache, texts, options.model, options.quick, MAX_LENGTH)[: len(corpus.train)]
    parent, child = corpus.labels.index(options.into), corpus.labels.index(options.topic)
    results = [r for n in options.answers.split(",")
               for r in scenario(corpus.train, vectors, parent, child, int(n), seed=options.seed,
                                 asked_child_share=options.asked_child_share,
                                 set_child_share=options.set_child_share)]
    mix = "natural" if options.set_child_share is None else f"{options.set_child_share:.2f}"
    print(report(f"{options.topic} split from {options.into} ({corpus.description}): {options.asked_child_share:.2f} "
                 f"of the answers on the child, set rows' child share {mix}", results))
    print(f"\n{time.perf_counter() - started:.0f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
