"""Inter-annotator agreement: Krippendorff's alpha (nominal) overall and per annotator, over live answers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from feedback.trust.rules import MAINTAINER
from feedback.validate import NOT_COUNTED


@dataclass(frozen=True)
class AnnotatorAgreement:
    """One annotator against the others on the texts they share."""

    annotator: str
    shared: int  # texts this annotator labelled that someone else labelled too
    agree: float | None  # share of pairwise comparisons on those texts where the labels match; None: too few
    alpha_without: float | None  # overall alpha with this annotator left out (higher = they disagree); None: too few


@dataclass(frozen=True)
class Agreement:
    alpha: float | None  # None: fewer than two annotators share a text, or no variation to measure
    texts: int  # texts labelled by at least two annotators
    annotators: list[AnnotatorAgreement]


def _alpha(matrix: np.ndarray) -> float | None:
    import krippendorff  # the maintained implementation; imported here, only the admin view needs it

    usable = matrix[:, (~np.isnan(matrix)).sum(axis=0) >= 2]
    if usable.shape[1] == 0 or len(np.unique(usable[~np.isnan(usable)])) < 2:
        return None
    domain = sorted({int(v) for v in usable[~np.isnan(usable)]})  # nominal: any labels, numbered as they came
    value = krippendorff.alpha(reliability_data=usable, level_of_measurement="nominal", value_domain=domain)
    return None if np.isnan(value) else float(value)


def latest_labels(answers: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """text_hash -> annotator -> a number per label, from each annotator's newest live answer on that text. Labels
    are compared as given: callers pass answers read as they mean now (`feedback.meaning.answers_as_meant`, as
    `Answers.rows` and `Crowd.shared_answers` return them), so a merged topic's old answers agree with
    its target's."""
    labels: dict[str, dict[str, int]] = {}
    numbers: dict[str, int] = {}
    for row in sorted(answers, key=lambda r: r["id"]):
        if row["status"] in NOT_COUNTED or not row["user_label"]:
            continue
        number = numbers.setdefault(str(row["user_label"]), len(numbers))
        labels.setdefault(row["text_hash"], {})[row["annotator"]] = number
    return {text: by for text, by in labels.items() if len(by) >= 2}


def agreement(answers: Iterable[Mapping[str, Any]], max_annotators: int = 50, min_shared: int = 5) -> Agreement:
    """Agreement over texts at least two annotators labelled; per annotator for the `max_annotators` who
    share the most texts (each one costs an alpha computation). An annotator who shares fewer than
    `min_shared` texts gets None rather than a rate: one shared text would read as 100% or 0%.
    The maintainer's reviewed labels (`feedback.trust.rules.MAINTAINER`) are not an annotator's and are left out."""
    shared = latest_labels(row for row in answers if row["annotator"] != MAINTAINER)
    people = sorted({a for by in shared.values() for a in by})
    if not people:
        return Agreement(None, 0, [])
    index = {a: i for i, a in enumerate(people)}
    matrix = np.full((len(people), len(shared)), np.nan)
    for column, by in enumerate(shared.values()):
        for annotator, label in by.items():
            matrix[index[annotator], column] = label
    overall = _alpha(matrix)
    counts = {a: int((~np.isnan(matrix[index[a]])).sum()) for a in people}
    rows = []
    for annotator in sorted(people, key=lambda a: (-counts[a], a))[:max_annotators]:
        mine = matrix[index[annotator]]
        agree, total = 0, 0
        for item in np.flatnonzero(~np.isnan(mine)):
            others = matrix[:, item][~np.isnan(matrix[:, item])]
            total += len(others) - 1
            agree += int((others == mine[item]).sum()) - 1
        if counts[annotator] < min_shared or not total:
            rows.append(AnnotatorAgreement(annotator, counts[annotator], None, None))
            continue
        without = _alpha(np.delete(matrix, index[annotator], axis=0)) if len(people) > 2 else None
        rows.append(AnnotatorAgreement(annotator, counts[annotator], agree / total, without))
    return Agreement(overall, len(shared), rows)


def pairwise_agreement(answers: Iterable[Mapping[str, Any]], min_shared: int = 5) -> dict[str, tuple[int, float | None]]:
    """Per annotator: (texts shared with someone else, share of pairwise comparisons there that match), the
    share None below `min_shared` shared texts. Cheap (no alpha), so it can cover every annotator."""
    pairs: dict[str, list[int]] = {}  # annotator -> [shared texts, matching pairs, pairs]
    for by in latest_labels(row for row in answers if row["annotator"] != MAINTAINER).values():
        for annotator, label in by.items():
            tally = pairs.setdefault(annotator, [0, 0, 0])
            tally[0] += 1
            tally[1] += sum(other == label for who, other in by.items() if who != annotator)
            tally[2] += len(by) - 1
    return {a: (n, agree / total if n >= min_shared and total else None) for a, (n, agree, total) in pairs.items()}
