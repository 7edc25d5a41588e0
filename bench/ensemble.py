"""What an ensemble of exported models reads on validation: the ceiling of distilling them into one.

    git archive 36427b1 models/starter | tar -x -C ../previous   # the previous starter
    NEWSLOOP_DATA=../shared/data/ag_news python bench/ensemble.py models/starter ../previous/models/starter

Scores each model (its served file, calibrated as served) and the mean of their probabilities on the validation
rows read as a whole article, a headline and a body; prints accuracy and macro AUROC (one class against the rest)
for each. A student trained toward the ensemble's probabilities rarely reads better than the ensemble itself,
so when the mean misses a target, distillation from these models will too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench import options
from core.data import InputForm, in_form, load_corpus
from core.evaluation.metrics import evaluate_probabilities
from core.serving.classifier import OnnxClassifier


def main() -> None:
    parser = options.parser(__doc__)
    options.add_data(parser)
    parser.add_argument("models", type=Path, nargs="+", help="exported model folders")
    options.add_val_fraction(parser)
    args = parser.parse_args()
    corpus = load_corpus(args.data or options.default_data(), args.val_fraction)
    models = [OnnxClassifier(folder) for folder in args.models]
    names = [f"model {i + 1}" for i in range(len(models))] + ["mean"]
    print("| input | rows | " + " | ".join(f"{n} accuracy / AUROC" for n in names) + " |")
    print("|---|---:|" + "---:|" * len(names))
    for form in InputForm:
        rows = in_form(corpus.validation, form)
        labels = np.array([e.label for e in rows])
        probs = [m.proba_in_label_order([e.text for e in rows]) for m in models]
        probs.append(np.mean(probs, axis=0))
        scores = [evaluate_probabilities(labels, p) for p in probs]
        cells = [f"{m['accuracy']:.4f} / {m['macro_auroc']:.4f}" for m in scores]
        print(f"| {form.value} | {len(rows)} | " + " | ".join(cells) + " |")
    for i, folder in enumerate(args.models, 1):
        print(f"model {i}: {folder}")


if __name__ == "__main__":
    main()
