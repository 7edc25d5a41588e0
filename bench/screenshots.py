"""The README's screenshots (docs/screenshots/*.png): the shipped starter on real news, through the real page.

    NEWSLOOP_DATA=../shared/data/ag_news python -m bench.screenshots

An empty home gets the starter (as `python app.py` installs it), held-out articles of NEWSLOOP_DATA (the seed set
when it is unavailable) in the labelling pool, and answers from three annotators on others, with the starter's
own probabilities; a real `python -m retrain run` on those answers then leaves a decision for the admin view.
`python app.py` serves that home; Debian's Chromium (driven by Playwright, which never
downloads a browser here) takes Classify (a sports article, answered Right), Label queue and Admin at desktop
(1280x900) and phone (390x844) sizes. The command fails if the page does not show the starter's answer.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from bench import options
from bench.sim.data import load_sources
from bench.sim.headlines import plan_headlines
from core.command_line import ExitCode
from core.data import Example, load_corpus_or_seed
from core.host.net import free_port
from core.labels import LABELS
from core.registry.starter import install_starter
from core.registry.versions import ModelRegistry
from core.settings.config import PROJECT_ROOT, load_settings
from core.settings.policies import StoreLimits
from feedback.labelling.answers import AnswerInput

OUT = PROJECT_ROOT / "docs" / "screenshots"
CHROMIUM = Path(os.environ.get("NEWSLOOP_TEST_CHROMIUM", "/usr/bin/chromium"))
SIZES = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
PASSWORD = "screenshots only: a long throwaway admin password"
ANNOTATORS = ("ada", "ben", "chen")
STEP_MS = 60_000
ADMIN_MAX_HEIGHT = {"desktop": 1500, "phone": 2400}  # the admin view is long: its top, tiles and plots


def held_out() -> tuple[list[Example], list[Example], str]:
    """Articles the starter did not train on: the validation split of the configured data (the pool, Classify),
    and the rows it left out for the headline scenario (`bench.sim.headlines`; the answers: a retrain trains on
    them, as it never does on validation texts). The seed set has no such rows: answers there are on validation."""
    settings = load_settings()
    source = settings.data
    corpus = load_corpus_or_seed(source.source, source.val_fraction, source.use_extra)
    try:
        stream = plan_headlines(load_sources(str(source.source)), source.val_fraction).stream
    except (OSError, StopIteration, ValueError):
        stream = []
    return corpus.validation, stream, corpus.description


def stage(home: Path, examples: list[Example], answered: list[Example]) -> str:
    """The starter, a pool and a few days' answers in `home`; returns the sports article Classify will show."""
    from core.serving.classifier import OnnxClassifier
    from feedback.store import FeedbackStore

    champion = install_starter(ModelRegistry(home / "models"))
    if champion is None:
        raise SystemExit("no starter in models/starter fits the configured labels")
    model = OnnxClassifier(champion.path)
    candidates = [e for e in examples if 150 <= len(e.text) <= 420][:160]
    probs = model.proba_in_label_order([e.text for e in candidates])
    sports = LABELS.index("Sports")
    article = next((e.text for e, p in zip(candidates, probs, strict=True)
                    if e.label == sports and p.argmax() == sports and p[sports] > 0.9), None)
    if article is None:
        raise SystemExit("no held-out sports article that the starter reads as Sports with confidence above 0.9")
    others = [(e, p) for e, p in zip(candidates, probs, strict=True) if e.text != article]
    store = FeedbackStore(home / "feedback.db", StoreLimits(writes_per_minute=10_000, address_writes_per_minute=10_000))
    try:
        store.pool.add([e.text for e, _ in others[:60]], source="held-out articles")
        texts = [e for e in answered if 150 <= len(e.text) <= 420][:12] or [e for e, _ in others[60:72]]
        for i, (example, p) in enumerate(zip(texts, model.proba_in_label_order([e.text for e in texts]), strict=True)):
            for annotator in ANNOTATORS:
                # chen disagrees now and then, as people do; a confident model flags such answers for review
                label = (example.label + 1) % len(LABELS) if annotator == "chen" and i % 6 == 5 else example.label
                store.answers.record(AnswerInput(text=example.text, user_label=LABELS[label], annotator=f"user:{annotator}",
                             kind="confirm" if p.argmax() == label else "correct", probabilities=p,
                             model_version=champion.version, verified=True))
    finally:
        store.close()
    return article


