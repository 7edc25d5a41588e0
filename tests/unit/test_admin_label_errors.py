"""The admin view's "Possible label errors" panel through its handlers: list, relabel one, exclude two in bulk, undo
one, keep; a stranger changes nothing; and the next retrain's rows read through exactly those decisions."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from core.data import Example
from core.labels import LABELS, label_index
from core.text import text_hash
from feedback.store import FeedbackStore
from feedback.training.fixes import read_fixes
from feedback.trust.label_errors import Candidate, Source
from testkit.fakes import FakeAdmin
from web.admin.label_errors_view import ANY, SUGGESTED, LabelErrorsPanel

ROWS = [Example("Stocks fall on rate fears", label_index("Sports")),
        Example("New chip doubles battery life", label_index("World")),
        Example("Ceasefire holds in the north", label_index("Business")),
        Example("Striker signs for the champions", label_index("World")),
        Example("Quarterly profit beats forecasts", label_index("Sci/Tech"))]
SUGGESTIONS = ["Business", "Sci/Tech", "World", "Sports", "Business"]
NEW_YEAR = 1767225600.0  # 2026-01-01 00:00 UTC
SEARCH = "the search of 2026-01-01 00:00 UTC (1,200 rows read, 5 found)"


class _Jobs:
    def __init__(self) -> None:
        self.started: list[tuple[str, ...]] = []
        self.running = False

    def start(self, *args: str) -> str:
        self.started.append(args)
        self.running = True
        return f"Started `retrain {' '.join(args)}`."

    def status(self) -> SimpleNamespace:
        command = " ".join(self.started[-1]) if self.started else ""
        return SimpleNamespace(running=self.running, command=command, exit_code=None if self.running else 0,
                               log_tail="")




def _panel(tmp_path: Path, admin: bool = True) -> tuple[LabelErrorsPanel, FeedbackStore, list[int]]:
    store = FeedbackStore(tmp_path / "feedback.db", clock=lambda: NEW_YEAR)
    store.label_errors.save_search("20260101-000000", [
        Candidate(Source.BASE, text_hash(e.text), f"train.csv row {i + 1}", e.text, LABELS[e.label], s, 0.9 - i / 10)
        for i, (e, s) in enumerate(zip(ROWS, SUGGESTIONS, strict=True))], rows=1200)
    ids = [r["id"] for r in store.label_errors.open_candidates()[0]]
    return LabelErrorsPanel(FakeAdmin(store, admin, jobs=_Jobs())), store, ids  # type: ignore[arg-type]


def test_the_list_shows_label_suggestion_how_sure_and_where_from(tmp_path: Path) -> None:
    panel, _, ids = _panel(tmp_path)
    summary, listing, decisions = panel.search(ANY, request=object())  # type: ignore[arg-type]
    assert summary.startswith(f"**5** possible label error(s) to decide, from {SEARCH}, the likeliest first.")
    assert listing["choices"][0] == (f"#{ids[0]} · Sports → Business 90% · train.csv row 1\nStocks fall on rate fears",
                                     ids[0])
    assert listing["value"] == [] and decisions["choices"] == []
    assert panel.select_all(ANY, request=object())[1]["value"] == ids  # type: ignore[arg-type]


def test_relabel_one_exclude_two_undo_one_then_training_reads_exactly_those(tmp_path: Path) -> None:
    panel, store, ids = _panel(tmp_path)
    message, _, listing, decisions = panel.act("relabel")([ids[0]], SUGGESTED, ANY, request=object())
    assert message == f"Relabelled 1 row(s): #{ids[0]}." and len(listing["choices"]) == 4
    message, _, listing, decisions = panel.act("exclude")([ids[1], ids[2]], SUGGESTED, ANY, request=object())
    assert message == f"Excluded 2 row(s): #{ids[1]}, #{ids[2]}." and len(listing["choices"]) == 2
    [(label, newest), *_] = decisions["choices"]
    assert "excluded (Business) · user:maya" in label
    message, _, listing, decisions = panel.undo([newest], ANY, request=object())
    assert message == f"Undid 1 decision(s): #{newest}." and len(listing["choices"]) == 3
    assert len(decisions["choices"]) == 2
    panel.act("relabel")([ids[3]], "Business", ANY, request=object())  # a topic other than the suggested one
    panel.act("keep")([ids[4]], SUGGESTED, ANY, request=object())
    trained = read_fixes(store).examples(ROWS)
    assert [(e.text, LABELS[e.label]) for e in trained] == [
        (ROWS[0].text, "Business"), (ROWS[2].text, "Business"), (ROWS[3].text, "Business"), (ROWS[4].text, "Sci/Tech")]
    summary, listing, _ = panel.search(ANY, request=object())  # type: ignore[arg-type]
    assert summary.startswith("**1** possible") and [v for _, v in listing["choices"]] == [ids[2]]  # undone: back
    panel.act("keep")([ids[2]], SUGGESTED, ANY, request=object())
    summary = panel.search(ANY, request=object())[0]  # type: ignore[arg-type]
    assert summary == f"Every candidate of {SEARCH} has been decided."


def test_nothing_ticked_or_a_stranger_changes_nothing(tmp_path: Path) -> None:
    panel, store, ids = _panel(tmp_path)
    assert panel.act("keep")([], SUGGESTED, ANY, request=object())[0].startswith("Tick one or more rows first")
    stranger = LabelErrorsPanel(FakeAdmin(store, admin=False, jobs=_Jobs()))  # type: ignore[arg-type]
    assert stranger.act("exclude")(ids, SUGGESTED, ANY, request=object())[0] == "Sign in first."
    assert stranger.find(request=object())[0] == "Sign in first."  # type: ignore[arg-type]
    assert store.label_errors.decisions() == []


def test_a_search_that_found_nothing_says_so_instead_of_listing_an_older_one(tmp_path: Path) -> None:
    panel, store, _ = _panel(tmp_path)
    store.label_errors.save_search("20260102-000000", [], rows=1200)
    summary, listing, _ = panel.search(ANY, request=object())  # type: ignore[arg-type]
    assert summary == "No label looks wrong to the search of 2026-01-01 00:00 UTC (1,200 rows read, 0 found)."
    assert listing["choices"] == []


def test_search_button_starts_the_command_as_a_job_and_the_panel_refreshes_itself_when_it_ends(tmp_path: Path) -> None:
    panel, store, _ = _panel(tmp_path)
    message, summary, timer = panel.find(request=object())  # type: ignore[arg-type]
    assert summary.startswith("**Searching for label errors…**") and "No search yet" not in summary
    assert timer.active and panel.admin.jobs.started == [("label-errors",)]  # type: ignore[attr-defined]
    # Opening the panel meanwhile says it is searching, first, above what the last search found.
    assert panel.search(ANY, request=object())[0].startswith("**Searching for label errors…**")  # type: ignore[arg-type]
    assert all(part == {"__type__": "update"} for part in panel.poll(ANY, request=object())[:4])  # type: ignore[arg-type]
    store.label_errors.save_search("20260102-000000", [], rows=1300, data="data: train.csv (1,300 rows)",
                                   left_out="Health (2 rows): fewer than 20 labelled rows")
    panel.admin.jobs.running = False  # type: ignore[attr-defined]
    summary, listing, _, ended, timer = panel.poll(ANY, request=object())  # type: ignore[arg-type]
    assert summary == ("No label looks wrong to the search of 2026-01-01 00:00 UTC of data: train.csv (1,300 rows) "
                       "and the trusted answers (1,300 rows read, 0 found). Left aside: Health (2 rows): fewer than 20 "
                       "labelled rows.")
    assert listing["choices"] == [] and ended == "" and not timer.active
