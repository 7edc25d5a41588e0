"""Does the label-error search find flipped labels? Flip a share of the base training rows' labels at random (seeded),
search them as `newsloop label-errors` does, and print recall@2k (of k flipped rows, the share in the ranking's top 2k)
and precision@k (the share of its top k that are flipped), for each feature set and for their combination.

The embeddings come from a base encoder that never trained on these rows (default: the packaged all-MiniLM-L6-v2);
the shipped starter trained on their clean labels, so its embeddings would know the answer. The last table is a
linear-model proxy for the retrain, not a fine-tune: validation accuracy of the combined linear models trained on
the clean labels, on the flipped ones, and on the flipped ones with the top 2k candidates set to their true labels;
`--finetune` adds the same three as fine-tunes from the base encoder (the bootstrap's recipe, one epoch each), and
`--finetune-search` a ranking by out-of-fold fine-tunes (two folds), what the linear search stands in for.

    NEWSLOOP_DATA=../shared/data/ag_news python -m bench.label_errors
    python -m bench.label_errors --quick     # seconds: 400 rows, a tiny random encoder (mechanics only)
    NEWSLOOP_DATA=../shared/data/ag_news python -m bench.label_errors --finetune --cache ../embeddings

With --new-topic it measures what the search does with a topic added after the base data (Health, carved out of the
AG News rows by its words: the rows about it keep their old label, as base rows predate the topic): for k of its
answers, how many candidates the search suggests into it, how many of those are about it, and the candidates in
all; what NEWSLOOP_LABEL_ERRORS_MIN_TOPIC_ROWS (the fewest labelled rows of a topic before it is suggested) is set by.

    NEWSLOOP_DATA=../shared/data/ag_news python -m bench.label_errors --new-topic --rows 4000

With --fixes HOME it measures a maintainer's real decisions instead: after `newsloop label-errors` and `newsloop
review label-errors ...` in HOME, the champion's served accuracy on the base validation as labelled and as
corrected, and the same linear models (over the champion's cached embeddings) trained on the base training rows as
labelled and as corrected.

    NEWSLOOP_DATA=../shared/data/ag_news python -m bench.label_errors --extra --fixes HOME
"""

from __future__ import annotations

import logging
import re
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.common import CpuWatch, contention_note
from bench.options import add_data, add_val_fraction, default_data, parser
from core.data import Example, load_corpus
from core.evaluation.confident_learning import find_label_issues
from core.labels import LABELS as LABELS_AG
from core.logs import configure_logging
from core.reading import Reading
from core.settings.policies import MAX_LENGTH
from retrain.classifier.embeddings import cached_embeddings, encoder_embedder, pooled
from retrain.label_errors.folds import out_of_fold_probs
from testkit.label_noise import flip_labels, recall_precision

QUICK_ROWS = 400


def _tiny_embedder(max_length: int):  # type: ignore[no-untyped-def]  # the Embedder of retrain.classifier.embeddings
    from transformers import AutoTokenizer

    from retrain.classifier.model import resolve_base_model
    from testkit.models import tiny_model

    def embed(texts: Sequence[str]) -> np.ndarray:
        model = tiny_model()
        return pooled(model.encoder, AutoTokenizer.from_pretrained(resolve_base_model("")), texts,
                      Reading(max_length))

    return embed


def bench_embeddings(cache: Path, texts: Sequence[str], model: str, quick: bool, max_length: int) -> np.ndarray:
    """The base encoder's (`model`; "" = all-MiniLM-L6-v2) pooled embeddings of `texts`, through the benches' cache
    (bench/split_rows.py reads the same); `quick`: a tiny random encoder's."""
    embed = _tiny_embedder(max_length) if quick else encoder_embedder(model, max_length)
    key = f"bench {'tiny' if quick else model or 'all-MiniLM-L6-v2'}\0{max_length}"
    return cached_embeddings(cache, key, texts, embed)


