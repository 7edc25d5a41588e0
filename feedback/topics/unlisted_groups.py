"""Group "None of these" answers into candidate topics: first by the name labellers gave the missing topic, then by
what the texts say (TF-IDF cosine similarity), so a topic many people miss shows up as one group however they
named it, or whether they named it at all. Pure and deterministic: the same rows give the same groups.

The work grows about linearly with the rows: similarities are computed a block of rows at a time (never an n x n
matrix) and each text is linked to at most NEIGHBOURS others, its most similar, so the pairs to sort are at most
NEIGHBOURS x n. The store groups a bounded, fair sample of what waits (`feedback.topics.unlisted.SAMPLE`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.taxonomy import name_skeleton

# Two texts at least this cosine-similar (TF-IDF of words) are linked; linked texts form one group.
SIMILARITY = 0.25
SUGGESTED_TERMS = 2  # words a suggested name takes from an unnamed group's texts
# Each text is linked to at most this many others (its most similar): enough to join it to its group, and it bounds
# the pairs sorted to NEIGHBOURS x n however alike the texts are (a flood of near-copies would give n^2 / 2).
NEIGHBOURS = 8
BLOCK_ROWS = 256  # rows whose similarities are computed together: a BLOCK_ROWS x n array at a time


@dataclass(frozen=True)
class Group:
    """One candidate topic: the name to suggest, its answers (ids, oldest first) and how many people gave them."""

    name: str
    ids: tuple[int, ...]
    people: int
    named: bool  # the name is one a labeller gave (else it is made of the texts' words)


def name_key(name: str | None) -> str:
    """A given name as groups compare it: as it reads (`core.taxonomy.name_skeleton`: case, spacing, accents and
    look-alike letters aside), "" when none was given."""
    return name_skeleton(name or "")


def group_unlisted(rows: Sequence[dict[str, Any]], similarity: float = SIMILARITY) -> list[Group]:
    """Group answers (dicts with id, text, annotator, name): answers giving the same name (`name_key`) form one
    group; texts at least `similarity` alike (TF-IDF cosine, linked transitively) join the same group, so an
    unnamed answer joins the named group of a similar text, and unnamed similar ones form a group of their own.
    Two groups with different given names never merge. Largest groups first (most people, then most answers)."""
    rows = sorted(rows, key=lambda r: int(r["id"]))
    if not rows:
        return []
    n = len(rows)
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    names = [name_key(r.get("name")) for r in rows]
    group_name: dict[int, str] = {}  # root -> the given name its group carries ("" none yet)
    for i, key in enumerate(names):
        group_name[i] = key
    first_with: dict[str, int] = {}
    for i, key in enumerate(names):
        if key:
            if key in first_with:
                parent[root(i)] = root(first_with[key])
            else:
                first_with[key] = i
    # Link similar texts, most similar pairs first, never joining two groups with different given names.
    matrix, terms = _tfidf([str(r["text"]) for r in rows])
    if matrix is not None:
        for _, i, j in _similar_pairs(matrix, similarity):
            a, b = root(i), root(j)
            if a == b:
                continue
            na, nb = group_name[a], group_name[b]
            if na and nb and na != nb:
                continue
            low, high = min(a, b), max(a, b)
            parent[high] = low
            group_name[low] = na or nb
    members: dict[int, list[int]] = {}
    for i in range(n):
        members.setdefault(root(i), []).append(i)
    groups = [_group(rows, idx, matrix, terms) for idx in members.values()]
    return sorted(groups, key=lambda g: (-g.people, -len(g.ids), g.ids[0]))


def _similar_pairs(matrix: Any, similarity: float) -> list[tuple[float, int, int]]:
    """(-similarity, i, j) with i < j for each text i and the at most NEIGHBOURS texts j most similar to it (at least
    `similarity`), most similar first; computed BLOCK_ROWS rows at a time."""
    n = matrix.shape[0]
    keep = min(NEIGHBOURS, n - 1)
    best: dict[tuple[int, int], float] = {}
    for start in range(0, n, BLOCK_ROWS) if keep > 0 else ():
        sims = np.asarray((matrix[start:start + BLOCK_ROWS] @ matrix.T).todense())
        rows = np.arange(sims.shape[0])
        sims[rows, rows + start] = -1.0  # a text is not its own neighbour
        near = np.argpartition(-sims, keep - 1, axis=1)[:, :keep]
        for r, j in zip(np.repeat(rows, keep), near.ravel(), strict=True):
            value = float(sims[r, j])
            if value >= similarity:
                pair = (min(start + int(r), int(j)), max(start + int(r), int(j)))
                best[pair] = max(best.get(pair, value), value)  # the same pair seen from both ends
    return sorted((-round(value, 9), i, j) for (i, j), value in best.items())


def _tfidf(texts: list[str]) -> tuple[Any, list[str]]:
    """Row-normalised TF-IDF of the texts' words (English stop words left out) and its terms; (None, []) when no
    word is left."""
    from sklearn.feature_extraction.text import TfidfVectorizer  # here: scikit-learn takes ~1 s to import

    vectorizer = TfidfVectorizer(stop_words="english", sublinear_tf=True)
    try:
        matrix = vectorizer.fit_transform(texts)
    except ValueError:  # only stop words, or nothing at all
        return None, []
    return matrix, [str(t) for t in vectorizer.get_feature_names_out()]


def _group(rows: Sequence[dict[str, Any]], members: list[int], matrix: Any, terms: list[str]) -> Group:
    given = Counter(" ".join(str(rows[i]["name"]).split()) for i in members if name_key(rows[i].get("name")))
    ids = tuple(int(rows[i]["id"]) for i in members)
    people = len({rows[i]["annotator"] for i in members})
    if given:  # the commonest spelling of the commonest name; ties go to the first given
        name = max(given.items(), key=lambda kv: kv[1])[0]
        return Group(name=name, ids=ids, people=people, named=True)
    return Group(name=_top_terms(members, matrix, terms), ids=ids, people=people, named=False)


def _top_terms(members: list[int], matrix: Any, terms: list[str]) -> str:
    """The group's heaviest words (summed TF-IDF), ties broken by the words' order: a name to start from."""
    if matrix is None:
        return "(no words)"
    weights = np.asarray(matrix[members].sum(axis=0)).ravel()
    top = [terms[i] for i in np.argsort(-weights, kind="stable")[:SUGGESTED_TERMS] if weights[i] > 0]
    return " ".join(top) or "(no words)"
