"""The served app across taxonomy changes (the tiny champion, a real store on SQLite and on PostgreSQL, gradio_client
and the REST API): a
topic added while the server runs is listed and answerable at once, a renamed one is shown by its new name and
still answers under its key, a merged-away one is no longer offered, a split offers the new topic and reads the
parent's earlier answers as "parent or child", and answers given before each change stay readable."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from gradio_client import Client

from core.labels import LABELS
from core.settings.policies import StoreLimits
from feedback.store import FeedbackStore
from testkit.models import tiny_settings
from testkit.pg_cluster import StoreFactory
from testkit.server import launched_app
from tests.e2e.test_metrics import scrape, value
from web.page.classify_view import classify_buttons
from web.server.topics import LEARNING, PageTopics


@pytest.fixture
def served(tiny_champion_home: Path, tmp_path: Path,
           make_store: StoreFactory) -> Iterator[tuple[str, FeedbackStore, object]]:
    settings = tiny_settings(tiny_champion_home, classify_per_minute=1_000, queue_per_minute=1_000)
    store = make_store(tmp_path / "feedback.db", StoreLimits(writes_per_minute=1_000))
    store.pool.add([f"Pool article {i} about a clinic, a match and a merger" for i in range(5)], source="test")
    with launched_app(settings, store) as (url, service):
        yield url, store, service


def _get(url: str, path: str) -> dict:
    with urllib.request.urlopen(url.rstrip("/") + path, timeout=30) as response:
        return json.loads(response.read())


def _post(url: str, path: str, body: dict) -> dict:
    request = urllib.request.Request(url.rstrip("/") + path, json.dumps(body).encode(),
                                     {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _client(url: str) -> Client:
    return Client(url, verbose=False, download_files=False, analytics_enabled=False)


def _answer(c: Client, label: str, text: str) -> str:
    _, _, shown = c.predict(text, api_name="/classify")
    return str(c.predict(label, shown, text, api_name="/feedback"))


def test_add_rename_and_merge_reach_the_api_and_the_page_at_once(served) -> None:  # type: ignore[no-untyped-def]
    url, store, service = served
    c = _client(url)
    topics = PageTopics(service, store)
    listed = _get(url, "/api/v1/topics")
    assert listed["version"] == 1 and [t["name"] for t in listed["topics"]] == list(LABELS)
    assert listed["model_topics"] == list(LABELS) and not any(t["new"] for t in listed["topics"])
    before = "Parliament passed the budget after a long night of debate, the speaker said."
    assert _answer(c, "Business", before).startswith("Thanks, saved as **Business**")

    # Add: listed as new (the model does not predict it), answerable on Classify and in the queue at once.
    taxonomy = store.topics.current(LABELS)
    store.topics.commit(taxonomy.add("Health", "Medicine and hospitals", by="test"), taxonomy.version)
    listed = _get(url, "/api/v1/topics")
    assert listed["version"] == 2 and listed["topics"][-1] == {
        "key": "Health", "name": "Health", "description": "Medicine and hospitals", "new": True}
    assert listed["model_topics"] == list(LABELS)  # the served model predicts its own topics
    health = "The clinic opened a new heart ward for older patients on Monday."
    assert _answer(c, "Health", health).startswith("Thanks, saved as **Health**")
    item = c.predict(api_name="/queue_next")[3]
    assert c.predict("Health", item, api_name="/queue_answer")[2].startswith("Saved as **Health**")
    buttons = classify_buttons(topics.offered())
    assert 'id="fb-4" class="topic-btn secondary" disabled data-topic="Health"' in buttons and LEARNING in buttons
    samples = scrape(url)  # /metrics: the list's version, and which topics the model is still learning
    assert value(samples, "newsloop_taxonomy_version") == 2
    assert value(samples, "newsloop_topic_learning", topic="Health", topic_name="Health") == 1
    assert value(samples, "newsloop_topic_learning", topic="World", topic_name="World") == 0

    # Rename: display only; the model's confidences and the API show the new name, the key stays.
    taxonomy = store.topics.current()
    store.topics.commit(taxonomy.rename("Sports", "Athletics"), taxonomy.version)
    confidences = {x["label"] for x in c.predict("The striker scored twice.", api_name="/classify")[0]["confidences"]}
    assert confidences == {"World", "Athletics", "Business", "Sci/Tech"}
    result = _post(url, "/api/v1/classify", {"text": "The striker scored twice in the final."})["results"][0]
    assert set(result["probabilities"]) == {"World", "Athletics", "Business", "Sci/Tech"}
    assert result["label"] == store.topics.current().name_of(result["key"])
    sports = "The champions signed a new goalkeeper on a three-year contract."
    assert _answer(c, "Athletics", sports).startswith("Thanks, saved as **Athletics**")
    buttons = classify_buttons(topics.offered())  # shown by its name, sent by its key
    assert 'data-topic="Sports" data-name="Athletics"' in buttons and "actually Sports" not in buttons

    # Merge: Business is no longer offered nor listed; an answer naming it counts as its target.
    taxonomy = store.topics.current()
    store.topics.commit(taxonomy.merge("Business", "World"), taxonomy.version)
    listed = _get(url, "/api/v1/topics")
    assert [t["name"] for t in listed["topics"]] == ["World", "Athletics", "Sci/Tech", "Health"]
    assert 'data-topic="Business"' not in classify_buttons(topics.offered())
    assert _answer(c, "Weather", "Rain all week, forecasters said.") == (
        "Not saved: the topic must be one of World, Athletics, Sci/Tech, Health.")

    # Every answer stays readable under the newest version: the old Business one now means World.
    labels = {r["text"]: r["user_label"] for r in store.answers.rows()}
    assert labels[before] == "World" and labels[health] == "Health" and labels[sports] == "Sports"

    # Split: Space is carved out of Sci/Tech: offered at once, marked new; earlier Sci/Tech answers mean "Sci/Tech
    # or Space" (a set, not a guess), answers given after the split are exact.
    earlier = "The chip maker showed a faster laptop processor at the fair."
    assert _answer(c, "Sci/Tech", earlier).startswith("Thanks, saved as **Sci/Tech**")
    taxonomy = store.topics.current()
    store.topics.commit(taxonomy.split("Sci/Tech", "Space", "Rockets, planets and telescopes"), taxonomy.version)
    listed = _get(url, "/api/v1/topics")
    assert [(t["name"], t["new"]) for t in listed["topics"]] == [
        ("World", False), ("Athletics", False), ("Sci/Tech", False), ("Space", True), ("Health", True)]
    buttons = classify_buttons(topics.offered())
    assert 'data-topic="Space"' in buttons and buttons.index('data-topic="Space"') < buttons.index('data-topic="Health"')
    later = "The probe reached orbit around the red planet after a seven-month flight."
    assert _answer(c, "Space", later).startswith("Thanks, saved as **Space**")
    labels = {r["text"]: r["user_label"] for r in store.answers.rows()}
    assert labels[earlier] == "Sci/Tech\x1fSpace" and labels[later] == "Space" and labels[before] == "World"
