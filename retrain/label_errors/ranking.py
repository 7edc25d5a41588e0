"""The candidates of a label-error search, ranked: a split's "B or C" rows first, then the rows confident learning
(`core.evaluation.confident_learning`) doubts; and the topics too small to judge, left aside."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.evaluation.confident_learning import RankBy, find_label_issues
from core.taxonomy import Taxonomy
from core.text import text_hash
from feedback.trust.label_errors import Candidate
from retrain.label_errors.rows import Row


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
