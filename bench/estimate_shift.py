"""Estimated against true accuracy on a stream whose answers are known: validation rows replayed as traffic that
shifts from whole articles to headlines to descriptions, read by the shipped starter as served (int8, calibrated).

Per step it prints the stream's mix, and per guessed input form (core.input_forms) the estimated accuracy
(core.evaluation.estimate, from the probabilities alone), the true accuracy (from the rows' labels) and their gap;
then how often the form rule names each row's true form. Validation rows are rows of train.csv that fall in the
hash split (core.data.is_validation): the starter never trained on them.

    python bench/estimate_shift.py                 # 6 steps of 800 rows; ~2 minutes on 2 CPU cores
    python bench/estimate_shift.py --rows 400 --data ../shared/data/ag_news
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import options
from core.data import InputForm, as_form, is_validation, read_csv
from core.evaluation.estimate import estimate
from core.input_forms import guess_form
from core.serving.classifier import OnnxClassifier

FORMS = (InputForm.FULL, InputForm.TITLE, InputForm.BODY)
# The shift: (share of whole articles, headlines, descriptions) per step.
STEPS = ((1.0, 0.0, 0.0), (0.5, 0.5, 0.0), (0.0, 1.0, 0.0), (0.0, 0.5, 0.5), (0.0, 0.0, 1.0), (1 / 3, 1 / 3, 1 / 3))


def main() -> None:
    parser = options.parser(__doc__)
    options.add_data(parser, as_path=True)
    options.add_model(parser)
    parser.add_argument("--rows", type=int, default=800, help="rows per step")
    parser.add_argument("--val-fraction", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()

    rows = [e for e in read_csv(args.data / "train.csv") if is_validation(e.text, args.val_fraction) and e.body]
    model = OnnxClassifier(args.model, threads=0)
    print(f"model {args.model} ({model.onnx_file}, temperature {model.temperature:.3f}); {len(rows)} validation rows")
    texts = {form: [as_form(e, form).text for e in rows] for form in FORMS}  # type: ignore[union-attr]
    probs = {form: model.proba_in_label_order(texts[form]) for form in FORMS}
    labels = np.array([e.label for e in rows])
    guessed = {form: [guess_form(t) for t in texts[form]] for form in FORMS}

    rng = np.random.default_rng(args.seed)
    print("\n| step | mix (article/headline/description) | guessed form | n | estimated | true | gap (pt) |")
    print("|---:|---|---|---:|---:|---:|---:|")
    worst = 0.0
    for step, shares in enumerate(STEPS, 1):
        counts = np.round(np.array(shares) * args.rows).astype(int)
        picked = [(form, i) for form, k in zip(FORMS, counts, strict=True) for i in rng.choice(len(rows), k, replace=False)]
        mix = "/".join(f"{s:.0%}" for s in shares)
        groups = [("all", picked)] + [
            (g.value, [(f, i) for f, i in picked if guessed[f][i] is g]) for g in FORMS
        ]
        for name, members in groups:
            if not members:
                continue
            p = np.stack([probs[f][i] for f, i in members])
            y = np.array([labels[i] for _, i in members])
            est, true = estimate(p).accuracy, float(np.mean(p.argmax(axis=1) == y))
            if name != "all" and len(members) >= 100:
                worst = max(worst, abs(est - true))
            print(f"| {step} | {mix} | {name} | {len(members)} | {est:.4f} | {true:.4f} | {(est - true) * 100:+.1f} |")
    print(f"\nlargest gap over guessed forms with >= 100 rows: {worst * 100:.1f} pt")

    print("\nform rule on validation rows: | true form | read as article | as headline | as description |")
    for form in FORMS:
        c = Counter(guessed[form])
        print(f"| {form.value} | {c[InputForm.FULL]} | {c[InputForm.TITLE]} | {c[InputForm.BODY]} |")


if __name__ == "__main__":
    main()
