"""Issue 25 as a maintainer reads a decision, in headless Chromium: a refused and a promoted run, both real
retrains of the tiny model (seconds each), each shown on the admin page with every number equal to the run
record the retrain wrote (the state file, read back by `core.registry.stages.read_last_run`). The preview's expected
duration comes from those runs; a retrain started by another process shows on the page and keeps Retrain off.

The page's numbers are read from its text and compared with the record's fields at the page's precision; a
number on the page that is no field of the record fails the test too."""

from __future__ import annotations

import re
import shutil
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from core.evaluation.decision import Rule, RuleResult
from core.registry.stages import Outcome, RunRecord, read_history, read_last_run
from core.settings.config import Settings
from core.settings.policies import StoreLimits
from feedback.store import FeedbackStore
from testkit.races import finish, retrain_elsewhere
from testkit.server import launched_app
from tests.e2e.test_browser import _wait_for_text
from tests.e2e.test_browser_admin import PASSWORD
from tests.e2e.test_browser_flows import open_page, shot, to_admin
from tests.e2e.test_retrain_run import add_feedback, run_retrain, settings_for

pytestmark = pytest.mark.browser

# The number tokens of a decision: an optional sign, digits (thousands commas, decimals, an exponent), a unit.
NUMBER = re.compile(r"(?<![\w.,])([+-]?)(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?(?:e[+-]\d+)?)(%| points| min)?")


def page_settings(home: Path, **overrides: object) -> Settings:
    """The recipe under which the tiny model learns the seed set (tests/e2e/test_retrain_run.py), with base
    rows replayed so that every row count differs, and an admin password."""
    return settings_for(home, retrain_base_rows=40, admin_password=SecretStr(PASSWORD), classify_per_minute=10_000,
                        queue_per_minute=10_000, **overrides)


