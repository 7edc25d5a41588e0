"""The served model's reliability per input form: how often it is right at each confidence, before and after its
calibration, on validation rows read as a whole article, a headline and a body; and what its errors are.

    NEWSLOOP_DATA=../shared/data/ag_news python bench/reliability.py [--out docs/results/reliability.png]

Scores the model (default: the shipped starter, its served file) at temperature 1 and as served (a temperature
per form as read, core.evaluation.calibration), draws one reliability diagram per form (15 bins of the top
probability; a calibrated model's points lie on the diagonal) and prints, per form, the ECE before and after,
the confusion matrix, and the most confident errors (the text, its label and the model's), for a person to
judge: the model's mistake, or a label that looks wrong.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display on a server
import matplotlib.pyplot as plt
import numpy as np

from bench import options
from core.data import InputForm, in_form, load_corpus
from core.evaluation.calibration import ECE_BINS, expected_calibration_error, reliability
from core.labels import LABELS
from core.serving.classifier import OnnxClassifier
from core.settings.config import PROJECT_ROOT

FORMS = {InputForm.FULL: "title + description", InputForm.TITLE: "headline only", InputForm.BODY: "body only"}
OUT = PROJECT_ROOT / "docs" / "results" / "reliability.png"


def main() -> None:
    parser = options.parser(__doc__)
    options.add_data(parser)
    options.add_model(parser)
    parser.add_argument("--out", type=Path, default=OUT, help=f"the PNG (default {OUT.relative_to(PROJECT_ROOT)})")
    parser.add_argument("--errors", type=int, default=20, help="most confident errors printed per form")
    options.add_val_fraction(parser)
    args = parser.parse_args()
    validation = load_corpus(args.data or options.default_data(), args.val_fraction, True).validation
    served = OnnxClassifier(args.model)
    raw = OnnxClassifier(args.model)
    raw.temperature = 1.0
    print(f"model {args.model} ({served.onnx_file}); {len(validation)} validation rows; temperatures "
          f"{served.temperatures.pooled:.3f} pooled, " + ", ".join(
              f"{form} {t:.3f}" for form, t in sorted(served.temperatures.by_form.items())))
    figure, axes = plt.subplots(1, len(FORMS), figsize=(4.2 * len(FORMS), 4.2), sharey=True)
    print("\n| input | rows | accuracy | ECE before | ECE after |\n|---|---:|---:|---:|---:|")
    details = []
    for axis, (form, name) in zip(axes, FORMS.items(), strict=True):
        examples = validation if form == InputForm.FULL else in_form(validation, form)
        texts, labels = [e.text for e in examples], np.array([e.label for e in examples])
        before, after = raw.proba_in_label_order(texts), served.proba_in_label_order(texts)
        print(f"| {name} | {len(labels)} | {(after.argmax(1) == labels).mean():.4f} | "
              f"{expected_calibration_error(before, labels):.4f} | {expected_calibration_error(after, labels):.4f} |")
        for probs, style, title in ((before, "o--", "temperature 1"), (after, "s-", "as served")):
            points = reliability(probs, labels)
            axis.plot([p["confidence"] for p in points], [p["accuracy"] for p in points], style, label=title)
        axis.plot([0.25, 1.0], [0.25, 1.0], ":", color="grey")
        axis.set(title=name, xlabel=f"confidence ({ECE_BINS} bins)", xlim=(0.25, 1.0), ylim=(0.25, 1.0))
        details.append((name, examples, labels, after))
    axes[0].set_ylabel("accuracy")
    axes[0].legend(loc="upper left")
    figure.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.out, dpi=80)
    print(f"\nwrote {args.out}")
    for name, examples, labels, probs in details:
        predicted = probs.argmax(1)
        print(f"\n{name}: confusion (rows: label, columns: predicted {', '.join(LABELS)})")
        confusion = np.zeros((len(LABELS), len(LABELS)), dtype=int)
        np.add.at(confusion, (labels, predicted), 1)
        for label, row in zip(LABELS, confusion, strict=True):
            print(f"| {label} | " + " | ".join(str(v) for v in row) + " |")
        wrong = np.flatnonzero(predicted != labels)
        worst = wrong[np.argsort(-probs[wrong].max(1))][: args.errors]
        print(f"\n{name}: the {len(worst)} most confident errors (confidence, label -> predicted, text)")
        for i in worst:
            print(f"- {probs[i].max():.2f} {LABELS[labels[i]]} -> {LABELS[predicted[i]]}: {examples[i].text[:160]}")


if __name__ == "__main__":
    main()
