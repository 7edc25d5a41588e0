"""Key presses in the Label queue at a labeller's pace, through the real page: stored as intended, or not.

    NEWSLOOP_DATA=../shared/data/ag_news python -m bench.keypress

An empty home gets the shipped starter (as `python app.py` installs it) and a pool of held-out articles (the
seed set when NEWSLOOP_DATA is unavailable); `python app.py` serves it and Debian's Chromium (driven by Playwright,
which never downloads a browser here) presses 1-4 at each pace (1.0, 0.4 and 0.2 s apart by default; a fresh tab
for each). Per pace, a markdown table: presses stored with their label on the article that was on screen when
pressed, presses missing from the database, acknowledgements naming another article than the one just answered,
and the press-to-next-article latency (the key event's time to the first frame showing the next article).
The app's rate limits are raised for the run (--default-limits keeps the shipped ones, to see them refuse).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench import options
from bench.screenshots import CHROMIUM, start_app
from core.data import load_corpus_or_seed
from core.labels import LABELS
from core.registry.starter import install_starter
from core.registry.versions import ModelRegistry
from core.settings.config import load_settings
from core.settings.policies import StoreLimits

# What each press saw: the article on screen as the key went down (capture on window, before the page's own
# listener) and after the page handled it (bubble on window); the latency runs to the next animation frame.
WATCH = """() => {
  window.presses = [];
  const shown = () => { const a = document.querySelector('#queue-article article');
    return a ? {shown: a.dataset.shown || '', text: a.innerText.trim()} : {shown: '', text: ''}; };
  window.addEventListener('keydown', (e) => { window.presses.push({key: e.key, at: e.timeStamp, before: shown()}); },
    true);
  window.addEventListener('keydown', () => {
    const press = window.presses[window.presses.length - 1];
    press.after = shown();
    press.ack = (document.querySelector('#queue-ack .q-msg') || {}).innerText || '';
    press.sign = (document.querySelector('#queue-ack .q-sign') || {}).innerText || '';
    requestAnimationFrame((frame) => { press.frame = frame; });
  });
}"""
RAISED = {"NEWSLOOP_QUEUE_PER_MINUTE": "10000", "NEWSLOOP_FEEDBACK_PER_MINUTE": "10000",
          "NEWSLOOP_VERIFIED_FEEDBACK_PER_MINUTE": "10000", "NEWSLOOP_ADDRESS_FEEDBACK_PER_MINUTE": "10000"}


def stage(home: Path, items: int) -> None:
    """The starter and a pool of `items` held-out articles (distinct texts) in `home`."""
    from feedback.store import FeedbackStore

    if install_starter(ModelRegistry(home / "models")) is None:
        raise SystemExit("no starter in models/starter fits the configured labels")
    source = load_settings().data
    corpus = load_corpus_or_seed(source.source, source.val_fraction, source.use_extra)
    texts = list(dict.fromkeys(e.text for e in corpus.validation if 60 <= len(e.text) <= 600))[:items]
    if len(texts) < items:
        raise SystemExit(f"only {len(texts)} held-out articles for {items} pool items")
    store = FeedbackStore(home / "feedback.db", StoreLimits(writes_per_minute=10_000, address_writes_per_minute=10_000))
    try:
        store.pool.add(texts, source="held-out articles")
    finally:
        store.close()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered) + 0.5) - 1))]


def run_pace(browser, url: str, pace_s: float, presses: int) -> list[dict]:  # type: ignore[no-untyped-def]
    """Open a fresh tab on the queue and press 1-4 every `pace_s` seconds; returns what each press saw."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(60_000)
    try:
        page.goto(url, wait_until="domcontentloaded")
        page.get_by_role("tab", name="Label queue").click()
        page.wait_for_function("() => window.newsloopQueue && window.newsloopQueue.current "
                               "&& window.newsloopQueue.buffer.length >= 3")
        page.evaluate(WATCH)
        page.wait_for_timeout(1000)  # a person reads the first article
        start = time.perf_counter()
        for n in range(presses):
            delay = start + n * pace_s - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            page.keyboard.press(str(n % 4 + 1))
        page.wait_for_function("() => window.newsloopQueue.outbox.length === 0 && !window.newsloopQueue.inflight",
                               timeout=120_000)
        page.wait_for_timeout(200)  # the last frame
        seen: list[dict] = page.evaluate("window.presses")
        for n, press in enumerate(seen):
            press["label"] = LABELS[n % 4]
        return seen
    finally:
        page.close()


def table(pace_s: float, seen: list[dict], stored: dict[str, list[str]]) -> str:
    intended = sum(stored.get(p["before"]["text"]) == [p["label"]] for p in seen)
    other_ack = sum(" ".join(p["before"]["text"].split()[:5]) not in " ".join(p.get("ack", "").split()) for p in seen)
    not_taken = sum(bool(p.get("sign", "").strip()) for p in seen)
    latency = [p["frame"] - p["at"] for p in seen if p.get("frame") is not None and p["after"]["shown"]
               and p["after"]["shown"] != p["before"]["shown"]]
    rows = [
        ("presses", str(len(seen))),
        ("stored as intended", str(intended)),
        ("missing", str(len(seen) - intended)),
        ("shown as not taken (press again)", str(not_taken)),
        ("acknowledgements naming another article", str(other_ack)),
        ("press to next article, median (ms)", f"{statistics.median(latency):.1f}" if latency else "-"),
        ("press to next article, p90 (ms)", f"{percentile(latency, 0.9):.1f}" if latency else "-"),
        ("press to next article, max (ms)", f"{max(latency):.1f}" if latency else "-"),
    ]
    lines = [f"### {pace_s:g} s between presses", "", "| measure | value |", "| --- | ---: |"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = options.parser(__doc__)
    parser.add_argument("--paces", type=float, nargs="+", default=[1.0, 0.4, 0.2], help="seconds between presses")
    parser.add_argument("--presses", type=int, default=30, help="presses at each pace")
    parser.add_argument("--default-limits", action="store_true", help="keep the shipped rate limits")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from feedback.store import FeedbackStore
    from feedback.validate import WITHDRAWN

    if not CHROMIUM.is_file():
        raise SystemExit(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="newsloop-keypress-") as tmp:
        home = Path(tmp) / "home"
        stage(home, args.presses * len(args.paces) + 40)
        proc, url = _start(home, Path(tmp) / "app.log", {} if args.default_limits else RAISED)
        results = []
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
                try:
                    for pace in args.paces:
                        results.append((pace, run_pace(browser, url, pace, args.presses)))
                finally:
                    browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=60)
        store = FeedbackStore(home / "feedback.db")
        try:
            stored: dict[str, list[str]] = {}
            for row in store.answers.rows():
                if row["kind"] == "queue" and row["status"] not in WITHDRAWN:
                    stored.setdefault(row["text"], []).append(row["user_label"])
        finally:
            store.close()
    limits = "shipped rate limits" if args.default_limits else "rate limits raised for the run"
    print(f"Label queue key presses through the real page (starter model, {limits})\n")
    for pace, seen in results:
        print(table(pace, seen, stored) + "\n")
    return 0


def _start(home: Path, log: Path, extra: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """`python app.py` on `home` (bench.screenshots.start_app), with `extra` settings in its environment."""
    import bench.screenshots as shots

    original = shots.home_env
    shots.home_env = lambda h: original(h) | extra  # type: ignore[assignment]
    try:
        return start_app(home, log)
    finally:
        shots.home_env = original  # type: ignore[assignment]


if __name__ == "__main__":
    sys.exit(main())
