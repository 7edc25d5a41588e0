"""The new user's walk of issue 59, on a fresh home, as the README orders it: `newsloop serve` (the shipped AG News
starter, its demo pool), then "Bring your own topics": `NEWSLOOP_DATA=newsroom.csv newsloop bootstrap` (three topics
of a newsroom's own, a tiny random encoder so it trains in seconds) and `newsloop serve` again. Every step is a real
`newsloop` process; the pages are read in headless Chromium, every panel open: nothing rendered on `/` or
`/admin/` names an AG News topic or shows an AG News example or demo article."""

from __future__ import annotations

import csv
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from core.data import load_corpus
from core.host.net import free_port
from core.labels import LABELS
from core.samples import AG_NEWS_EXAMPLES
from core.settings.config import PROJECT_ROOT, SEED_CSV
from feedback.labelling.demo import DEMO_FILE
from feedback.store import FeedbackStore
from testkit.data import NEWSROOM_TOPICS, newsroom_csv
from tests.e2e.test_browser import _wait_for_text as wait_for_text
from tests.e2e.test_browser import desktop_page
from tests.e2e.test_own_topics import tiny_base

pytestmark = pytest.mark.browser

PASSWORD = "a long admin password for the new user's walk"
AG_NEWS_TOPIC = re.compile(r"\b(World|Sports|Business)\b|Sci/Tech")
# Every text screen readers are given (the aria-live regions), as they change: Gradio's status tracker read its
# untranslated key "common.complete" after every answer.
ANNOUNCED = """() => { window.said = []; new MutationObserver(() => {
  document.querySelectorAll('[aria-live]').forEach((e) => { const t = e.innerText.trim(); if (t) window.said.push(t); });
}).observe(document.body, {childList: true, subtree: true, characterData: true}); }"""
# The topic buttons a grid shows: their topic, and their box (equal cells, no lone button on a row).
BOXES = """(sel) => Array.from(document.querySelectorAll(sel)).filter((b) => !b.hidden).map((b) => {
  const r = b.getBoundingClientRect(); return [b.dataset.name, Math.round(r.width), Math.round(r.height)]; })"""


def ag_news_texts() -> list[str]:
    """The project's AG News texts a page could show: Classify's examples, the demo pool, the seed set."""
    with DEMO_FILE.open(encoding="utf-8") as handle:
        demo = [row["text"] for row in csv.DictReader(handle)]
    with SEED_CSV.open(encoding="utf-8") as handle:
        seed = [row[1] for row in csv.reader(handle)][1:]
    return [*AG_NEWS_EXAMPLES, *demo, *seed]


@contextmanager
def newsloop_serve(env: dict[str, str], log: Path) -> Iterator[str]:
    """`newsloop serve --host 127.0.0.1 --port P`, until the line it prints once it listens; its URL."""
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "newsloop", "serve", "--host", "127.0.0.1", "--port", str(port)],
                                cwd=PROJECT_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        said = f"NewsLoop serves at http://127.0.0.1:{port}/; maintainers: http://127.0.0.1:{port}/admin/"
        while said not in log.read_text(encoding="utf-8"):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text(encoding="utf-8")[-3000:]
            time.sleep(0.25)
        yield f"http://127.0.0.1:{port}/"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)


def rendered_text(page) -> str:  # type: ignore[no-untyped-def]
    """What the page renders: its visible text, every text box's and text area's value, and buttons' hints."""
    return page.evaluate("""() => [document.body.innerText,
        ...Array.from(document.querySelectorAll('textarea, input')).map((e) => e.value || ''),
        ...Array.from(document.querySelectorAll('[title]')).map((e) => e.title)].join('\\n')""")


def open_accordions(page) -> None:  # type: ignore[no-untyped-def]
    for button in page.locator("button.label-wrap:not(.open)").all():
        if button.is_visible():
            button.click()
            page.wait_for_timeout(150)


