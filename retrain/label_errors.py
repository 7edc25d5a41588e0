"""The label-error search (`newsloop label-errors`): out-of-fold probabilities for every base row and trusted answer,
ranked by confident learning (`core.evaluation.label_issues`), stored for review (`feedback.trust.label_errors`).

Out of fold, a model never scores a row it trained on, or it would only echo the label. K fine-tunes would cost
hours; instead two linear models, each cross-validated (5 folds): a logistic regression over the base encoder's (or
the champion's) mean-pooled embeddings, and one over TF-IDF words and word pairs; their probabilities are averaged.
Measured on 14,164 base rows with 3% of labels flipped (`python -m bench.label_errors`, docs/results/label-errors.md),
the pair found more flips than either alone: recall@2k 0.889 against 0.725 (embeddings) and 0.795 (TF-IDF),
precision@k 0.631 against 0.588 and 0.581. The embeddings are computed once per model and data and cached under
home (`HomePaths.embeddings_cache`), so a second search costs seconds.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from core.data import SEED_SOURCE, Corpus, Example, read_csv, under_taxonomy
from core.evaluation.label_issues import RankBy, find_label_issues
from core.labels import NUM_LABELS
from core.reading import Reading
from core.registry.versions import ModelRegistry
from core.settings.config import SEED_CSV
from core.settings.policies import LabelErrorPolicy, TrustPolicy
from core.storage.paths import CHECKPOINT_DIR
from core.taxonomy import Taxonomy
from core.text import text_hash
from feedback.meaning import SET_MARK, allowed_keys
from feedback.store import FeedbackStore
from feedback.training.fixes import LabelFixes, read_fixes
from feedback.trust.label_errors import Candidate, Source
from feedback.trust.rules import select_trusted
from retrain.model import load_base, load_checkpoint
from retrain.train import collate, token_ids

log = logging.getLogger(__name__)

FOLDS = 5
Embedder = Callable[[Sequence[str]], np.ndarray]  # texts -> (n, dim) pooled embeddings


@dataclass(frozen=True)
class Row:
    """One row the search reads: its text and label (as training reads it, through the fixes) and where it is from."""

    source: Source
    text: str
    label: int  # an index into the taxonomy's keys
    origin: str
    # After a split, a row labelled before it is "B or C" (indices, `label` among them): it has no single label to
    # doubt, so it is not fitted; it is offered first, with the likelier of its topics (issue: after a split).
    allowed: tuple[int, ...] = ()

    def given(self, keys: Sequence[str]) -> str:
        """The label as stored on a candidate: a key, or a set's keys joined as `feedback.meaning` joins them."""
        return SET_MARK.join(keys[i] for i in self.allowed) if self.allowed else keys[self.label]


def base_rows(corpus: Corpus, data_source: str, fixes: LabelFixes) -> list[Row]:
    """Every base row (training and validation), once per text, read through the fixes, named by file and row where
    the source is a folder or a file of CSVs (rows numbered from 1 after the header), else by split and position."""
    where = _csv_rows(SEED_CSV if data_source == SEED_SOURCE else Path(data_source).expanduser())
    rows: list[Row] = []
    seen: set[str] = set()
    for split, examples in (("train", corpus.train), ("validation", corpus.validation)):
        for i, example in enumerate(fixes.examples(examples, labels=corpus.labels)):
            digest = text_hash(example.text)
            if digest not in seen:
                seen.add(digest)
                rows.append(Row(Source.BASE, example.text, example.label, where.get(digest, f"{split} row {i + 1}"),
                                example.allowed))
    return rows


def _csv_rows(path: Path) -> dict[str, str]:
    files = sorted([path / "train.csv", *path.glob("train_*.csv")]) if path.is_dir() else [path]
    where: dict[str, str] = {}
    for file in files:
        if file.suffix.lower() != ".csv" or not file.is_file():
            continue
        for number, example in enumerate(read_csv(file), start=1):
            where.setdefault(text_hash(example.text), f"{file.name} row {number}")
    return where


