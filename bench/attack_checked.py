"""Issue 22's attacker on `checked` trust, with the shipped starter model and AG News texts, against a real store.

Four identities on four addresses answer queue items (known-answer checks among them) with the model's own
label, then one-click the least likely label on texts the model is unsure of, two addresses per text. Three
honest annotators on their own addresses label queue items (one mistake in twenty). Prints, per trust mode
and labels required, how many texts are trusted, how many of them with a wrong label, how many the attacker
voted for, and how many the honest annotators trained; and how many of the attacker's pasted texts a fresh
labeller's queue would serve (`web.page.actions` puts corrected texts in the pool).

    python -m bench.attack_checked --data /path/to/ag_news [--telling-share 0.25]

Runs on any version of the store (it asks whether the pool can hold items back), so the figures before and
after a change come from the same script.
"""

from __future__ import annotations

import csv
import inspect
import itertools
import json
import random
import tempfile
from pathlib import Path

import numpy as np

from bench import options
from core.labels import LABELS
from core.serving.classifier import OnnxClassifier
from core.settings.policies import QueuePolicy, TrustPolicy
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from feedback.training.snapshot import read_trusted


def ag_news(folder: Path) -> list[tuple[str, str]]:
    """(text, label) rows, each text as the pool stores it (versions that clean pool texts, clean them)."""
    try:
        from feedback.labelling.pool_files import cleaned
    except ImportError:
        cleaned = str.strip
    with (folder / "train.csv").open(encoding="utf-8", newline="") as handle:
        return [(cleaned(f"{row['title']}. {row['description']}"), LABELS[int(row["label"]) - 1])
                for row in csv.DictReader(handle)]


def main(argv: list[str] | None = None) -> None:
    parser = options.parser(__doc__)
    options.add_data(parser, required=True, as_path=True)
    options.add_model(parser)
    parser.add_argument("--telling-share", type=float, default=None,
                        help="share of checks the model gets wrong (default: checks drawn at random)")
    parser.add_argument("--seed", type=int, default=22)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    rows = ag_news(args.data)
    rng.shuffle(rows)
    rows = rows[:3000]
    model = OnnxClassifier(args.model)
    probs = model.proba_in_label_order([text for text, _ in rows])
    said = {text: LABELS[int(np.argmax(p))] for (text, _), p in zip(rows, probs, strict=True)}
    proba = {text: dict(zip(LABELS, map(float, p), strict=True)) for (text, _), p in zip(rows, probs, strict=True)}
    truth = dict(rows)

    if args.telling_share is None:
        checks = rows[:40]
    else:
        telling = [r for r in rows if said[r[0]] != r[1]][: round(40 * args.telling_share)]
        checks = telling + [r for r in rows if said[r[0]] == r[1]][: 40 - len(telling)]
    rest = [r for r in rows if r not in checks]
    pool, others = rest[:400], rest[400:]
    unsure = sorted(others, key=lambda r: max(proba[r[0]].values()))[:60]  # the model's least sure texts

    clock = itertools.count(start=1_700_000_000, step=2.5)
    tmp = Path(tempfile.mkdtemp(prefix="attack-checked-"))
    store = FeedbackStore(tmp / "feedback.db", clock=lambda: float(next(clock)), durable=False)
    store.pool.add([t for t, _ in checks], source="checks", labels=[label for _, label in checks])
    store.pool.add([t for t, _ in pool], source="pool")
    can_hold = "held" in inspect.signature(store.pool.add).parameters
    queue = QueuePolicy(labels_required=2)  # items stay until two addresses agree, as on a Space

    def work(who: str, address: str, answers: int, choose) -> None:  # type: ignore[no-untyped-def]
        for _ in range(answers):
            item = store.pool.next_item(who, queue)
            if item is None:
                return
            store.answers.record(AnswerInput(text=item["text"], user_label=choose(item["text"]), annotator=who, kind="queue",
                         item_id=item["id"], probabilities=proba[item["text"]], address=address))

    sybils = [(f"anon:sybil-{i}", f"addr:sybil-{i}") for i in range(4)]
    for who, address in sybils:
        work(who, address, 30, said.__getitem__)
    for t, (text, _) in enumerate(unsure):
        least = min(proba[text], key=proba[text].__getitem__)
        for who, address in (sybils[t % 4], sybils[(t + 1) % 4]):
            result = store.answers.record(AnswerInput(text=text, user_label=least, annotator=who, kind="correct",
                                  probabilities=proba[text], address=address))
            if not result.duplicate:  # what web.page.actions does with a correction
                held = {"held": (who, "correction by a visitor not signed in")} if can_hold else {}
                store.pool.add([text], source="correction", **held)
    for h in range(3):
        work(f"anon:honest-{h}", f"addr:honest-{h}",
             80, lambda text: rng.choice(LABELS) if rng.random() < 0.05 else truth[text])

    attackers = {who for who, _ in sybils}
    fresh_served = 0
    while (item := store.pool.next_item("anon:fresh", QueuePolicy(labels_required=10, check_share=0.0))) is not None:
        fresh_served += item["text"] in dict(unsure)
        store.pool.skip("anon:fresh", item["id"])
    print(json.dumps({"checks": len(checks), "telling_checks": sum(said[t] != label for t, label in checks),
                      "attacker_texts_a_fresh_labeller_is_served": fresh_served, "pasted": len(unsure)}))
    for train_on, required in itertools.product(("anyone", "checked"), (1, 2)):
        trusted = read_trusted(store, TrustPolicy(train_on=train_on, labels_required=required))
        print(json.dumps({
            "train_on": train_on, "labels_required": required, "trusted": len(trusted),
            "wrong": sum(e.label != truth[e.text] for e in trusted),
            "attacker_voted": sum(bool(set(e.annotators) & attackers) for e in trusted),
            "honest_trained": sum(any(a.startswith("anon:honest") for a in e.annotators) for e in trusted),
        }))


if __name__ == "__main__":
    main()
