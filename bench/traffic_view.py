"""The admin view's served-traffic section on a staged week (docs/screenshots/admin-traffic.png): the shipped
starter's estimated accuracy per day beside the traffic set's measured accuracy, through the real page.

    NEWSLOOP_DATA=../shared/data/ag_news python -m bench.traffic_view

A week of traffic is replayed from validation rows of train.csv (never trained on): days 1-3 whole articles, days
4-5 half articles and half headlines, days 6-7 headlines only; each day `--per-day` texts are scored by the starter
as served and tallied as a server tallies them (feedback.traffic.served), and `--labelled` of them per day become traffic-set
items answered with their true label, dated that day (the store's answers are backdated: the week is staged). Then
`python app.py` serves the home and Chromium takes the section. It prints each day's estimated and measured accuracy.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import sqlalchemy as sa

from bench import options
from bench.screenshots import CHROMIUM, PASSWORD, SIZES, settle, start_app, to_admin, wait_text
from core.data import InputForm, as_form, is_validation, read_csv
from core.evaluation.estimate import Tally
from core.input_forms import guess_form
from core.labels import LABELS
from core.registry.starter import install_starter
from core.registry.versions import ModelRegistry
from core.serving.classifier import OnnxClassifier
from core.settings.config import PROJECT_ROOT
from core.settings.policies import StoreLimits
from feedback.database.db import iso_time
from feedback.database.tables import answers, pool
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from feedback.traffic.served import TallyKey, save_tallies, utc_day

OUT = PROJECT_ROOT / "docs" / "screenshots" / "admin-traffic.png"
# Share of headlines per day of the staged week (the rest are whole articles).
HEADLINE_SHARE = (0.0, 0.0, 0.0, 0.5, 0.5, 1.0, 1.0)


def stage(home: Path, data: Path, per_day: int, labelled: int, seed: int) -> list[str]:
    """The staged week in `home`; returns one line per day (estimated and measured)."""
    champion = install_starter(ModelRegistry(home / "models"))
    assert champion is not None, "no shipped starter for these labels"
    model = OnnxClassifier(champion.path, threads=0)
    rows = [e for e in read_csv(data / "train.csv") if is_validation(e.text, 0.1) and e.body]
    rng = np.random.default_rng(seed)
    store = FeedbackStore(home / "feedback.db", StoreLimits(writes_per_minute=100_000, verified_writes_per_minute=100_000))
    today = time.time()
    lines = []
    for day_index, share in enumerate(HEADLINE_SHARE):
        at = today - (len(HEADLINE_SHARE) - 1 - day_index) * 86_400
        day = utc_day(at)
        picked = rng.choice(len(rows), per_day, replace=False)
        forms = [InputForm.TITLE if rng.random() < share else InputForm.FULL for _ in picked]
        texts = [as_form(rows[i], form).text for i, form in zip(picked, forms, strict=True)]  # type: ignore[union-attr]
        probs = model.proba_in_label_order(texts)
        tallies: dict[TallyKey, Tally] = {}
        for text, p in zip(texts, probs, strict=True):
            key = TallyKey(day, guess_form(text).value, champion.version)
            tallies[key] = tallies.get(key, Tally()).add(p[None, :])
        save_tallies(store.database, "staged-week", tallies)
        chosen = list(range(labelled))
        store.pool.add([texts[j] for j in chosen], source="staged week")
        with store.database.write() as conn:
            conn.execute(pool.update().where(pool.c.text.in_([texts[j] for j in chosen])).values(traffic=1))
        with store.database.read() as conn:
            items = dict(conn.execute(sa.select(pool.c.text, pool.c.id)).all())
        right = 0
        for j in chosen:
            predicted = LABELS[int(probs[j].argmax())]
            truth = LABELS[rows[picked[j]].label]
            right += predicted == truth
            store.answers.record(AnswerInput(text=texts[j], user_label=truth, predicted_label=predicted, model_version=champion.version,
                         annotator=f"user:labeller{j % 3}", kind="queue", item_id=items[texts[j]], verified=True))
        with store.database.write() as conn:  # backdated: the week is staged in one run
            conn.execute(answers.update().where(answers.c.created_at > iso_time(today - 3600),
                                                answers.c.text.in_([texts[j] for j in chosen]))
                         .values(created_at=iso_time(at)))
        estimated = float(np.mean(probs.max(axis=1)))
        lines.append(f"| {day} | {share:.0%} | {per_day} | {estimated:.4f} | {labelled} | {right / labelled:.4f} |")
    store.close()
    return lines


def shoot(url: str, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        page = browser.new_page(viewport=SIZES["desktop"])
        page.set_default_timeout(60_000)
        page.goto(url, wait_until="domcontentloaded")
        to_admin(page)
        page.fill("#admin-password input", PASSWORD)
        page.press("#admin-password input", "Enter")
        wait_text(page, "#traffic-alert", "alert")
        settle(page)
        section = page.locator("#traffic-alert").bounding_box()
        plot = page.locator("#plot-traffic").bounding_box()
        assert section is not None and plot is not None
        top = max(0.0, section["y"] - 60)
        page.screenshot(path=str(out), full_page=True,
                        clip={"x": 0, "y": top, "width": SIZES["desktop"]["width"],
                              "height": plot["y"] + plot["height"] - top + 16})
        browser.close()


def main() -> int:
    parser = options.parser(__doc__)
    options.add_data(parser, as_path=True)
    parser.add_argument("--per-day", type=int, default=300, help="texts served a day")
    parser.add_argument("--labelled", type=int, default=60, help="of them, traffic-set items answered a day")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="newsloop-traffic-view-") as tmp:
        home = Path(tmp) / "home"
        lines = stage(home, args.data, args.per_day, args.labelled, args.seed)
        print("| day | headlines | served | estimated | labelled | measured |\n|---|---:|---:|---:|---:|---:|")
        print("\n".join(lines))
        os.environ["NEWSLOOP_HOME"] = str(home)
        proc, url = start_app(home, Path(tmp) / "app.log")
        try:
            shoot(url, args.out)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
