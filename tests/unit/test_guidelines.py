"""The labelling guidelines follow the topic list: a section per topic from its description, AG News's hard cases
only for AG News's topics, a rename shown at once, and the maintainer told what changed since their text was saved."""

from __future__ import annotations

from pathlib import Path

from core.labels import LABELS
from feedback.labelling.guidelines import changes_since, render
from feedback.store import FeedbackStore
from web.admin.guidelines_view import version_line

AG_NEWS_WORDS = ("World", "Sports", "Business", "Sci/Tech", "earnings", "chip")


def test_a_list_of_your_own_gets_a_section_per_topic_and_no_ag_news(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "feedback.db")
    store.topics.seed(("Weather", "Elections", "Football"))
    described = store.topics.current().describe("Weather", "Forecasts, storms, heat and the climate's effects")
    store.topics.commit(described, 1)
    taxonomy = store.topics.current()
    shown = render(store.guidelines.current(taxonomy).text, taxonomy)
    assert shown.startswith("**The topics**\n\n- **Weather**: Forecasts, storms, heat and the climate's effects\n"
                            "- **Elections**\n- **Football**\n")
    assert not any(word in shown for word in AG_NEWS_WORDS)


def test_ag_news_topics_are_described_and_a_rename_shows_everywhere_at_once(tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "feedback.db")
    store.topics.seed(LABELS)
    store.topics.commit(store.topics.current().rename("Business", "Economy"), 1)
    taxonomy = store.topics.current()
    shown = render(store.guidelines.current(taxonomy).text, taxonomy)
    assert "- **Economy**: companies, markets, earnings" in shown
    assert "→ **Economy** (the story is money)" in shown  # the built-in hard cases name it as it is now
    assert "Business" not in shown


def test_the_maintainer_is_told_how_the_topics_changed_since_their_text_was_saved(tmp_path: Path) -> None:
    clock = iter(range(1_000, 2_000, 10))
    store = FeedbackStore(tmp_path / "feedback.db", clock=lambda: float(next(clock)))
    store.topics.seed(LABELS)
    saved, _ = store.guidelines.save("Chip earnings are **Business**.", "maya")
    store.topics.commit(store.topics.current().rename("Business", "Economy"), 1)
    store.topics.commit(store.topics.current().add("Health"), 2)
    taxonomy = store.topics.current()
    assert changes_since(taxonomy, saved.saved_at) == ["Business renamed Economy", "Health added"]
    line = version_line(saved, store.guidelines.history(), taxonomy)
    assert "The topics changed since it was saved**: Business renamed Economy; Health added." in line
    assert "- **Economy**" in render(saved.text, taxonomy) and "- **Health**" in render(saved.text, taxonomy)
    newer, _ = store.guidelines.save("Chip earnings are **Economy**.", "maya")
    assert "changed since" not in version_line(newer, store.guidelines.history(), store.topics.current())
