"""Estimated against true accuracy on a stream whose answers are known: validation rows replayed as traffic that
shifts from whole articles to headlines to descriptions, read by the shipped starter as served (int8, calibrated).

Per step it prints the stream's mix, and per guessed input form (core.input_forms) the estimated accuracy
(core.evaluation.estimate, from the probabilities alone), the true accuracy (from the rows' labels) and their gap,
for all the step's texts, per true form of the stream ("true title": the replayed headlines), and per form as
serving reads a text ("read title": what the admin view and /metrics group by);
then how often the form rule names each row's true form. Validation rows are rows of train.csv that fall in the
hash split (core.data.is_validation): the starter never trained on them.

    python -m bench.estimate_shift                 # 6 steps, every validation row once per step; ~2 minutes
    python -m bench.estimate_shift --rows 800 --data ../shared/data/ag_news

Each step shows every validation row once (`--rows 0`, the default), in the form the step's mix draws for it, so
each form as read has hundreds of texts: the gap then measures the estimate, not the noise of a small sample.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from bench import options
from core.data import InputForm, as_form, is_validation, read_csv
from core.evaluation.calibration import cross_validated, log_probs
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
    parser.add_argument("--rows", type=int, default=0, help="rows per step (0: every validation row once)")
    options.add_val_fraction(parser)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()

    rows = [e for e in read_csv(args.data / "train.csv") if is_validation(e.text, args.val_fraction) and e.body]
    model = OnnxClassifier(args.model, threads=0)
    calibration = model.temperatures
    print(f"model {args.model} ({model.onnx_file}, temperature {model.temperature:.3f}); {len(rows)} validation rows")
    texts = {form: [as_form(e, form).text for e in rows] for form in FORMS}  # type: ignore[union-attr]
    model.temperature = 1.0  # the raw softmax: calibrated below, as served and cross-validated
    raw = {form: log_probs(model.proba_in_label_order(texts[form])) for form in FORMS}
    labels = np.array([e.label for e in rows])
    guessed = {form: [guess_form(t) for t in texts[form]] for form in FORMS}
    read_as = [g.value for form in FORMS for g in guessed[form]]
    # As served: the model's calibration, fitted on these very rows. Cross-validated: each row calibrated by a
    # calibration fitted on the other four fifths of the rows (a row's three forms share a fold): the estimate
    # on texts its calibration never saw, as live traffic is.
    stacked = np.concatenate([raw[form] for form in FORMS])
    served = calibration.apply(stacked, read_as)
    unseen = cross_validated(stacked, np.tile(labels, len(FORMS)), read_as, np.tile(np.arange(len(rows)), len(FORMS)))
    probs = {form: served[k * len(rows):(k + 1) * len(rows)] for k, form in enumerate(FORMS)}
    probs_cv = {form: unseen[k * len(rows):(k + 1) * len(rows)] for k, form in enumerate(FORMS)}

    rng = np.random.default_rng(args.seed)
    print("\n| step | mix (article/headline/description) | texts | n | estimated | true | gap (pt) "
          "| gap, calibration cross-validated (pt) |")
    print("|---:|---|---|---:|---:|---:|---:|---:|")
    worst, worst_cv, worst_true = 0.0, 0.0, 0.0
    for step, shares in enumerate(STEPS, 1):
        size = args.rows or len(rows)
        order = rng.choice(len(rows), size, replace=False)
        drawn = rng.choice(len(FORMS), size, p=np.array(shares) / sum(shares))  # each row's form in this step
        picked = [(FORMS[f], int(i)) for f, i in zip(drawn, order, strict=True)]
        mix = "/".join(f"{s:.0%}" for s in shares)
        groups = [("all", picked)] + [
            (f"true {t.value}", [(f, i) for f, i in picked if f is t]) for t in FORMS
        ] + [(f"read {g.value}", [(f, i) for f, i in picked if guessed[f][i] is g]) for g in FORMS]
        for name, members in groups:
            if not members:
                continue
            p = np.stack([probs[f][i] for f, i in members])
            y = np.array([labels[i] for _, i in members])
            est, true = estimate(p).accuracy, float(np.mean(p.argmax(axis=1) == y))
            est_cv = estimate(np.stack([probs_cv[f][i] for f, i in members])).accuracy
            if name.startswith("true"):
                worst_true = max(worst_true, abs(est - true))
            if name.startswith("read") and len(members) >= 100:
                worst, worst_cv = max(worst, abs(est - true)), max(worst_cv, abs(est_cv - true))
            print(f"| {step} | {mix} | {name} | {len(members)} | {est:.4f} | {true:.4f} | {(est - true) * 100:+.1f} "
                  f"| {(est_cv - true) * 100:+.1f} |")
    print(f"\nlargest gap over the stream's true forms: {worst_true * 100:.1f} pt; over forms as read with >= 100 rows: "
          f"{worst * 100:.1f} pt as served, {worst_cv * 100:.1f} pt with the calibration cross-validated")
    print("(gap: estimated - true; its noise on n texts is about 1.96 * sqrt(p(1-p)/n), 2.9 pt at n=500, p=0.9)")

    print("\nform rule on validation rows: | true form | read as article | as headline | as description |")
    for form in FORMS:
        c = Counter(guessed[form])
        print(f"| {form.value} | {c[InputForm.FULL]} | {c[InputForm.TITLE]} | {c[InputForm.BODY]} |")


if __name__ == "__main__":
    main()