def answer_rows(store: FeedbackStore, policy: TrustPolicy, fixes: LabelFixes, taxonomy: Taxonomy) -> list[Row]:
    """Every trusted answer's text (read through the fixes, labels as they mean under `taxonomy`), named by its
    newest answer giving that label."""
    answers = store.answers.rows(taxonomy=taxonomy)  # newest first
    newest: dict[tuple[str, str], dict[str, Any]] = {}
    for answer in answers:
        newest.setdefault((answer["text_hash"], answer["user_label"]), answer)
    rows = []
    for trusted in fixes.trusted(select_trusted(answers, store.pool.gold_labels(taxonomy=taxonomy), policy)):
        digest = trusted.text_hash or text_hash(trusted.text)
        named = newest.get((digest, trusted.label))
        origin = (f"answer #{named['id']} by {named['annotator']}, {str(named['created_at'])[:10]}"
                  if named else "answer") + (f" ({trusted.votes} agree)" if trusted.votes > 1 else "")
        keys = [k for k in allowed_keys(trusted.label) if k in taxonomy.keys]
        if not keys:
            continue
        indices = tuple(sorted(taxonomy.keys.index(k) for k in keys))
        rows.append(Row(Source.ANSWER, trusted.text, indices[0], origin, indices if len(indices) > 1 else ()))
    return rows


