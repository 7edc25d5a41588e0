"""Group "None of these" answers into candidate topics: first by the name labellers gave the missing topic, then by
what the texts say (TF-IDF cosine similarity), so a topic many people miss shows up as one group however they
named it, or whether they named it at all. Pure and deterministic: the same rows give the same groups."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# Two texts at least this cosine-similar (TF-IDF of words) are linked; linked texts form one group.
SIMILARITY = 0.25
SUGGESTED_TERMS = 2  # words a suggested name takes from an unnamed group's texts


@dataclass(frozen=True)
class Group:
    """One candidate topic: the name to suggest, its answers (ids, oldest first) and how many people gave them."""

    name: str
    ids: tuple[int, ...]
    people: int
    named: bool  # the name is one a labeller gave (else it is made of the texts' words)


def name_key(name: str | None) -> str:
    """A given name as groups compare it: case-folded, whitespace collapsed ("" when none was given)."""
    return " ".join((name or "").split()).casefold()


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
        sims = (matrix @ matrix.T).toarray()
        pairs = sorted(((float(sims[i, j]), i, j) for i in range(n) for j in range(i + 1, n)
                        if sims[i, j] >= similarity), key=lambda p: (-p[0], p[1], p[2]))
        for _, i, j in pairs:
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
