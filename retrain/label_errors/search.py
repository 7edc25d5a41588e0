"""The label-error search (`newsloop label-errors`): every base row and trusted answer (`rows`), scored out of fold
over cached encoder embeddings (`folds`), the candidates ranked (`ranking`) and stored for review
(`feedback.trust.label_errors`)."""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from core.data import Corpus, under_taxonomy
from core.registry.versions import ModelRegistry
from core.settings.policies import LabelErrorPolicy, TrustPolicy
from core.storage.paths import CHECKPOINT_DIR
from feedback.store import FeedbackStore
from feedback.training.fixes import read_fixes
from feedback.trust.label_errors import Source
from retrain.classifier.embeddings import Embedder, cached_embeddings, encoder_embedder
from retrain.label_errors.folds import out_of_fold_probs
from retrain.label_errors.ranking import left_out_words, rank_candidates, small_topics
from retrain.label_errors.rows import answer_rows, base_rows

log = logging.getLogger(__name__)


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
    min_topic_rows: int = LabelErrorPolicy.field_default("min_topic_rows"),
) -> SearchReport:
    """Search the base rows and trusted answers for label errors and store the candidates (at most `limit`).

    A topic with fewer than `min_topic_rows` rows labelled exactly it (a topic just added, a split's new part) is
    left aside: no row is suggested into it, its own rows are not doubted, and a split's "B or C" rows that may be
    it are not offered; the report and the stored search name it.

    Embeddings come from `base_model`, or with `use_champion` from the champion's checkpoint when it has one;
    `embedder` replaces both (tests). The base encoder is the default: it never saw these labels, while the champion
    trained on them and its embeddings lean towards them; on the AG News rows it found more wrong labels
    (docs/results/label-errors.md)."""
    started = time.perf_counter()
    fixes = read_fixes(store)
    taxonomy = store.topics.current()
    read = (base_rows(under_taxonomy(corpus, taxonomy), data_source, fixes)
            + answer_rows(store, policy, fixes, taxonomy))
    small = small_topics(read, len(taxonomy.keys), min_topic_rows)
    rows = [r for r in read if not {r.label, *r.allowed} & small.keys()]
    left_out = left_out_words(small, taxonomy, min_topic_rows)
    if embedder is None:
        model_key, embedder = _encoder(models_dir, base_model, max_length, use_champion)
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
    search_id = f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime(time.time()))}-{secrets.token_hex(2)}"
    stored = store.label_errors.save_search(search_id, found[:limit] if limit else found, rows=len(read),
                                            candidates=len(found), model=model_key, data=corpus.description,
                                            left_out=left_out)
    return SearchReport(search_id, len(read), sum(r.source is Source.BASE for r in read),
                        sum(r.source is Source.ANSWER for r in read), len(found), stored, model_key,
                        round(time.perf_counter() - started, 1), corpus.description, left_out)


def _encoder(models_dir: Path, base_model: str, max_length: int, use_champion: bool) -> tuple[str, Embedder]:
    """Whose embeddings a search reads, in words (the cache's key), and the embedder: the champion's checkpoint when
    asked for and it has one, else the base encoder."""
    champion = ModelRegistry(models_dir).champion() if use_champion else None
    if champion is not None and (champion.path / CHECKPOINT_DIR).is_dir():
        return f"champion {champion.version}", encoder_embedder(str(champion.path / CHECKPOINT_DIR), max_length)
    return f"base {base_model or 'all-MiniLM-L6-v2'}", encoder_embedder(base_model, max_length)