def out_of_fold_probs(texts: Sequence[str], labels: Sequence[int], embeddings: np.ndarray | None,
                      seed: int = 0, classes: int = NUM_LABELS, unlabelled: Sequence[int] = ()) -> np.ndarray:
    """Each row's probability of each of `classes` labels from models that did not see it: the mean of a
    cross-validated logistic regression over `embeddings` (when given) and one over TF-IDF features. The rows named
    in `unlabelled` (indices: a split's "B or C" rows) are not fitted; models fitted on all the other rows score them.
    Raises ValueError for too few rows."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    held = np.zeros(len(texts), dtype=bool)
    held[list(unlabelled)] = True
    fit = np.flatnonzero(~held)
    y = np.asarray(labels)[fit]
    counts = np.bincount(y, minlength=classes)
    present = counts[counts > 0]
    if len(present) < 2 or present.min() < 2:
        raise ValueError("too few rows to search: every label present needs at least 2 rows, and 2 labels at least")
    folds = StratifiedKFold(n_splits=int(min(FOLDS, present.min())), shuffle=True, random_state=seed)

    def oof(model: Any, features: Any) -> np.ndarray:
        out = np.zeros((len(texts), classes))
        columns = np.flatnonzero(counts)  # columns of labels no fitted row has stay 0
        out[np.ix_(fit, columns)] = cross_val_predict(model, _take(features, fit), y, cv=folds, method="predict_proba")
        if held.any():
            model.fit(_take(features, fit), y)
            out[np.ix_(np.flatnonzero(held), columns)] = model.predict_proba(_take(features, np.flatnonzero(held)))
        return out

    tfidf = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2),
                          LogisticRegression(C=10.0, max_iter=2000))
    parts = [oof(tfidf, list(texts))]
    if embeddings is not None:
        parts.append(oof(make_pipeline(StandardScaler(), LogisticRegression(C=0.5, max_iter=2000)), embeddings))
    return np.mean(parts, axis=0)


def _take(features: Any, rows: np.ndarray) -> Any:
    return features[rows] if isinstance(features, np.ndarray) else [features[i] for i in rows]


def encoder_embedder(checkpoint_or_base: str, max_length: int, batch_size: int = 64) -> Embedder:
    """Mean-pooled embeddings from a saved classifier's encoder (a champion's checkpoint folder), or from a base
    encoder (a Hugging Face id or folder; "" = the packaged all-MiniLM-L6-v2)."""

    def embed(texts: Sequence[str]) -> np.ndarray:
        path = Path(checkpoint_or_base) if checkpoint_or_base else None
        model, tokenizer = (load_checkpoint(path) if path is not None and (path / "classifier.json").is_file()
                            else load_base(checkpoint_or_base))
        return pooled(model.encoder, tokenizer, texts, Reading(max_length), batch_size)

    return embed


def pooled(encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], reading: Reading,
           batch_size: int = 64) -> np.ndarray:
    """The masked mean of the encoder's last hidden states over what it reads of each text (what the classifier's
    head reads), batched in length order."""
    encoder.eval()
    ids = token_ids(tokenizer, texts, reading)
    order = np.argsort([len(x) for x in ids], kind="stable")
    out = np.zeros((len(texts), encoder.config.hidden_size), dtype=np.float32)
    started = time.perf_counter()
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = order[start: start + batch_size]
            input_ids, mask = collate([ids[i] for i in idx], tokenizer.pad_token_id or 0)
            hidden = encoder(input_ids=input_ids, attention_mask=mask).last_hidden_state
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            out[idx] = ((hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)).numpy()
            if start // batch_size % 50 == 49:
                log.info("embedded %d of %d texts (%.0f s)", start + len(idx), len(texts), time.perf_counter() - started)
    return out


def cached_embeddings(cache_dir: Path, model_key: str, texts: Sequence[str], embed: Embedder) -> np.ndarray:
    """`embed(texts)`, kept in `cache_dir` under a digest of the model and the texts."""
    digest = hashlib.sha256(model_key.encode())
    for text in texts:
        digest.update(text_hash(text).encode())
    path = Path(cache_dir) / f"{digest.hexdigest()[:32]}.npy"
    if path.is_file():
        log.info("embeddings from the cache (%s)", path.name)
        return np.load(path)
    vectors = embed(texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, vectors)
    tmp.replace(path)
    return vectors


def rank_candidates(rows: Sequence[Row], probs: np.ndarray, keys: Sequence[str],
                    rank_by: RankBy = RankBy.SELF_CONFIDENCE, limit: int = 0) -> list[Candidate]:
    """The candidates, at most `limit` (0 = all): first every "B or C" row of a split, with the likelier of its
    topics, surest first (a maintainer confirms them in bulk); then the rows confident learning doubts, most likely
    error first. `keys` are the topics `probs`' columns and the rows' labels index."""
    sets = [i for i, r in enumerate(rows) if r.allowed]
    choice = {i: rows[i].allowed[int(np.argmax(probs[i, list(rows[i].allowed)]))] for i in sets}
    found = [Candidate(rows[i].source, text_hash(rows[i].text), rows[i].origin, rows[i].text, rows[i].given(keys),
                       keys[choice[i]], float(probs[i, choice[i]]))
             for i in sorted(sets, key=lambda i: -probs[i, choice[i]])]
    exact = np.array([i for i, r in enumerate(rows) if not r.allowed], dtype=np.int64)
    if len(exact):
        issues = find_label_issues(probs[exact], np.array([rows[i].label for i in exact], dtype=np.int64), rank_by)
        found += [Candidate(r.source, text_hash(r.text), r.origin, r.text, keys[r.label],
                            keys[int(issues.suggested[n])], float(probs[exact[n], issues.suggested[n]]))
                  for n in issues.candidate_rows.tolist() for r in [rows[exact[n]]]]
    return found[:limit] if limit else found


def small_topics(rows: Sequence[Row], topics: int, min_rows: int) -> dict[int, int]:
    """The topics (index -> its labelled rows) with fewer than `min_rows` rows labelled exactly it: a confident-
    learning threshold over so few rows is near zero, so nearly every row would be suggested into the topic."""
    counts = np.bincount([r.label for r in rows if not r.allowed], minlength=topics)
    return {i: int(n) for i, n in enumerate(counts.tolist()) if n < min_rows}


def left_out_words(small: dict[int, int], taxonomy: Taxonomy, min_rows: int) -> str:
    """The topics a search left aside, in words ("" for none): those with rows (a topic nobody labelled yet is
    never suggested anyway)."""
    named = [f"{taxonomy.name_of(taxonomy.keys[i])} ({n} row{'' if n == 1 else 's'})" for i, n in small.items() if n]
    if not named:
        return ""
    return (f"{', '.join(named)}: fewer than {min_rows} labelled rows, so no row is suggested into "
            f"{'it' if len(named) == 1 else 'them'} and {'its' if len(named) == 1 else 'their'} own are not doubted "
            "(NEWSLOOP_LABEL_ERRORS_MIN_TOPIC_ROWS)")


@dataclass(frozen=True)
class SearchReport:
    """What one search did."""

    search_id: str
    rows: int
    base_rows: int
    answer_rows: int
    candidates: int
    stored: int
    model: str
    seconds: float
    data: str = ""  # the base data it read, in words
    left_out: str = ""  # the topics it left aside, in words


def search(
    store: FeedbackStore,
    corpus: Corpus,
    data_source: str,
    policy: TrustPolicy,
    *,
    models_dir: Path,
    cache_dir: Path,
    base_model: str,
    max_length: int,
    limit: int = 1000,
    seed: int = 0,
    use_champion: bool = False,
    embedder: Embedder | None = None,
    clock: Callable[[], float] = time.time,
    min_topic_rows: int = LabelErrorPolicy.field_default("min_topic_rows"),
) -> SearchReport:
    """Search the base rows and trusted answers for label errors and store the candidates (at most `limit`).

    A topic with fewer than `min_topic_rows` rows labelled exactly it (a topic just added, a split's new part) is
    left aside: no row is suggested into it, its own rows are not doubted, and a split's "B or C" rows that may be
    it are not offered; the report and the stored search name it.

    Embeddings come from `base_model`, or with `use_champion` from the champion's checkpoint when it has one;
    `embedder` replaces both (tests). The base encoder is the default: it never saw these labels, while the champion
    trained on them and its embeddings lean towards them (on the AG News rows the base encoder's search found 722
    candidates to the champion's 204, all 39 wrong labels among the champion's top 50 included;
    docs/results/label-errors.md)."""
    started = time.perf_counter()
    fixes = read_fixes(store)
    taxonomy = store.topics.current()
    read = (base_rows(under_taxonomy(corpus, taxonomy), data_source, fixes)
            + answer_rows(store, policy, fixes, taxonomy))
    small = small_topics(read, len(taxonomy.keys), min_topic_rows)
    rows = [r for r in read if not {r.label, *r.allowed} & small.keys()]
    left_out = left_out_words(small, taxonomy, min_topic_rows)
    if embedder is None:
        champion = ModelRegistry(models_dir).champion() if use_champion else None
        checkpoint = champion.path / CHECKPOINT_DIR if champion is not None else None
        if checkpoint is not None and checkpoint.is_dir():
            model_key, source = f"champion {champion.version}", str(checkpoint)  # type: ignore[union-attr]  # set with checkpoint
        else:
            model_key, source = f"base {base_model or 'all-MiniLM-L6-v2'}", base_model
        embedder = encoder_embedder(source, max_length)
    else:
        model_key = "given"
    texts = [r.text for r in rows]
    log.info("label-error search on %s: %d rows, embeddings from %s", corpus.description, len(rows), model_key)
    if left_out:
        log.info("left aside: %s", left_out)
    vectors = cached_embeddings(cache_dir, f"{model_key}\0{max_length}", texts, embedder)
    probs = out_of_fold_probs(texts, [r.label for r in rows], vectors, seed, classes=len(taxonomy.keys),
                              unlabelled=[i for i, r in enumerate(rows) if r.allowed])
    found = rank_candidates(rows, probs, taxonomy.keys)
    # When, to the second, and a few random characters: two searches in one second stay apart.
    search_id = f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime(clock()))}-{secrets.token_hex(2)}"
    stored = store.label_errors.save_search(search_id, found[:limit] if limit else found, rows=len(read),
                                            candidates=len(found), model=model_key, data=corpus.description,
                                            left_out=left_out)
    return SearchReport(search_id, len(read), sum(r.source is Source.BASE for r in read),
                        sum(r.source is Source.ANSWER for r in read), len(found), stored, model_key,
                        round(time.perf_counter() - started, 1), corpus.description, left_out)


def flip_labels(examples: Sequence[Example], share: float, seed: int) -> tuple[list[Example], np.ndarray]:
    """A copy of `examples` with `share` of their labels changed to another label at random (seeded), and the
    indices of the flipped rows: the bench's noise."""
    rng = np.random.default_rng(seed)
    flipped = np.sort(rng.choice(len(examples), size=max(1, round(share * len(examples))), replace=False))
    out = list(examples)
    for i in flipped.tolist():
        other = (examples[i].label + int(rng.integers(1, NUM_LABELS))) % NUM_LABELS
        out[i] = Example(examples[i].text, other, examples[i].title, examples[i].body)
    return out, flipped