def _linear_accuracy(train: Sequence[Example], labels: Sequence[int], train_vectors: np.ndarray,
                     validation: Sequence[Example], val_vectors: np.ndarray) -> tuple[float, float]:
    """Validation accuracy (and its standard error) of the search's two linear models, averaged, fit on `labels`."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    tfidf = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2),
                          LogisticRegression(C=10.0, max_iter=2000)).fit([e.text for e in train], labels)
    dense = make_pipeline(StandardScaler(), LogisticRegression(C=0.5, max_iter=2000)).fit(train_vectors, labels)
    probs = (tfidf.predict_proba([e.text for e in validation]) + dense.predict_proba(val_vectors)) / 2
    right = probs.argmax(axis=1) == np.array([e.label for e in validation])
    return float(right.mean()), float(np.sqrt(right.mean() * (1 - right.mean()) / len(right)))


def _fine_tuned(train: Sequence[Example], labels: Sequence[int], scored: Sequence[Example], quick: bool) -> np.ndarray:
    """The probabilities on `scored` of the bootstrap's fine-tune from the base encoder (one epoch of the default
    TrainConfig, no time cap, so every run takes the same steps), trained on `train` with `labels`."""
    from core.settings.config import load_settings
    from retrain.classifier.model import load_base
    from retrain.classifier.tokens import predict_logits
    from retrain.training.loop import train as fine_tune
    from testkit.models import tiny_model

    settings = load_settings()
    config = settings.train_config(max_minutes=0)
    if quick:
        from transformers import AutoTokenizer

        from retrain.classifier.model import resolve_base_model

        model, tokenizer = tiny_model(), AutoTokenizer.from_pretrained(resolve_base_model(""))
    else:
        model, tokenizer = load_base(settings.model.base_model, settings.model.dropout)
    fine_tune(model, tokenizer, [e.text for e in train], list(labels), config)
    logits = predict_logits(model, tokenizer, [e.text for e in scored], config.reading)
    exp = np.exp(logits - logits.max(axis=1, keepdims=True))
    return exp / exp.sum(axis=1, keepdims=True)


def _finetuned_accuracy(train: Sequence[Example], labels: Sequence[int], validation: Sequence[Example],
                        quick: bool) -> tuple[float, float]:
    """Validation accuracy (and its standard error) of `_fine_tuned` on `labels`."""
    said = _fine_tuned(train, labels, validation, quick).argmax(axis=1)
    right = said == np.array([e.label for e in validation])
    return float(right.mean()), float(np.sqrt(right.mean() * (1 - right.mean()) / len(right)))


def _finetuned_out_of_fold(rows: Sequence[Example], given: np.ndarray, seed: int, quick: bool) -> np.ndarray:
    """Out-of-fold probabilities from fine-tunes (two folds: each half scored by a fine-tune on the other), what
    the linear search stands in for."""
    from sklearn.model_selection import StratifiedKFold

    probs = np.zeros((len(rows), int(given.max()) + 1))
    folds = StratifiedKFold(n_splits=2, shuffle=True, random_state=seed)
    for fit, scored in folds.split(np.zeros(len(given)), given):
        part = _fine_tuned([rows[i] for i in fit], given[fit].tolist(), [rows[i] for i in scored], quick)
        probs[scored, : part.shape[1]] = part
    return probs


def run(data: str, *, share: float, seed: int, rows: int, model: str, quick: bool, val_fraction: float,
        extra: bool, cache: Path, max_length: int, finetune: bool = False, finetune_search: bool = False
        ) -> dict[str, object]:
    corpus = load_corpus(data, val_fraction, extra)
    clean = corpus.train[:rows] if rows else corpus.train
    noisy, flipped = flip_labels(clean, share, seed)
    texts = [e.text for e in noisy]
    given = np.array([e.label for e in noisy])
    started = time.perf_counter()
    vectors = bench_embeddings(cache, texts + [e.text for e in corpus.validation], model, quick, max_length)
    train_vectors, val_vectors = vectors[: len(texts)], vectors[len(texts):]
    embed_seconds = time.perf_counter() - started
    results = []
    searches: list[tuple[str, np.ndarray | None, bool]] = [
        ("TF-IDF", None, True), ("embeddings", train_vectors, False), ("embeddings + TF-IDF", train_vectors, True)]
    if finetune_search:  # what the linear search stands in for; last, so the fixes below still follow the search's
        searches.insert(0, ("fine-tuned, 2 folds", None, False))
    for name, features, text_part in searches:
        started = time.perf_counter()
        if name == "fine-tuned, 2 folds":
            probs = _finetuned_out_of_fold(noisy, given, seed, quick)
        elif text_part:
            probs = out_of_fold_probs(texts, given, features, seed)
        else:
            probs = _embeddings_only(given, train_vectors, seed)
        issues = find_label_issues(probs, given)
        recall, precision = recall_precision(issues.order, flipped)
        in_candidates = len(set(issues.candidate_rows.tolist()) & set(flipped.tolist()))
        results.append({"features": name, "recall_at_2k": recall, "precision_at_k": precision,
                        "candidates": issues.candidates, "flipped_in_candidates": in_candidates,
                        "seconds": time.perf_counter() - started, "order": issues.order})
    best = results[-1]
    top = np.asarray(best["order"])[: 2 * len(flipped)]
    fixed = given.copy()
    fixed[top] = [clean[i].label for i in top.tolist()]  # a reviewer setting each top candidate to its true label
    views = (("clean labels", [e.label for e in clean]), ("flipped", given.tolist()),
             ("flipped, top 2k fixed", fixed.tolist()))
    accuracy = {name: _linear_accuracy(noisy, labels, train_vectors, corpus.validation, val_vectors)
                for name, labels in views}
    finetuned = {}
    for name, labels in views if finetune else ():
        started = time.perf_counter()
        finetuned[name] = (*_finetuned_accuracy(noisy, labels, corpus.validation, quick),
                           time.perf_counter() - started)
    return {"rows": len(noisy), "flipped": len(flipped), "validation": len(corpus.validation),
            "description": corpus.description, "embed_seconds": embed_seconds, "results": results,
            "accuracy": accuracy, "finetuned": finetuned}


def _embeddings_only(given: np.ndarray, vectors: np.ndarray, seed: int) -> np.ndarray:
    """The embeddings' own out-of-fold probabilities (the search averages them with TF-IDF's)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=seed)
    return cross_val_predict(make_pipeline(StandardScaler(), LogisticRegression(C=0.5, max_iter=2000)), vectors,
                             given, cv=folds, method="predict_proba")