@pytest.fixture(scope="module")
def home(tiny_champion_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("decision") / "home"
    shutil.copytree(tiny_champion_home, home)
    add_feedback(page_settings(home), flip=False)  # 40 true labels on seed texts: enough to learn from
    yield home


def sign_in(page) -> None:  # type: ignore[no-untyped-def]
    to_admin(page)
    page.fill("#admin-password input", PASSWORD)
    page.press("#admin-password input", "Enter")
    _wait_for_text(page, "#admin-tiles", "answers")
    _wait_for_text(page, "#retrain-decision", "promoted", "Promoted", "retrain")


# What the record says, in the forms the page prints (core.evaluation.decision: pct, points, p_text) ----------------

def pct(x: float) -> str:
    return f"{x * 100:.2f}"


def points(x: float) -> str:
    return f"{x * 100:+.2f}"


def p_text(x: float) -> str:
    return f"{x:.2g}"


def allowed(record: RunRecord) -> dict[str, set[str]]:
    """Every rendering of every number in the record, by the unit the page gives it ("" for none)."""
    shares, diffs, bare = set(), set(), set()
    for r in record.rules:
        shares |= {pct(x) for x in (r.champion, r.challenger, r.confidence) if x is not None}
        for x in (r.difference, r.threshold, r.bound):
            if x is not None:
                diffs |= {points(x), points(x).lstrip("+")}
        for x in (r.threshold, r.p_value):
            if x is not None:
                bare |= {p_text(x), f"{x:g}", f"{x:.0f}"}
        counts = [r.n, r.challenger_only, r.champion_only, r.challenger_only + r.champion_only, len(r.tests)]
        for t in r.tests:
            counts += [t.n, t.challenger_only, t.champion_only]
            bare.add(p_text(t.p_value))
        bare |= {f"{n:,}" for n in counts}
    bare |= {f"{n:,}" for n in record.rows.values()}
    return {"%": shares, " points": diffs, " min": {f"{record.seconds / 60:.1f}"}, "": bare}


def numbers_on(text: str) -> list[tuple[str, str]]:
    """(number, unit) for every number in the page's text."""
    return [(sign + digits, unit or "") for sign, digits, unit in NUMBER.findall(text)]


def one(pattern: str, text: str) -> tuple[str, ...]:
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not in the decision: {text}"
    return found.groups()


def check_rows_and_time(text: str, record: RunRecord) -> None:
    rows = record.rows
    shown = one(r"It trained on ([\d,]+) feedback and ([\d,]+) base rows and was judged on ([\d,]+) base-validation, "
                r"([\d,]+) held-out feedback and ([\d,]+) traffic rows, in ([\d.]+) min\.", text)
    assert shown == (f"{rows['feedback_train']:,}", f"{rows['base_train']:,}", f"{rows['base_validation']:,}",
                     f"{rows['feedback_holdout']:,}", f"{rows['traffic']:,}", f"{record.seconds / 60:.1f}")


def check_margin(text: str, r: RuleResult) -> None:
    assert r.challenger is not None and r.champion is not None and r.threshold is not None
    shown = one(r"it scored ([\d.]+)% against ([\d.]+)% \(macro-F1[^)]*\); it needed a gain of ([+-][\d.]+) points", text)
    assert shown == (pct(r.challenger), pct(r.champion), points(r.threshold))


def check_gain(text: str, r: RuleResult) -> None:
    assert r.p_value is not None and r.threshold is not None
    best = min(r.tests, key=lambda t: t.p_value)
    shown = one(r"significantly better \(p = ([^,]+), below ([^)]+)\)\. On .+? \(([\d,]+) articles\) the new model "
                r"alone was right on ([\d,]+), the current one alone on ([\d,]+)\.", text)
    assert shown == (p_text(r.p_value), f"{r.threshold:g}", f"{best.n:,}", f"{best.challenger_only:,}",
                     f"{best.champion_only:,}")


def check_base_accuracy(text: str, r: RuleResult) -> None:
    assert None not in (r.champion, r.challenger, r.difference, r.threshold, r.bound, r.confidence)
    shown = one(r"Accuracy on the base validation data: ([\d.]+)% → ([\d.]+)% \(([+-][\d.]+) points, ([\d,]+) articles\)\. "
                r"A loss of ([\d.]+) points or more is ruled out \(lower bound ([+-][\d.]+) points at ([\d.]+)% confidence\)",
                text)
    assert shown == (pct(r.champion), pct(r.challenger), points(r.difference), f"{r.n:,}",  # type: ignore[arg-type]
                     points(r.threshold).lstrip("+"), points(r.bound), pct(r.confidence))  # type: ignore[arg-type]


def check_every_number_is_the_records(text: str, record: RunRecord) -> None:
    """No number on the page that is not a field of the record (in the unit the page gives it)."""
    fields = allowed(record)
    stray = [(n, unit) for n, unit in numbers_on(text) if n not in fields[unit]]
    assert stray == [], f"numbers on the page that the record does not hold: {stray}\n{text}"


def rule(record: RunRecord, which: Rule) -> RuleResult:
    [found] = [r for r in record.rules if r.rule == which]
    return found


def decision_on_page(page) -> str:  # type: ignore[no-untyped-def]
    return " ".join(page.inner_text("#retrain-decision").split())


def test_a_refused_and_a_promoted_run_show_every_number_of_their_records(browser, home: Path) -> None:
    # A real retrain the gate refuses: the margin asked for (90 points of macro-F1) is out of reach.
    refused = run_retrain(page_settings(home, gate_margin=0.9))
    record = read_last_run(page_settings(home).paths)
    assert record is not None and record.decision == Outcome.REFUSED == refused.decision and record.challenger
    assert [r.rule for r in record.failed_rules] == [Rule.MARGIN], record.reasons

    settings = page_settings(home)
    store = FeedbackStore(settings.paths.feedback_db, StoreLimits(writes_per_minute=10_000))
    with launched_app(settings, store) as (url, _):
        page = open_page(browser, url)
        sign_in(page)
        text = decision_on_page(page)
        assert one(r"Not promoted\. (v\d+) stays in service\.", text) == (record.champion_before,)
        check_margin(text, rule(record, Rule.MARGIN))
        check_rows_and_time(text, record)
        check_every_number_is_the_records(text, record)
        shot(page, "admin-decision-refused")

        # A real retrain the gate promotes, while the page is open: Refresh shows its record.
        promoted = run_retrain(settings)
        record = read_last_run(settings.paths)
        assert record is not None and record.decision == Outcome.PROMOTED == promoted.decision
        page.click("#admin-refresh")
        _wait_for_text(page, "#retrain-decision", "Promoted")
        text = decision_on_page(page)
        assert one(r"Promoted\. The new model (v\d+) replaced (v\d+)\.", text) == (
            record.champion_after, record.champion_before)
        check_gain(text, rule(record, Rule.GAIN))
        check_base_accuracy(text, rule(record, Rule.BASE_ACCURACY))
        check_rows_and_time(text, record)
        check_every_number_is_the_records(text, record)
        shot(page, "admin-decision-promoted")

        # The preview's duration is this host's, measured: the median of the two runs above (whole minutes, or
        # seconds under a minute and a half).
        history = read_history(settings.paths)
        assert [r.decision for r in history[-2:]] == [Outcome.REFUSED, Outcome.PROMOTED]
        median = statistics.median(r.seconds for r in history if r.trained)
        page.click("#retrain-btn")
        preview = " ".join(_wait_for_text(page, "#retrain-confirm-text", "should take").split())
        took = f"about {median:.0f} s" if median < 90 else f"about {median / 60:.0f} min"
        assert f"{took}, measured on this host (the median of its last 2 retrains)" in preview
        page.click("#retrain-cancel")
        assert not page.errors
        page.context.close()


def test_a_retrain_started_elsewhere_shows_and_keeps_retrain_off(browser, home: Path) -> None:
    settings = page_settings(home)
    store = FeedbackStore(settings.paths.feedback_db, StoreLimits(writes_per_minute=10_000))
    with launched_app(settings, store) as (url, _):
        page = open_page(browser, url)
        sign_in(page)
        assert page.locator("#retrain-btn").is_enabled()
        # Another process takes the retrain lock and enters training, as `python -m retrain run` does.
        with retrain_elsewhere(home) as other:
            shown = _wait_for_text(page, "#retrain-progress", "started elsewhere")  # within one watch tick
            assert "Training the challenger" in shown and f"process {other.pid}" in shown
            page.wait_for_function("() => document.querySelector('#retrain-btn').disabled")
            assert "one is running" in page.inner_text("#retrain-btn")
            logs: Any = sorted((home / "logs").glob("*")) if (home / "logs").exists() else []
            finish(other)
        page.wait_for_function("() => !document.querySelector('#retrain-btn').disabled")
        assert "started elsewhere" not in page.inner_text("#retrain-progress")
        assert (sorted((home / "logs").glob("*")) if (home / "logs").exists() else []) == logs  # no run started here
        assert not page.errors
        page.context.close()
