"""Issue 15's flows in headless Chromium, desktop (1280x900) and phone (390x844): the labeller's Classify and
queue pages (keyboard only included), the maintainer's admin view, axe-core scans and the README screenshots.

axe-core comes from npm (`.ci/run` installs it into `.axe/`); the scan is skipped only when that file is absent.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from core.settings.config import PROJECT_ROOT
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from testkit.server import launched_app, open_limits_settings, open_limits_store
from tests.e2e.test_browser import STEP_TIMEOUT_MS, _wait_for_text

pytestmark = pytest.mark.browser

PASSWORD = "a long admin password for the browser test"
AXE = Path(os.environ.get("NEWSLOOP_AXE_JS", PROJECT_ROOT / ".axe" / "node_modules" / "axe-core" / "axe.min.js"))
# The tests' screenshots (tiny model) go to the ignored tests/screenshots; the README's come from the real starter
# (python -m bench.screenshots), so a test run never rewrites tracked files.
SHOTS = PROJECT_ROOT / "tests" / "screenshots"
SIZES = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
RATE_FILE = PROJECT_ROOT / "tests" / "screenshots" / "keyboard_rate.json"
ARTICLE = ("The striker signed a new three-year contract with the club on Monday, ending weeks of talks "
           "about a move abroad before the transfer window closes.")


@pytest.fixture(scope="module")
def served(tiny_champion_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FeedbackStore]]:
    settings = open_limits_settings(tiny_champion_home, admin_password=SecretStr(PASSWORD), max_skips=50)
    store = open_limits_store(tmp_path_factory.mktemp("flows_db") / "feedback.db",
                              [f"Queue story {i}: talks on trade, a cup final, bank rates and a chip plant"
                               for i in range(60)])
    with launched_app(settings, store) as (url, _):
        yield url, store



def open_page(browser, url: str, size: str = "desktop", context=None):  # type: ignore[no-untyped-def]
    context = context or browser.new_context(viewport=SIZES[size])
    page = context.new_page()
    page.set_default_timeout(STEP_TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.errors = errors
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector("#classify-btn")
    return page


def tab(page, name: str) -> None:  # type: ignore[no-untyped-def]
    """Open a tab by its name; on a phone some tabs sit in Gradio's overflow menu."""
    page.wait_for_selector('button[role="tab"] >> visible=true')
    more = page.locator('button[aria-label="More tabs"]')
    if page.get_by_role("tab", name=name).locator("visible=true").count() == 0 and more.is_visible():
        more.click()
    page.get_by_role("tab", name=name).locator("visible=true").first.click()


def to_admin(page) -> None:  # type: ignore[no-untyped-def]
    """Go to the maintainers' page (/admin/) by the labellers' page's "Maintainers" link, as a person does; on it
    already (a reload), stay."""
    if "/admin/" not in page.url:
        page.click("#maintainers a")
        page.wait_for_url("**/admin/", wait_until="domcontentloaded")
    page.wait_for_selector("#admin-password, #admin-panel", state="attached")
    page.wait_for_selector("#admin-login, #admin-logout >> visible=true")


def shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)


def settled(page) -> None:  # type: ignore[no-untyped-def]
    """Wait until no event runs on the page: no status tracker shown, nothing pending."""
    page.wait_for_function(
        "() => ![...document.querySelectorAll('[data-testid=status-tracker]')].some(el => !el.classList.contains('hide'))"
        " && !document.querySelector('.pending')"
    )