def home_env(home: Path) -> dict[str, str]:
    """The environment of a process on the staged home: this one's, less any NewsLoop, Space or OAuth setting."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEWSLOOP_", "SPACE_", "OAUTH_"))}
    return env | {"NEWSLOOP_HOME": str(home), "NEWSLOOP_HOST": "127.0.0.1", "NEWSLOOP_DURABLE_DIR": "",
                  "NEWSLOOP_ADMIN_PASSWORD": PASSWORD, "NEWSLOOP_DATA": str(load_settings().data),
                  "NEWSLOOP_CLASSIFY_PER_MINUTE": "1000", "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1"}


def retrain(home: Path, log: Path) -> str:
    """A real `python -m retrain run` on the staged answers, so the admin view shows a decision and its numbers."""
    with log.open("wb") as out:
        done = subprocess.run([sys.executable, "-m", "retrain", "run"], cwd=PROJECT_ROOT, env=home_env(home),
                              stdout=out, stderr=subprocess.STDOUT, timeout=1800)
    decision = {ExitCode.OK: "promoted", ExitCode.REFUSED: "refused"}.get(done.returncode)
    if decision is None:  # the view shows a refusal as well as a promotion; a failed run is no picture
        raise SystemExit(f"retrain run exited with {done.returncode}:\n{log.read_text()[-3000:]}")
    return decision


def start_app(home: Path, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = home_env(home) | {"NEWSLOOP_PORT": str(port)}
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=PROJECT_ROOT, env=env, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"app.py exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}readyz", timeout=5) as response:
                if response.status == 200:
                    return proc, url
        except OSError:
            pass
        time.sleep(0.5)
    proc.terminate()
    raise SystemExit(f"app.py did not serve within 180 s:\n{log.read_text()[-3000:]}")


def wait_text(page, selector: str, text: str) -> str:  # type: ignore[no-untyped-def]
    page.wait_for_function("([s, t]) => (document.querySelector(s)?.innerText || '').includes(t)", arg=[selector, text])
    return page.inner_text(selector)


def settle(page) -> None:  # type: ignore[no-untyped-def]
    """No event running (Gradio dims pending outputs), images loaded, the fade over."""
    page.wait_for_function(
        "() => ![...document.querySelectorAll('[data-testid=status-tracker]')].some(el => !el.classList.contains('hide'))"
        " && !document.querySelector('.pending') && [...document.images].every(img => img.complete)")
    page.wait_for_timeout(600)


def tab(page, name: str) -> None:  # type: ignore[no-untyped-def]
    """Open a tab by its name; on a phone some tabs sit in Gradio's overflow menu."""
    page.wait_for_selector('button[role="tab"] >> visible=true')
    more = page.locator('button[aria-label="More tabs"]')
    if page.get_by_role("tab", name=name).locator("visible=true").count() == 0 and more.is_visible():
        more.click()
    page.get_by_role("tab", name=name).locator("visible=true").first.click()


def to_admin(page) -> None:  # type: ignore[no-untyped-def]
    """Open the maintainers' page (/admin/) by the labellers' page's "Maintainers" link, or straight there."""
    if page.locator("#maintainers a").count():
        page.click("#maintainers a")
        page.wait_for_url("**/admin/", wait_until="domcontentloaded")
    else:
        page.goto(page.url.split("?")[0].rstrip("/") + "/admin/", wait_until="domcontentloaded")
    page.wait_for_selector("#admin-login >> visible=true")


def shoot(url: str, article: str, out: Path) -> dict[str, str]:
    """Classify, Label queue and the admin page at each size; returns what the Classify tab showed, per size."""
    from playwright.sync_api import sync_playwright

    shown: dict[str, str] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                     args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            for size, viewport in SIZES.items():
                page = browser.new_context(viewport=viewport).new_page()
                page.set_default_timeout(STEP_MS)
                page.goto(url, wait_until="domcontentloaded")
                page.wait_for_selector("#classify-btn")
                page.fill("#news-text textarea", article)
                page.click("#classify-btn")
                wait_text(page, "#classify-info", "Model")
                shown[size] = page.inner_text("#topic-label")
                read = {label: int(pct) for label, pct in re.findall(r"^(.+)\n(\d+)%$", shown[size], re.MULTILINE)}
                if not read or max(read, key=read.get) != "Sports" or read["Sports"] < 80:
                    raise SystemExit(f"the page did not read the sports article as Sports: {shown[size]!r}")
                shown[size] = f"Sports {read['Sports']}%"
                page.click("#fb-right")
                wait_text(page, "#feedback-ack", "saved as")
                settle(page)
                if size == "phone":  # the answer, its probabilities, the buttons and the confirmation in one view
                    page.evaluate("document.querySelector('#topic-label').scrollIntoView({block: 'start'})")
                    page.wait_for_timeout(300)
                page.screenshot(path=str(out / f"classify-{size}.png"))
                tab(page, "Label queue")
                page.wait_for_function("() => (document.querySelector('#queue-article article')?.innerText || '').length > 20")
                settle(page)
                page.screenshot(path=str(out / f"queue-{size}.png"))
                to_admin(page)
                page.fill("#admin-password input", PASSWORD)
                page.press("#admin-password input", "Enter")
                wait_text(page, "#admin-tiles", "answers")
                settle(page)
                height = min(page.evaluate("document.documentElement.scrollHeight"), ADMIN_MAX_HEIGHT[size])
                page.screenshot(path=str(out / f"admin-{size}.png"), full_page=True,
                                clip={"x": 0, "y": 0, "width": viewport["width"], "height": height})
                page.context.close()
        finally:
            browser.close()
    return shown


def main(argv: Sequence[str] | None = None) -> int:
    parser = options.parser(__doc__)
    parser.add_argument("--out", type=Path, default=OUT, help=f"where the PNGs go (default {OUT})")
    args = parser.parse_args(argv)
    if not CHROMIUM.is_file():
        raise SystemExit(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set NEWSLOOP_TEST_CHROMIUM)")
    examples, answered, source = held_out()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="newsloop-screenshots-") as tmp:
        home = Path(tmp) / "home"
        article = stage(home, examples, answered)
        decision = retrain(home, Path(tmp) / "retrain.log")
        proc, url = start_app(home, Path(tmp) / "app.log")
        try:
            shown = shoot(url, article, args.out)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    print(f"examples: held-out articles of {source}; a retrain on the staged answers was {decision}")
    print(f"classify: {article[:90]!r}... read as {shown['desktop']} (desktop), {shown['phone']} (phone)")
    print(f"wrote {', '.join(sorted(p.name for p in args.out.glob('*.png')))} to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