def test_a_newsroom_bringing_its_own_topics_never_sees_ag_news(tmp_path: Path) -> None:
    home, data = tmp_path / "home", newsroom_csv(tmp_path / "newsroom.csv")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEWSLOOP_", "MLFLOW_"))} | {
        "NEWSLOOP_HOME": str(home), "NEWSLOOP_ADMIN_PASSWORD": PASSWORD, "NEWSLOOP_ONNX_THREADS": "1",
        "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONPATH": str(PROJECT_ROOT)}

    # 1. The README's first command on a fresh clone: the AG News starter, its topics and demo pool.
    with newsloop_serve(env, tmp_path / "serve-1.log"):
        pass
    store = FeedbackStore(home / "feedback.db")
    assert store.topics.current().names == LABELS and store.stats()["pool"]["items"] == 40
    store.close()

    # 2. "Bring your own topics": the bootstrap on the newsroom's CSV says, in one line, that the list follows it.
    own = env | {"NEWSLOOP_DATA": str(data), "NEWSLOOP_BASE_MODEL": str(tiny_base(tmp_path / "tiny-base")),
                 "NEWSLOOP_MAX_LENGTH": "64", "NEWSLOOP_BOOTSTRAP_MAX_MINUTES": "0", "NEWSLOOP_TORCH_THREADS": "2"}
    done = subprocess.run([sys.executable, "-m", "newsloop", "bootstrap"], cwd=PROJECT_ROOT, env=own,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert ("this home's topic list was World, Sports, Business, Sci/Tech, with nothing answered under it: it is now "
            "newsroom.csv's topics, Weather, Elections, Football") in done.stderr

    # 3. `newsloop serve` again: every page and panel, read in Chromium.
    with newsloop_serve(own, tmp_path / "serve-2.log") as url, desktop_page(url) as page:
        page.wait_for_selector("#fb-buttons button[data-topic]")
        page.evaluate(ANNOUNCED)
        open_accordions(page)
        page.fill("#news-text textarea", "Storm front brings heavy rain and flood warnings to the coast tonight.")
        page.click("#classify-btn")
        wait_for_text(page, "#classify-info", "Model")
        page.wait_for_function("() => !document.querySelector('#fb-right').disabled")
        labeller = rendered_text(page)
        answer = page.evaluate("() => document.querySelector('#topic-label h2, #topic-label .output-class').innerText")
        corrections = page.evaluate(BOXES, "#fb-buttons .topic-grid button")
        page.locator("#fb-buttons .topic-grid button:visible").first.click()
        wait_for_text(page, "#feedback-ack", "saved as")
        page.get_by_role("tab", name="Label queue").click()
        page.wait_for_function("() => !!(window.newsloopQueue && window.newsloopQueue.current)")
        open_accordions(page)
        queue = rendered_text(page)
        article = page.evaluate("window.newsloopQueue.current.text")
        keys = page.evaluate(BOXES, "#queue-buttons button")
        page.keyboard.press("0")  # none fits: it counts towards "You have labelled N"
        wait_for_text(page, "#queue-progress", "You have labelled 1")
        said = page.evaluate("window.said")
        errors = list(page.errors)

        page.goto(f"{url}admin/", wait_until="domcontentloaded")
        page.fill("#admin-password input", PASSWORD)
        page.press("#admin-password input", "Enter")
        wait_for_text(page, "#admin-tiles", "answers")
        wait_for_text(page, "#topics-list", "Weather")
        open_accordions(page)
        wait_for_text(page, "#label-errors-summary", "No search yet")
        admin = rendered_text(page)
        errors += page.errors

    assert not errors
    # The correction naming the model's answer is not offered; the others, and the queue's keys, are equal cells.
    assert answer in NEWSROOM_TOPICS and [b[0] for b in corrections] == [t for t in NEWSROOM_TOPICS if t != answer]
    assert len({(w, h) for _, w, h in corrections}) == 1 and len({(w, h) for _, w, h in keys}) == 1
    assert [b[0] for b in keys] == list(NEWSROOM_TOPICS)
    assert said and not [t for t in said if "common." in t]  # nothing untranslated read out
    for name, text in (("/ (Classify)", labeller), ("/ (Label queue)", queue), ("/admin/", admin)):
        assert all(topic in text for topic in NEWSROOM_TOPICS), name
        assert not AG_NEWS_TOPIC.search(text), f"{name} names an AG News topic: {AG_NEWS_TOPIC.search(text)}"
        assert not [t for t in ag_news_texts() if t[:40] in text], f"{name} shows an AG News text"
    corpus = load_corpus(str(data), 0.1, True)
    assert article in {e.text for e in corpus.train}  # the demo pool is the newsroom's own training rows
    assert "Storm front" in labeller and "The topics" in labeller and "The topics" in queue  # the guidelines were read