def measure_fixes(home: Path, data: str, *, val_fraction: float, extra: bool, max_length: int) -> str:
    """The table of --fixes: what HOME's live label fixes change in the champion's and the linear models' scores."""
    from core.registry.versions import ModelRegistry
    from core.storage.paths import CHECKPOINT_DIR, HomePaths
    from feedback.store import FeedbackStore
    from feedback.training.fixes import LabelFixes, read_fixes
    from retrain.export.scoring import served_probs
    from retrain.label_errors.rows import base_rows

    paths = HomePaths(home)
    store = FeedbackStore(paths.feedback_db)
    try:
        fixes = read_fixes(store)
    finally:
        store.close()
    corpus = load_corpus(data, val_fraction, extra)
    champion = ModelRegistry(paths.models_dir).champion()
    if champion is None:
        raise SystemExit(f"{home} has no champion")
    texts = [r.text for r in base_rows(corpus, data, LabelFixes())]  # the search's rows, in its order: its cache
    vectors = cached_embeddings(paths.embeddings_cache, f"champion {champion.version}\0{max_length}", texts,
                                encoder_embedder(str(champion.path / CHECKPOINT_DIR), max_length))
    train_vectors, val_vectors = vectors[: len(corpus.train)], vectors[len(corpus.train):]
    views = {"as labelled": (corpus.train, corpus.validation),
             "as corrected": (fixes.examples(corpus.train), fixes.examples(corpus.validation))}
    lines = [f"{corpus.description}: {len(fixes)} live fixes, {fixes.touched(corpus.train)} on base training rows, "
             f"{fixes.touched(corpus.validation)} on validation rows", "",
             "| validation | champion (served) | linear models trained as labelled | linear models trained as corrected |",
             "|---|---|---|---|"]
    keep_train = _kept(corpus.train, views["as corrected"][0])
    keep_val = _kept(corpus.validation, views["as corrected"][1])
    # Scored once: the corrected view holds the same texts (fewer, relabelled), so the same predictions.
    said = dict(zip([e.text for e in corpus.validation], served_probs(champion, corpus.validation).argmax(axis=1),
                    strict=True))
    for view, (_, validation) in views.items():
        val_rows = val_vectors if view == "as labelled" else val_vectors[keep_val]
        right = np.array([said[e.text] == e.label for e in validation])
        cells = [f"{right.mean():.4f} ± {np.sqrt(right.mean() * (1 - right.mean()) / len(right)):.4f}"]
        for train_view in views:
            train = views[train_view][0]
            train_rows = train_vectors if train_view == "as labelled" else train_vectors[keep_train]
            acc, se = _linear_accuracy(train, [e.label for e in train], train_rows, validation, val_rows)
            cells.append(f"{acc:.4f} ± {se:.4f}")
        lines.append(f"| {view} ({len(validation)} rows) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# What makes an AG News row "about Health" in --new-topic: its words (a keyword rule, so the figures are approximate).
HEALTH = re.compile(r"\b(health|medical|medicine|drugs?|cancer|diseases?|patients?|vaccines?|virus|hospitals?|"
                    r"doctors?|flu|obesity|diabetes|hiv|aids|surgery|clinical|nurses?)\b", re.IGNORECASE)
NEW_TOPIC_ANSWERS = (2, 5, 10, 20, 40, 80)


def new_topic(data: str, *, rows: int, seed: int, model: str, quick: bool, val_fraction: float, extra: bool,
              cache: Path, max_length: int, answers: Sequence[int] = NEW_TOPIC_ANSWERS) -> str:
    """The table of --new-topic: for each count of Health answers, the search's candidates into Health (and how many
    are about it by HEALTH) against its candidates in all, with no floor on a topic's labelled rows."""
    corpus = load_corpus(data, val_fraction, extra)
    order = np.random.default_rng(seed).permutation(len(corpus.train)).tolist()
    about = [i for i in order if HEALTH.search(corpus.train[i].text)]
    # The answers people give once Health exists, never base rows: from the end of the order, as the base rows are
    # from its start (so the base rows keep their share of Health articles).
    pool = about[::-1][: max(*answers, *NEW_TOPIC_ANSWERS)]  # one pool for any counts: the embeddings' cache holds
    taken = set(pool)
    base = [corpus.train[i] for i in order if i not in taken][: rows or None]
    health = len(LABELS_AG)
    texts = [e.text for e in base] + [corpus.train[i].text for i in pool]
    vectors = bench_embeddings(cache, texts, model, quick, max_length)
    lines = [f"{corpus.description}: {len(base)} base rows ({sum(bool(HEALTH.search(e.text)) for e in base)} about "
             "Health, labelled with their AG News topic), Health added with k answers", "",
             "| Health answers (k) | candidates | suggested into Health | of those about Health | precision into Health |",
             "|---|---|---|---|---|"]
    for k in answers:
        given = np.array([e.label for e in base] + [health] * k)
        used = len(base) + k
        probs = out_of_fold_probs(texts[:used], given, vectors[:used], seed, classes=health + 1)
        issues = find_label_issues(probs, given)
        into = [int(i) for i in issues.candidate_rows.tolist() if issues.suggested[i] == health]
        right = sum(bool(HEALTH.search(texts[i])) for i in into)
        share = f"{right / len(into):.2f}" if into else "–"
        lines.append(f"| {k} | {issues.candidates} | {len(into)} | {right} | {share} |")
    return "\n".join(lines)


def _kept(rows: Sequence[Example], kept: Sequence[Example]) -> np.ndarray:
    """The positions in `rows` of the rows `kept` still holds (the fixes leave excluded rows out, in order)."""
    texts = {e.text for e in kept}
    return np.array([i for i, e in enumerate(rows) if e.text in texts], dtype=np.int64)


def report(result: dict[str, object]) -> str:
    lines = [f"{result['description']}: {result['rows']} training rows, {result['flipped']} labels flipped; "
             f"embeddings {result['embed_seconds']:.0f} s", "",
             "| features | recall@2k | precision@k | candidates | flipped among them | seconds |",
             "|---|---|---|---|---|---|"]
    for row in result["results"]:  # type: ignore[attr-defined]
        lines.append(f"| {row['features']} | {row['recall_at_2k']:.3f} | {row['precision_at_k']:.3f} | "
                     f"{row['candidates']} | {row['flipped_in_candidates']} | {row['seconds']:.0f} |")
    lines += ["", f"| linear models trained on | validation accuracy ({result['validation']} rows) | standard error |",
              "|---|---|---|"]
    for name, (acc, se) in result["accuracy"].items():  # type: ignore[attr-defined]
        lines.append(f"| {name} | {acc:.4f} | {se:.4f} |")
    if result.get("finetuned"):
        lines += ["", f"| fine-tuned from the base encoder on | validation accuracy ({result['validation']} rows) | "
                  "standard error | seconds |", "|---|---|---|---|"]
        for name, (acc, se, seconds) in result["finetuned"].items():  # type: ignore[attr-defined]
            lines.append(f"| {name} | {acc:.4f} | {se:.4f} | {seconds:.0f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser(__doc__, "python -m bench.label_errors")
    add_data(args)
    add_val_fraction(args)
    args.add_argument("--share", type=float, default=0.03, help="share of training rows flipped (default 0.03)")
    args.add_argument("--seed", type=int, default=0, help="seed of the flips and the folds (default 0)")
    args.add_argument("--rows", type=int, default=0, help="use the first N training rows (default all)")
    args.add_argument("--extra", action="store_true", help="also the folder's train_*.csv files (default train.csv)")
    args.add_argument("--model", default="", help="base encoder for the embeddings (default all-MiniLM-L6-v2)")
    args.add_argument("--cache", type=Path, default=None, help="embeddings cache folder (default: a temporary one)")
    args.add_argument("--max-length", type=int, default=MAX_LENGTH, help=f"tokens per text (default {MAX_LENGTH})")
    args.add_argument("--quick", action="store_true",
                      help=f"the first {QUICK_ROWS} rows and a tiny random encoder: seconds, mechanics only")
    args.add_argument("--finetune", action="store_true",
                      help="also fine-tune from the base encoder on each labelling (three bootstraps: an hour on 2 cores)")
    args.add_argument("--finetune-search", action="store_true",
                      help="also rank by out-of-fold fine-tunes (two, from the base encoder), for the search to be "
                      "compared with")
    args.add_argument("--new-topic", action="store_true",
                      help="instead, measure suggestions into a topic added with few answers (see above)")
    args.add_argument("--answers", default=",".join(map(str, NEW_TOPIC_ANSWERS)),
                      help=f"--new-topic: the counts of answers tried (default {','.join(map(str, NEW_TOPIC_ANSWERS))})")
    args.add_argument("--fixes", type=Path, default=None, metavar="HOME",
                      help="instead, measure the live label fixes of this NEWSLOOP_HOME (see above)")
    options = args.parse_args(argv)
    configure_logging(logging.INFO)
    watch = CpuWatch()
    started = time.perf_counter()
    if options.fixes is not None:
        print(measure_fixes(options.fixes, options.data or default_data(), val_fraction=options.val_fraction,
                            extra=options.extra, max_length=options.max_length))
        print(f"\n{time.perf_counter() - started:.0f} s in all. {contention_note(watch.share())}")
        return 0
    if options.new_topic:
        with tempfile.TemporaryDirectory() as scratch:
            print(new_topic(options.data or default_data(), rows=QUICK_ROWS if options.quick and not options.rows
                            else options.rows, seed=options.seed, model=options.model, quick=options.quick,
                            val_fraction=options.val_fraction, extra=options.extra,
                            cache=options.cache or Path(scratch), max_length=options.max_length,
                            answers=[int(n) for n in options.answers.split(",") if n.strip()]))
        print(f"\n{time.perf_counter() - started:.0f} s in all. {contention_note(watch.share())}")
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        result = run(options.data or default_data(), share=options.share, seed=options.seed,
                     rows=QUICK_ROWS if options.quick and not options.rows else options.rows, model=options.model,
                     quick=options.quick, val_fraction=options.val_fraction, extra=options.extra,
                     cache=options.cache or Path(scratch), max_length=options.max_length, finetune=options.finetune,
                     finetune_search=options.finetune_search)
    print(report(result))
    print(f"\n{time.perf_counter() - started:.0f} s in all. {contention_note(watch.share())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