def axe_violations(page) -> list[dict]:  # type: ignore[no-untyped-def]
    if not AXE.is_file():
        pytest.skip(f"axe-core is not installed at {AXE} (npm install --prefix .axe axe-core)")
    # Scan a settled page: while an event runs Gradio dims its outputs, which axe would rightly call low contrast.
    settled(page)
    page.wait_for_timeout(400)  # the fade back to full opacity
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [{"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:3]}
            for v in result["violations"] if v["impact"] in ("serious", "critical")]


def classify(page, text: str) -> None:  # type: ignore[no-untyped-def]
    page.fill("#news-text textarea", text)
    page.click("#classify-btn")
    _wait_for_text(page, "#classify-info", "Model")


@pytest.mark.parametrize("size", sorted(SIZES))
def test_classify_confirmation_belongs_to_one_prediction(browser, served, size: str) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    page = open_page(browser, url, size)
    assert "Shift" in page.inner_text("#classify-hint") and "Enter" in page.inner_text("#classify-hint")
    classify(page, ARTICLE)
    # A correction on offer: the model's own answer is not one (it is "Right").
    name, button = page.evaluate("""() => { const b = Array.from(document.querySelectorAll(
        '#fb-buttons .topic-grid button')).find((b) => !b.hidden); return [b.dataset.name, '#' + b.id]; }""")
    page.click(button)
    ack = _wait_for_text(page, "#feedback-ack", "saved as")
    assert "The striker signed" in ack and name in ack
    assert page.get_attribute("#feedback-ack", "aria-live") == "polite"
    assert "✓" in page.inner_text(button) and "primary" in page.get_attribute(button, "class")
    shot(page, f"classify-{size}")
    classify(page, "Parliament passed the budget after a long night of debate in the capital.")
    page.wait_for_function("() => !document.querySelector('#feedback-ack').innerText.includes('saved')")
    assert "✓" not in page.inner_text(button)
    # Undo on this tab names the article and touches only this tab's answers.
    page.click("#fb-right")
    _wait_for_text(page, "#feedback-ack", "saved as")
    page.click("#fb-undo")
    assert "Parliament passed" in _wait_for_text(page, "#feedback-ack", "Undone")
    body = page.inner_text("body")
    assert "/tmp" not in body and "/home" not in body and str(PROJECT_ROOT) not in body  # no server paths
    if size == "phone":
        boxes = {sel: page.locator(sel).bounding_box() for sel in ("#classify-btn", "#topic-label", "#fb-right",
                                                                    "#fb-undo", "#classify-examples")}
        assert boxes["#topic-label"]["y"] < boxes["#classify-examples"]["y"]  # result right under Classify
        assert boxes["#fb-right"]["y"] < boxes["#classify-examples"]["y"]
        assert all(box["height"] >= 44 for key, box in boxes.items() if key.startswith("#fb"))
    assert not page.errors
    page.context.close()


def test_character_counter_warns_before_the_limit(browser, served) -> None:  # type: ignore[no-untyped-def]
    page = open_page(browser, served[0])
    page.fill("#news-text textarea", "x" * 19_000)
    page.dispatch_event("#news-text textarea", "input")
    counter = _wait_for_text(page, "#char-count", "19,000 / 20,000")
    assert "Close to the" in counter
    page.fill("#news-text textarea", "")
    page.focus("#news-text textarea")
    page.evaluate("""() => { const box = document.querySelector('#news-text textarea');
        const data = new DataTransfer(); data.setData('text/plain', 'y'.repeat(25000));
        box.dispatchEvent(new ClipboardEvent('paste', {clipboardData: data, bubbles: true})); }""")
    assert "only the first 20,000 were kept" in _wait_for_text(page, "#char-count", "kept")
    page.context.close()


def test_a_keyboard_only_labeller_labels_twenty_items(browser, served) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    page = open_page(browser, url)
    tab(page, "Label queue")
    _wait_for_text(page, "#queue-article", "Queue story")
    progress = _wait_for_text(page, "#queue-progress", "labelled 0")
    assert " left" in progress
    page.locator("#queue-article article").focus()  # the article is reachable by keyboard
    shot(page, "queue-desktop")
    start = time.perf_counter()
    for n in range(1, 21):
        before = page.inner_text("#queue-article article")
        page.wait_for_timeout(250)  # the article is read before it is answered: keys.js drops faster presses
        page.keyboard.press(str((n % 4) + 1))
        _wait_for_text(page, "#queue-progress", f"labelled {n},")
        page.wait_for_function("(b) => document.querySelector('#queue-article article').innerText !== b", arg=before)
        assert before.strip()[:16] in page.inner_text("#queue-ack")  # the message names the saved article
    elapsed = time.perf_counter() - start
    rate = 20 / elapsed * 60
    RATE_FILE.parent.mkdir(exist_ok=True)
    RATE_FILE.write_text(json.dumps({"items": 20, "seconds": round(elapsed, 2), "per_minute": round(rate, 1)}))
    print(f"keyboard-only labelling: 20 items in {elapsed:.1f} s = {rate:.0f} items a minute")
    assert rate > 0
    # Enter never repeats the last label; S skips; U undoes the last queue answer (not a Classify one).
    page.keyboard.press("Enter")
    page.wait_for_timeout(250)
    page.keyboard.press("s")
    _wait_for_text(page, "#queue-ack", "Skipped")
    page.wait_for_timeout(250)
    page.keyboard.press("u")
    ack = _wait_for_text(page, "#queue-ack", "Undone")
    assert "Queue story" in ack and "labelled 19," in page.inner_text("#queue-progress")
    assert not page.errors
    page.context.close()


def test_queue_on_a_phone(browser, served) -> None:  # type: ignore[no-untyped-def]
    page = open_page(browser, served[0], "phone")
    tab(page, "Label queue")
    _wait_for_text(page, "#queue-article", "Queue story")
    assert page.locator("#q-0").bounding_box()["height"] >= 44
    shot(page, "queue-phone")
    page.context.close()


def sign_in(page) -> None:  # type: ignore[no-untyped-def]
    to_admin(page)
    page.fill("#admin-password input", PASSWORD)
    page.press("#admin-password input", "Enter")  # Enter submits the password
    _wait_for_text(page, "#admin-tiles", "answers")


@pytest.mark.parametrize("size", sorted(SIZES))
def test_admin_view_loads_on_sign_in_and_survives_a_reload(browser, served, size: str) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    context = browser.new_context(viewport=SIZES[size])
    page = open_page(browser, url, size, context)
    sign_in(page)
    tiles = page.inner_text("#admin-tiles")
    for name in ("answers", "trusted", "suspicious waiting", "pool left", "annotators", "check accuracy"):
        assert name in tiles
    assert page.locator("#rollback-btn").is_disabled()  # only one champion: nothing to roll back to
    assert "Nothing to roll back to" in page.inner_text("#rollback-btn")
    page.click("#retrain-btn")
    confirm = _wait_for_text(page, "#retrain-confirm-text", "trusted feedback")
    assert "NEWSLOOP_RETRAIN_MIN_FEEDBACK" in confirm and "should take about" in confirm
    page.click("#retrain-cancel")
    shot(page, f"admin-{size}")
    page.reload(wait_until="domcontentloaded")
    to_admin(page)
    _wait_for_text(page, "#admin-tiles", "answers")  # the browser's admin session restores the panel
    page.click("#admin-logout")
    _wait_for_text(page, "#admin-msg", "Signed out")
    assert page.locator("#admin-panel").is_hidden()
    assert not page.errors
    context.close()


def test_admin_reviews_a_suspicious_answer_by_clicking_its_row(browser, served) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    probs = {"World": 0.97, "Sports": 0.01, "Business": 0.01, "Sci/Tech": 0.01}
    answer = store.answers.record(AnswerInput(text="Summit report flagged for the browser review", user_label="Sports",
                          annotator="user:someone", kind="correct", probabilities=probs, verified=True))
    assert store.answers.get(answer.id)["status"] == "suspicious"
    page = open_page(browser, url)
    sign_in(page)
    # Every answer in the review list is a checkbox labelled with its full text (web/admin/review_view.py).
    page.locator("#review-list label", has_text="Summit report flagged").first.click()
    page.click("#review-accept")
    assert f"#{answer.id}" in _wait_for_text(page, "#review-msg", "Accepted 1 answer")
    assert store.answers.get(answer.id)["status"] == "accepted"
    page.context.close()


def test_a_reload_the_maintainer_did_not_ask_for_undoes_nothing(browser, served) -> None:  # type: ignore[no-untyped-def]
    """Refresh reloads the admin view, as sign-in and a change in another panel do (web.admin.tab_memory): an answer
    ticked before the new list lands stays ticked (the answer it brings is not), and a guidelines draft stays."""
    url, store = served
    probs = {"World": 0.97, "Sports": 0.01, "Business": 0.01, "Sci/Tech": 0.01}

    def suspicious(text: str) -> int:
        return store.answers.record(AnswerInput(text=text, user_label="Sports", annotator="user:someone", kind="correct",
                            probabilities=probs, verified=True)).id

    ticked = suspicious("Harbour talks ticked before the refresh")
    page = open_page(browser, url)
    sign_in(page)
    row = page.locator("#review-list label", has_text="Harbour talks ticked")
    row.first.click()
    _wait_for_text(page, "#guidelines-version", "In force")
    page.fill("#guidelines-text textarea", "A draft the refresh must keep")
    arrived = suspicious("Rail deal that arrived while the other was ticked")
    page.click("#admin-refresh")
    page.locator("#review-list label", has_text="Rail deal that arrived").first.wait_for()
    settled(page)  # the guidelines' reload too
    assert row.locator("input").first.is_checked()
    assert page.input_value("#guidelines-text textarea") == "A draft the refresh must keep"
    assert not page.locator("#review-list label", has_text="Rail deal that arrived").locator("input").first.is_checked()
    page.click("#review-accept")
    assert f"#{ticked}." in _wait_for_text(page, "#review-msg", "Accepted 1 answer")
    assert (store.answers.get(ticked)["status"], store.answers.get(arrived)["status"]) == ("accepted", "suspicious")
    page.context.close()


@pytest.mark.parametrize("size", sorted(SIZES))
def test_no_serious_accessibility_violations_on_any_tab(browser, served, size: str) -> None:  # type: ignore[no-untyped-def]
    page = open_page(browser, served[0], size)
    found = {}
    classify(page, ARTICLE)
    found["classify"] = axe_violations(page)
    tab(page, "Label queue")
    _wait_for_text(page, "#queue-article", "Queue story", "No article")
    found["queue"] = axe_violations(page)
    to_admin(page)
    found["admin signed out"] = axe_violations(page)
    sign_in(page)
    found["admin signed in"] = axe_violations(page)
    print(f"axe ({size}):", json.dumps(found))
    assert found == {name: [] for name in found}
    page.context.close()
