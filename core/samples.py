"""What people see of the data before they label anything: one example per topic on Classify, and the demo
articles an empty labelling pool starts with. Both come from the configured data, so a newsroom with topics of its
own sees its own articles; the project's own AG News texts (`AG_NEWS_EXAMPLES`, `feedback.labelling.demo`'s demo
pool) stand in only when the data is AG News.

Drawn from the training rows only: a demo article someone labels becomes an answer a retrain trains on, and a
validation row trained on would flatter every challenger the gate judges on it. The draw is by text hash, so the
same data always shows the same articles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from core.data import Example, is_ag_news, load_corpus, read_labelled
from core.text import text_hash

# AG News's four, written for the project (not AG News rows), in its topics' order: Classify's examples when the
# data is AG News.
AG_NEWS_EXAMPLES = (
    "Ceasefire talks resume as envoys arrive in the capital. Diplomats from three neighbouring countries "
    "met rebel leaders on Sunday in a new attempt to end months of fighting.",
    "Late goal sends champions through to the semi-finals. A header in stoppage time gave the holders a "
    "2-1 win on aggregate and set up a meeting with their oldest rivals.",
    "Shares slide as the retailer cuts its profit forecast. The company blamed weaker holiday spending "
    "and higher shipping costs, and said it would close forty stores next year.",
    "New chip promises longer battery life for laptops. The processor, built on a smaller manufacturing "
    "process, uses a third less power while running common office software, the maker said.",
)
# An example reads at a glance: a headline and a sentence or two. A demo article may be longer, as articles are.
EXAMPLE_CHARS = (80, 400)
DEMO_CHARS = (80, 3000)
DEMO_COUNT = 40  # as many as the shipped demo pool: something to label for the first minutes


@dataclass(frozen=True)
class Samples:
    """Classify's examples (one per topic, in the topics' order) and the demo articles, with where they come from."""

    examples: tuple[str, ...]
    demo: tuple[str, ...]  # empty: the project's own demo pool (AG News data)
    source: str  # in words: "own.csv", "AG News (the project's own examples)"


def _drawn(rows: Sequence[Example], span: tuple[int, int]) -> list[Example]:
    """`rows` in a fixed pseudo-random order (by text hash), those of a length within `span` first."""
    low, high = span
    return sorted(rows, key=lambda e: (not low <= len(e.text) <= high, text_hash(e.text)))


def pick(train: Sequence[Example], labels: Sequence[str], *, count: int = DEMO_COUNT) -> tuple[tuple[str, ...],
                                                                                             tuple[str, ...]]:
    """(one example per topic that has a row, in the order of `labels`; `count` demo articles taking turns between
    the topics, none of them an example): drawn from `train`, the data's training rows."""
    by_topic = [_drawn([e for e in train if e.label == i], EXAMPLE_CHARS) for i in range(len(labels))]
    examples = tuple(rows[0].text for rows in by_topic if rows)
    shown = set(examples)
    queues = [[e.text for e in _drawn(rows, DEMO_CHARS) if e.text not in shown] for rows in by_topic]
    demo: list[str] = []
    while len(demo) < count and any(queues):
        for queue in queues:
            if queue and len(demo) < count:
                demo.append(queue.pop(0))
    return examples, tuple(demo)


def maintainer_examples(path: Path) -> tuple[str, ...]:
    """The first text of each topic in a maintainer's CSV of examples (label,text or label,title,description), in
    the order the topics first appear. Raises DataSourceError naming the file and line when it cannot be read."""
    [rows], _ = read_labelled([path], counted=False)
    first: dict[int, str] = {}
    for row in rows:
        first.setdefault(row.label, row.text)
    return tuple(first.values())


def data_samples(source: str, val_fraction: float, use_extra: bool, examples_file: str = "") -> Samples:
    """The samples of the configured data: its own (from its training rows), or AG News's when the data is AG News
    (the hub's, the seed set, or files of its four topics); `examples_file` (NEWSLOOP_EXAMPLES), when set, gives
    Classify's examples instead. Never reaches the hub. Raises core.data.DataSourceError as loading the data does."""
    chosen = maintainer_examples(Path(examples_file).expanduser()) if examples_file else ()
    if is_ag_news(source, use_extra):
        return Samples(chosen or AG_NEWS_EXAMPLES, (), "AG News")
    corpus = load_corpus(source, val_fraction, use_extra)  # a file or folder of the data's own topics
    examples, demo = pick(corpus.train, corpus.labels)
    return Samples(chosen or examples, demo, corpus.description)
