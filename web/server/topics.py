"""The topics the pages and the API offer, and the names they show: the feedback store's taxonomy, read on each use
(a topic a maintainer adds is offered on the next page load, with no restart), over the served model's own labels.

The served model predicts its own topics (keys); people see the taxonomy's current names for them. A topic of the
taxonomy the model does not predict is offered too, marked "new: the model is still learning it".
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.labels import LABELS, descriptions
from core.taxonomy import LEARNING, Taxonomy, TaxonomyError, starting
from feedback.home_topics import ADOPT, foreign

if TYPE_CHECKING:
    from feedback.store import FeedbackStore
    from web.server.serving import Classifier

MAX_KEYS = 9  # the queue's number keys, 1-9, in the taxonomy's order; later topics are clicked


@dataclass(frozen=True)
class Offered:
    """One topic as the page offers it."""

    key: str
    name: str
    description: str
    learning: bool  # the served model does not predict it yet


class PageTopics:
    """The taxonomy as the page, the API and the admin view read it: `store` (a FeedbackStore; None: no database,
    version 1 of the model's labels) over the labels of `classifier`'s served model."""

    def __init__(self, classifier: Classifier | None, store: FeedbackStore | None) -> None:
        self.classifier = classifier  # None: the admin view's own, which reads the stored taxonomy alone
        self.store = store

    def model_labels(self) -> tuple[str, ...]:
        """The served model's own topics (keys), in its output order; the AG News four before any model is served
        (a fresh clone's default, and what a test's stand-in classifier predicts)."""
        if self.classifier is None:
            return LABELS
        try:
            labels = self.classifier.model.labels  # a service loads its champion, or raises: none yet
        except RuntimeError as exc:
            # NoChampionError is a RuntimeError; core.serving.classifier loads ONNX Runtime, so it is imported only
            # once a model was asked (a service has loaded it by then), as in web.server.metrics.
            from core.serving.classifier import NoChampionError

            if not isinstance(exc, NoChampionError):
                raise
            return LABELS
        return tuple(labels) if labels else LABELS

    def taxonomy(self) -> Taxonomy:
        labels = self.model_labels()
        return self.store.topics.current(labels) if self.store is not None else starting(labels)

    def mismatch(self, taxonomy: Taxonomy | None = None) -> str | None:
        """Why no answer can be taken: the served model predicts topics this site's topic list never had (a champion
        of other data, swapped in while the app serves; `newsloop serve` refuses to start so), in one sentence with
        the fix; None when they fit (`feedback.home_topics`)."""
        taxonomy = taxonomy or self.taxonomy()
        labels = self.model_labels()
        if not foreign(taxonomy, labels):
            return None
        return (f"The model served now answers {', '.join(labels)}, but this site's topics are "
                f"{', '.join(taxonomy.names)}: answers are not taken until a maintainer runs `{ADOPT}` (or serves "
                "a model of these topics).")

    def offered(self, taxonomy: Taxonomy | None = None) -> tuple[Offered, ...]:
        """The current topics in the taxonomy's order, each marked if the served model does not predict it."""
        taxonomy = taxonomy or self.taxonomy()
        learning = set(taxonomy.learning(self.model_labels()))
        described = descriptions(taxonomy)
        return tuple(Offered(t.key, t.name, described[t.key], t.key in learning) for t in taxonomy.topics)

    def named(self, probabilities: dict[str, float], taxonomy: Taxonomy | None = None) -> dict[str, float]:
        """A prediction's probabilities (by the model's keys) by the topics' current names."""
        taxonomy = taxonomy or self.taxonomy()
        return {taxonomy.name_of(key): p for key, p in probabilities.items()}


def key_for(label: object, taxonomy: Taxonomy) -> str | None:
    """The current key an answer's label names (a current name or key, any case; a former name), or None: a number
    never picks a topic here (a button or a caller names it), and neither does anything longer than a name can be."""
    if not isinstance(label, str) or not label.strip() or len(label) > 100:
        return None
    if label.strip().lstrip("+-").isdecimal():
        return None
    try:
        return taxonomy.key_of(label)
    except TaxonomyError:
        return None


def one_of(taxonomy: Taxonomy) -> str:
    """The refusal's list of what an answer may name."""
    return f"the topic must be one of {', '.join(taxonomy.names)}."


def answer_buttons(offered: tuple[Offered, ...], *, prefix: str, text: str, numbered: bool = False,
                   disabled: bool = False) -> str:
    """HTML buttons, one per offered topic (escaped: names are data), in order: `id="{prefix}{i}"`, the key in
    `data-topic` and the name in `data-name`, which the page's scripts read (no topic is written in them);
    `text` is each one's words ("{name}": the topic's), `numbered` puts its key (1-9) first."""
    parts = []
    off = " disabled" if disabled else ""
    for i, topic in enumerate(offered):
        shown = text.format(name=topic.name)
        if numbered and i < MAX_KEYS:
            shown = f"{i + 1} · {shown}"
        new = f' <small class="learning">({LEARNING})</small>' if topic.learning else ""
        hint = f' title="{html.escape(topic.description)}"' if topic.description else ""
        parts.append(f'<button type="button" id="{prefix}{i}" class="topic-btn secondary"{off} '
                     f'data-topic="{html.escape(topic.key)}" data-name="{html.escape(topic.name)}"{hint}>'
                     f'<span class="mark"></span><span class="t">{html.escape(shown)}</span>{new}</button>')
    return "".join(parts)
