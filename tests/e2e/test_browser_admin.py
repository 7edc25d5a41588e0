"""Issue 25 as a maintainer and a labeller would meet it, in headless Chromium: a bulk review of filtered answers,
people named and measured, a disagreement settled in one click, guidelines edited and read, tiles that follow
every action, the phone layout, and axe-core with every panel open at desktop and phone sizes."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from core.evaluation.decision import GateResult, PairedTest, Rule, RuleResult, SetScores
from core.registry.stages import RowCounts, RunRecord, state_payload
from core.registry.versions import ModelRegistry
from core.samples import AG_NEWS_EXAMPLES as EXAMPLES
from core.settings.policies import TrustPolicy
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from feedback.training.snapshot import read_trusted
from testkit.server import launched_app, open_limits_settings, open_limits_store
from tests.e2e.test_browser import STEP_TIMEOUT_MS, _wait_for_text
from tests.e2e.test_browser_flows import AXE, SIZES, open_page, settled, shot, tab, to_admin

pytestmark = pytest.mark.browser

PASSWORD = "a long admin password for the admin browser test"
SURE_OF_WORLD = {"World": 0.97, "Sports": 0.01, "Business": 0.01, "Sci/Tech": 0.01}
GUIDELINE = "Guideline marker 7731: **a chipmaker's earnings are Business**, its new chip is Sci/Tech."


def refused_run(home: Path) -> RunRecord:
    """A refused challenger v0002 in the registry and the state file, as a retrain leaves them."""
    registry = ModelRegistry(home / "models")
    shutil.copytree(registry.versions_dir / "v0001", registry.versions_dir / "v0002")
    meta_file = registry.versions_dir / "v0002" / "meta.json"
    meta_file.write_text(json.dumps(json.loads(meta_file.read_text()) | {"version": "v0002"}))
    sets = (SetScores("base_validation", 52, 0.9, 0.25, 0.24, 0.25, 0.2308),
            SetScores("feedback_holdout", 14, 0.05, 0.5, 0.57, 0.5, 0.5714),
            SetScores("traffic", 30, 0.05, 0.4, 0.41, 0.4, 0.4333))
    gain = RuleResult(Rule.GAIN, False, subject="pooled", p_value=0.41, threshold=0.05,
                      tests=(PairedTest("pooled", 96, 5, 4, 0.41),))
    margin = RuleResult(Rule.MARGIN, False, champion=0.25, challenger=0.2501, threshold=0.005)
    gate = GateResult(False, (margin, gain), sets, champion_score=0.25, challenger_score=0.2501, p_value=0.41)
    record = RunRecord(decision="refused", champion_before="v0001", challenger="v0002", champion_after="v0001",
                       rows=RowCounts(base_train=3000, feedback_train=14, feedback_holdout=14, traffic=30, base_validation=52),
                       gate=gate, seconds=765.0)
    record.refresh_reasons()
    registry.note("v0002", "refused", record.reasons)
    (home / "retrain_state.json").write_text(json.dumps(state_payload(record, "2026-01-01T00:00:00Z")))
    return record


@pytest.fixture(scope="module")
def served(tiny_champion_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FeedbackStore]]:
    home = tmp_path_factory.mktemp("admin_home") / "home"
    shutil.copytree(tiny_champion_home, home)
    refused_run(home)
    settings = open_limits_settings(home, admin_password=SecretStr(PASSWORD))
    store = open_limits_store(tmp_path_factory.mktemp("admin_db") / "feedback.db",
                              [f"Queue story {i}: talks on trade and a chip plant" for i in range(10)])
    for i in range(20):  # the rows the bulk review filters for
        store.answers.record(AnswerInput(text=f"Harbour strike talks, day {i}: unions meet ministers", user_label="Sports",
                     annotator="user:dana", kind="correct", probabilities=SURE_OF_WORLD, verified=True))
    for i in range(8):  # suspicious too, but from someone else or about something else: never touched
        who = "user:dana" if i % 2 else "anon:5f2a"
        store.answers.record(AnswerInput(text=f"Summit story {i} for another day", user_label="Sports", annotator=who, kind="correct",
                     probabilities=SURE_OF_WORLD, verified=who.startswith("user:")))
    store.answers.record(AnswerInput(text="Chipmaker's profit beats forecasts", user_label="Sci/Tech", annotator="anon:5f2a", kind="correct"))
    store.answers.record(AnswerInput(text="Chipmaker's profit beats forecasts", user_label="Business", annotator="user:dana",
                 kind="correct", verified=True))
    with launched_app(settings, store) as (url, _):
        yield url, store



def sign_in(page) -> None:  # type: ignore[no-untyped-def]
    to_admin(page)
    page.fill("#admin-password input", PASSWORD)
    page.press("#admin-password input", "Enter")
    _wait_for_text(page, "#admin-tiles", "answers")
    page.wait_for_function("() => document.querySelector('#review-list').innerText.includes('#')")


def statuses(store: FeedbackStore) -> dict[int, str]:
    with sqlite3.connect(store.path) as conn:
        return dict(conn.execute("SELECT id, status FROM answers"))


def choose(page, selector: str, option: str) -> None:  # type: ignore[no-untyped-def]
    page.click(f"{selector} input")
    page.get_by_role("option", name=option, exact=True).click()


def test_bulk_review_of_twenty_filtered_rows_changes_exactly_those(browser, served) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    before = statuses(store)
    wanted = {i for i, row in ((r["id"], r) for r in store.answers.rows()) if row["text"].startswith("Harbour strike")}
    assert len(wanted) == 20
    page = open_page(browser, url)
    sign_in(page)
    assert page.locator("#review-id, #answer-id").count() == 0  # no id box showing "0" before a pick
    choose(page, "#review-annotator", "dana")
    page.fill("#review-text textarea, #review-text input", "harbour STRIKE")
    page.press("#review-text textarea, #review-text input", "Enter")
    _wait_for_text(page, "#review-summary", "20 answer(s) match")
    listed = page.inner_text("#review-list")
    assert "unions meet ministers" in listed and "Summit story" not in listed  # full text, filtered
    page.click("#review-all")
    page.wait_for_function("() => document.querySelectorAll('#review-list input:checked').length === 20")
    page.click("#review-accept")
    message = _wait_for_text(page, "#review-msg", "Accepted")
    assert "Accepted 20 answer(s)" in message and all(f"#{i}" in message for i in wanted)
    after = statuses(store)
    assert {i for i, s in after.items() if s == "accepted"} == wanted
    assert {i: s for i, s in after.items() if i not in wanted} == {i: s for i, s in before.items() if i not in wanted}
    _wait_for_text(page, "#admin-tiles", f"{sum(s == 'suspicious' for s in after.values())}\nsuspicious")

    # Accepting them again says so instead of claiming a change.
    choose(page, "#review-status", "accepted")
    _wait_for_text(page, "#review-summary", "20 answer(s) match")
    page.click("#review-all")
    page.wait_for_function("() => document.querySelectorAll('#review-list input:checked').length === 20")
    page.click("#review-accept")
    assert "20 already accepted" in _wait_for_text(page, "#review-msg", "already")
    assert not page.errors
    page.context.close()


def test_review_by_keyboard_names_what_it_rejected(browser, served) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    page = open_page(browser, url)
    sign_in(page)
    choose(page, "#review-status", "suspicious")
    _wait_for_text(page, "#review-summary", "match")
    first = page.locator("#review-list input").nth(0)
    ids = [int(page.locator("#review-list input").nth(i).get_attribute("name")) for i in range(2)]
    first.focus()
    page.keyboard.press("Space")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Space")
    page.keyboard.press("r")
    message = _wait_for_text(page, "#review-msg", "Rejected")
    assert "Rejected 2 answer(s)" in message and all(f"#{i}" in message for i in ids)
    assert {store.answers.get(i)["status"] for i in ids} == {"rejected"}
    page.context.close()


def test_people_are_named_and_a_disagreement_is_settled_in_one_click(browser, served) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    page = open_page(browser, url)
    sign_in(page)
    table = _wait_for_text(page, "#annotators", "dana")
    assert "anon:" not in table and "user:" not in table
    assert re.search(r"\b[a-z]+-[a-z]+-\d\d\b", table)  # the anonymous browser's nickname
    assert "not enough overlap" in table  # one shared text is not "100%"
    disagreement = page.locator(".disagreement", has_text="Chipmaker's profit beats forecasts")
    disagreement.get_by_role("button", name="Business", exact=True).click()
    message = _wait_for_text(page, "#settle-msg", "Settled")
    assert "Business" in message
    page.wait_for_function("() => !document.body.innerText.includes('Chipmaker\\u2019s profit')"
                           " || !document.querySelector('.disagreement')")
    [trusted] = [t for t in read_trusted(store, TrustPolicy(labels_required=2)) if t.text.startswith("Chipmaker")]
    assert trusted.label == "Business"
    page.context.close()


def test_the_refused_run_is_drawn_apart_and_its_numbers_are_readable(browser, served) -> None:  # type: ignore[no-untyped-def]
    page = open_page(browser, served[0])
    sign_in(page)
    page.get_by_text("The numbers behind the last decision").click()
    numbers = _wait_for_text(page, "#retrain-numbers", "refused")
    assert "v0002" in numbers
    # The plot is an image: its data is checked in tests/unit/test_admin_plots.py; here it is on the page.
    assert page.locator("#plot-versions img, #plot-versions svg, #plot-versions canvas").count() >= 1
    shot(page, "admin-versions-plot")
    page.context.close()


def test_pool_upload_updates_the_pool_tile_at_once(browser, served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    page = open_page(browser, url)
    sign_in(page)
    left = int(re.search(r"([\d,]+)\s*pool left", page.inner_text("#admin-tiles")).group(1).replace(",", ""))
    upload = tmp_path / "more.csv"
    upload.write_text("text\nFed #39;s rate decision quot;surprises quot; markets\nA second new story\n",
                      encoding="utf-8")
    # The pool's own upload (the evidence panel has another, for the golden set), by the label Gradio writes into it.
    page.set_input_files("input[data-testid^='Add articles to the labelling queue'][data-testid$='-upload-button']",
                         str(upload))
    _wait_for_text(page, "#pool-msg", "Imported 2")
    _wait_for_text(page, "#admin-tiles", f"{left + 2}\npool left")
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM pool WHERE text LIKE '%#39;%' OR text LIKE '%quot;%'").fetchone() == (0,)
    page.context.close()


def test_guidelines_edited_by_the_admin_reach_the_labeller(browser, served) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    admin = open_page(browser, url)
    sign_in(admin)
    _wait_for_text(admin, "#guidelines-version", "In force")
    admin.fill("#guidelines-text textarea", GUIDELINE)
    admin.click("#guidelines-save")
    assert "Saved as version" in _wait_for_text(admin, "#guidelines-msg", "Saved")
    assert store.guidelines.current().text.strip() == GUIDELINE
    admin.context.close()

    labeller = open_page(browser, url)  # another browser, not signed in
    labeller.get_by_text("Labelling guidelines", exact=False).first.click()
    assert "a chipmaker's earnings are Business" in _wait_for_text(labeller, "#classify-guidelines", "marker 7731")
    tab(labeller, "Label queue")
    labeller.locator("#queue-guidelines").get_by_text("Labelling guidelines").click()
    assert "marker 7731" in _wait_for_text(labeller, "#queue-guidelines", "marker 7731")
    labeller.context.close()


def axe_scan(page) -> list[dict]:  # type: ignore[no-untyped-def]
    """Every axe-core violation, whatever its impact, on a settled page."""
    if not AXE.is_file():
        pytest.skip(f"axe-core is not installed at {AXE} (npm install --prefix .axe axe-core)")
    settled(page)
    page.wait_for_timeout(400)
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [{"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:3]}
            for v in result["violations"]]


def open_all(page, selector: str) -> None:  # type: ignore[no-untyped-def]
    """Open every closed accordion under `selector`."""
    for button in page.locator(f"{selector} button.label-wrap:not(.open)").all():
        if button.is_visible():
            button.click()


@pytest.mark.parametrize("size", sorted(SIZES))
def test_axe_finds_nothing_on_any_tab_with_panels_open(browser, served, size: str) -> None:  # type: ignore[no-untyped-def]
    page = open_page(browser, served[0], size)
    found = {}
    open_all(page, "#classify-guidelines")
    page.fill("#news-text textarea", "Shares slide as the retailer cuts its profit forecast for the year.")
    page.click("#classify-btn")
    _wait_for_text(page, "#classify-info", "Model")
    found["classify"] = axe_scan(page)
    tab(page, "Label queue")
    _wait_for_text(page, "#queue-progress", "left")  # an article (any: other tests add some) or "Nothing left"
    open_all(page, "#queue-guidelines")
    found["queue"] = axe_scan(page)
    to_admin(page)
    found["admin signed out"] = axe_scan(page)
    sign_in(page)
    open_all(page, "#admin-panel")
    found["admin signed in"] = axe_scan(page)
    shot(page, f"admin-review-{size}")
    print(f"axe ({size}):", json.dumps(found))
    assert found == {name: [] for name in found}
    page.context.close()


def test_phone_scrolls_the_result_into_view_and_hides_key_hints_on_touch(browser, served) -> None:  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport=SIZES["phone"], has_touch=True, is_mobile=True)
    page = open_page(browser, served[0], "phone", context)
    page.set_default_timeout(STEP_TIMEOUT_MS)
    assert not page.locator("#classify-hint .kbd-hint").is_visible()  # no keyboard on a touch screen
    page.fill("#news-text textarea", "The striker signed a new contract with the club on Monday.")
    page.locator("#classify-btn").tap()
    _wait_for_text(page, "#classify-info", "Model")
    page.wait_for_function("() => { const r = document.querySelector('#topic-label').getBoundingClientRect();"
                           " return r.top >= 0 && r.top < window.innerHeight; }")
    context.close()


def test_an_example_updates_the_counter_and_enter_answers_a_focused_queue_button(browser, served) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    page = open_page(browser, url)
    page.locator("#classify-examples").get_by_text(EXAMPLES[2][:30]).first.click()
    assert f"{len(EXAMPLES[2]):,} / " in _wait_for_text(page, "#char-count", f"{len(EXAMPLES[2]):,} / ")
    tab(page, "Label queue")
    # Whichever article the queue serves (other tests in this module add pool items and answer some).
    _wait_for_text(page, "#queue-progress", " left.")  # an article is on screen (the placeholder has no count)
    shown = page.inner_text("#queue-article article p")  # the article alone, not Gradio's loading overlay
    page.locator("#q-2").focus()
    page.wait_for_timeout(1000)  # web/page/keys.js drops a press within 200 ms of the article changing
    page.keyboard.press("Enter")
    ack = _wait_for_text(page, "#queue-ack", "Saved as")
    assert "Business" in ack and shown.strip()[:16] in ack
    page.keyboard.press("Enter")  # focus moved to the article: a second Enter repeats nothing
    page.wait_for_timeout(500)
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM answers WHERE kind = 'queue'").fetchone() == (1,)
    assert not page.errors
    page.context.close()
