"""What the queue asks about while a new topic is taught: the topic being taught, and each item's focus for it.

After a maintainer adds a topic or splits one, the uncertainty order knows nothing of it: the champion does not
predict a new topic until a retrain, and a split child's head starts as a copy of its parent's. The topic being
taught is the newest one added or split off that still has fewer than `teach_until` counted answers. An item's
focus says how much an answer on it teaches that topic (higher first, None: nothing):

- split of P into P and C, the model predicts C: the items it reads as P or C, least sure between the two first
  (1 - |p_P - p_C|);
- split, the model does not predict C yet: the items it reads as P, in a fixed random order (a hash of the text).
  Its certainty among its own topics says nothing of C: least sure first would serve items on P's borders with the
  other topics, and C no more often than the pool holds it (docs/results/taxonomy.md, "Focus turns");
- topic A added, the model predicts A: every item, nearest the boundary between A and its likeliest rival first;
- added, the model does not predict it yet: every item, those it reads as none of its topics well first.

Where the maintainer gave words (the topic's name and description), their TF-IDF nearest neighbours
(`feedback.labelling.neighbours`) get focus too: the two rankings are interleaved (the first of each, then the
second of each, ...), because neighbours alone teach a narrow topic and uncertainty alone rarely finds a rare one.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from core.taxonomy import Taxonomy
from core.text import text_hash
from core.topic_maps import successor


@dataclass(frozen=True)
class Teaching:
    """The topic being taught: added or split off (`parent`: the split's parent, now), and the words given for it."""

    kind: Literal["add", "split"]
    key: str
    parent: str
    words: str
    version: int  # the taxonomy version it was read from

    @property
    def marker(self) -> tuple[int, str]:
        """What the stored focus was computed for: it is recomputed when this changes."""
        return self.version, self.key


def teaching(taxonomy: Taxonomy, answered: Mapping[str, int], teach_until: int) -> Teaching | None:
    """The newest topic added or split off that is still a topic and has fewer than `teach_until` counted answers
    (`answered`: key -> counted answers), or None."""
    for version in reversed(taxonomy.versions):
        change = version.change
        if change.kind not in ("add", "split") or change.key not in taxonomy.keys:
            continue
        if answered.get(change.key, 0) >= teach_until:
            continue
        topic = next(t for t in taxonomy.topics if t.key == change.key)
        parent = (successor(taxonomy, change.topic) or "") if change.kind == "split" else ""
        kind: Literal["add", "split"] = "split" if change.kind == "split" and parent else "add"
        return Teaching(kind, change.key, parent, f"{topic.name} {topic.description}".strip(), taxonomy.version)
    return None


def in_current_topics(taxonomy: Taxonomy, probabilities: Mapping[str, float]) -> dict[str, float]:
    """A model's probabilities ({its key: p}) keyed by current topics: a merged-away key's added to the topic it was
    merged into, a key that is no topic now dropped."""
    carried: dict[str, float] = {}
    for key, p in probabilities.items():
        now = successor(taxonomy, key)
        if now is not None:
            carried[now] = carried.get(now, 0.0) + float(p)
    return carried


def model_focus(target: Teaching, probabilities: Mapping[str, float], draw: float = 0.5) -> float | None:
    """One item's focus from the model's probabilities over current topics (see the module's list), or None;
    `draw` (in [0, 1), fixed per item) orders the items the model cannot rank."""
    if not probabilities:
        return None
    top = max(probabilities, key=lambda key: probabilities[key])
    if target.kind == "split":
        if target.key in probabilities:
            if top not in (target.parent, target.key):
                return None
            return 1.0 - abs(probabilities.get(target.parent, 0.0) - probabilities[target.key])
        return draw if top == target.parent else None
    if target.key in probabilities:
        rival = max((p for key, p in probabilities.items() if key != target.key), default=0.0)
        return 1.0 - abs(probabilities[target.key] - rival)
    return 1.0 - probabilities[top]


def interleaved(*rankings: Sequence[float | None]) -> list[float | None]:
    """Per item, 1 / (1 + its best place) over the rankings (each: a score per item, higher first, None: not
    ranked): the first of every ranking score 1, the second 1/2, ... so the rankings take turns at the top."""
    size = len(rankings[0]) if rankings else 0
    best: list[int | None] = [None] * size
    for scores in rankings:
        ranked = sorted((i for i in range(size) if scores[i] is not None), key=lambda i: (-(scores[i] or 0.0), i))
        for place, i in enumerate(ranked):
            if best[i] is None or place < (best[i] or 0):
                best[i] = place
    return [None if place is None else 1.0 / (1 + place) for place in best]


def focus_scores(
    target: Teaching, taxonomy: Taxonomy, probabilities: Sequence[Mapping[str, float] | None],
    similarity: Sequence[float], texts: Sequence[str] = (),
) -> list[float | None]:
    """Each item's focus for `target`: its model focus (from the model's probabilities, {model key: p}; None for
    an item not scored yet; `texts` give the fixed draws, `focus_draw`) interleaved with its similarity to the
    maintainer's words (0: none)."""
    draws = [focus_draw(text) for text in texts] if texts else [0.5] * len(probabilities)
    by_model = [None if probs is None else model_focus(target, in_current_topics(taxonomy, probs), draw)
                for probs, draw in zip(probabilities, draws, strict=True)]
    by_words: list[float | None] = [float(s) if s > 0 else None for s in similarity]
    return interleaved(by_model, by_words)


def focus_draw(text: str) -> float:
    """A number in [0, 1) fixed by the text (salted apart from the other hash draws)."""
    return int(text_hash(f"focus-draw:{text}")[:12], 16) / 16**12


def is_focus_turn(annotator: str, position: int, share: float) -> bool:
    """Whether turn `position` of this annotator serves the topic being taught: a fixed draw (salted apart from
    the traffic turns'), so a reload does not re-roll it and about `share` of turns are focus turns."""
    return share > 0 and int(text_hash(f"focus-turn:{annotator}:{position}")[:12], 16) / 16**12 < share
