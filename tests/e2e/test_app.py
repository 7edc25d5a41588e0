"""The real app, launched on a local port with a tiny champion, driven through gradio_client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from gradio_client import Client

from core.labels import LABELS
from core.registry.versions import ModelRegistry
from core.serving.classifier import ChampionService
from core.settings.policies import QueuePolicy, StoreLimits
from feedback.store import FeedbackStore
from feedback.traffic.traffic_set import is_traffic_turn
from testkit.models import tiny_settings
from testkit.server import launched_app
from testkit.stack import wait_until


@pytest.fixture(scope="module")
def served(tiny_champion_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FeedbackStore]]:
    settings = tiny_settings(tiny_champion_home, max_input_chars=5_000, classify_per_minute=1_000)
    store = FeedbackStore(tmp_path_factory.mktemp("app_db") / "feedback.db", StoreLimits(writes_per_minute=1_000))
    with launched_app(settings, store) as (url, _):
        yield url, store


def client(url: str) -> Client:
    return Client(url, verbose=False, download_files=False, analytics_enabled=False)


def test_classify_returns_a_confidence_for_every_label(served) -> None:  # type: ignore[no-untyped-def]
    url, _ = served
    label, info, shown = client(url).predict("Stocks rallied after the earnings report.", api_name="/classify")
    assert len(shown) >= 16  # the server's id of this prediction, which an answer must name
    confidences = {c["label"]: c["confidence"] for c in label["confidences"]}
    assert set(confidences) == set(LABELS)
    assert abs(sum(confidences.values()) - 1.0) < 1e-4
    assert label["label"] == max(confidences, key=confidences.get)
    assert "v0001" in info and "ms" in info


@pytest.mark.parametrize("text", ["", "   \n\t ", "\x00\x01\x02"])
def test_empty_text_gets_a_friendly_message(served, text: str) -> None:  # type: ignore[no-untyped-def]
    url, _ = served
    label, info, shown = client(url).predict(text, api_name="/classify")
    assert "Paste a news headline" in info and shown == ""  # nothing on screen to answer
    assert not label or not label.get("confidences")


def test_oversized_text_is_refused_with_the_limit(served) -> None:  # type: ignore[no-untyped-def]
    url, _ = served
    _, info, _ = client(url).predict("word " * 2_000, api_name="/classify")
    assert "limit is 5,000" in info


def test_text_longer_than_the_model_reads_is_classified_with_a_note(served) -> None:  # type: ignore[no-untyped-def]
    url, _ = served
    label, info, _ = client(url).predict("markets " * 300, api_name="/classify")
    assert label["label"] in LABELS
    assert "only its first part was read" in info


def test_correction_stores_exactly_one_complete_row(served) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    c = client(url)
    text = "The striker signed a new three-year contract with the club on Monday."
    label, _, shown = c.predict(text, api_name="/classify")
    predicted = label["label"]
    correction = next(name for name in LABELS if name != predicted)
    ack = c.predict(correction, shown, text, api_name="/feedback")
    assert "saved" in ack.lower()
    rows = [r for r in store.answers.rows() if r["text"] == text]
    assert len(rows) == 1
    row = rows[0]
    assert row["predicted_label"] == predicted and row["user_label"] == correction
    assert row["kind"] == "correct" and row["model_version"] == "v0001"
    # A server-issued browser id (not signed in), and a keyed hash of the client address.
    assert row["annotator"].startswith("anon:") and not row["verified"]
    assert row["address"].startswith("addr:")
    probabilities = row["probabilities"]
    assert set(probabilities) == set(LABELS)


def test_feedback_before_any_classification_is_explained(served) -> None:  # type: ignore[no-untyped-def]
    url, _ = served
    assert "Classify a text first" in client(url).predict("Sports", "", "", api_name="/feedback")


def test_an_answer_must_name_the_prediction_on_screen_and_its_text(served) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    c = client(url)
    first = "The central bank held rates on Thursday and signalled cuts next spring."
    _, _, old = c.predict(first, api_name="/classify")
    second = "The striker scored twice as the champions won the derby on Sunday."
    _, _, current = c.predict(second, api_name="/classify")
    stale = "This result is no longer on screen: classify the text again."
    assert c.predict("Sports", old, first, api_name="/feedback") == stale  # an earlier prediction of this tab
    assert c.predict("Sports", current, second + " Edited.", api_name="/feedback") == stale  # the box was edited
    assert c.predict("Sports", "", second, api_name="/feedback") == stale
    c.predict("", api_name="/classify")  # an empty submit clears the result: nothing is left to answer
    assert "Classify a text first" in c.predict("Sports", current, second, api_name="/feedback")
    assert not [row for row in store.answers.rows() if row["text"] in (first, second)]
    _, _, current = c.predict(second, api_name="/classify")
    assert c.predict("Sports", current, second, api_name="/feedback").startswith("Thanks, saved as **Sports**")


def test_a_change_of_mind_replaces_the_answer_and_undo_revives_nothing(served) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    c = client(url)
    text = "A new phone chip doubles battery life, its maker said at a trade fair."
    _, _, shown = c.predict(text, api_name="/classify")
    assert c.predict("Sci/Tech", shown, text, api_name="/feedback").startswith("Thanks, saved as **Sci/Tech**")
    assert c.predict("Business", shown, text, api_name="/feedback").startswith("Changed your answer: saved as")
    rows = sorted((r for r in store.answers.rows() if r["text"] == text), key=lambda r: r["id"])
    assert [(r["user_label"], r["status"]) for r in rows] == [("Sci/Tech", "replaced"), ("Business", "ok")]
    assert c.predict(api_name="/undo").startswith("Undone: your answer **Business**")
    assert {r["status"] for r in store.answers.rows() if r["text"] == text} == {"replaced", "undone"}  # none live


def test_queue_serves_a_1000_row_pool_from_its_most_uncertain_items(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import sqlite3

    url, store = served
    pool = tmp_path / "pool.csv"
    topics = ["election", "match", "shares", "software", "summit", "league", "profits", "satellite"]
    lines = ["text"] + [f"Report {i}: news about the {topics[i % 8]} number {i} and its {topics[(i * 3) % 8]}" for i in range(1000)]
    pool.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert store.pool.import_file(pool).added == 1000
    # The server scores the pool in the background (feedback.labelling.scoring), not in the queue's requests.
    wait_until(lambda: (lambda p: p["scored"] == p["items"])(store.stats()["pool"]), 120, "the pool scored")

    c = client(url)
    first_text, progress, _, shown = c.predict(api_name="/queue_next")
    assert first_text.startswith("Report ") and "labelled **0**" in progress
    answered = [first_text]
    for i in range(9):
        text, progress, ack, shown = c.predict(LABELS[i % 4], shown, api_name="/queue_answer")
        assert "Saved as" in ack
        answered.append(text)
    _, progress, _, _ = c.predict("World", shown, api_name="/queue_answer")
    assert "labelled **10**" in progress

    with sqlite3.connect(store.path) as conn:
        uncertainty = dict(conn.execute("SELECT text, uncertainty FROM pool WHERE traffic = 0"))
        traffic = {row[0] for row in conn.execute("SELECT text FROM pool WHERE traffic = 1")}
        stored, annotators = zip(*conn.execute("SELECT text, annotator FROM answers WHERE kind = 'queue' ORDER BY id"),
                                 strict=True)
    assert list(stored) == answered and len(set(annotators)) == 1
    # Traffic items (about a fifth of the pool, QueuePolicy.traffic_share) are offered at the annotator's traffic
    # turns (a fixed draw per turn); every other item is drawn from the 16 most uncertain left
    # (QueuePolicy.spread), in the annotator's own order.
    reports = [text for text in (*uncertainty, *traffic) if text.startswith("Report ")]  # other tests add items too
    assert len(reports) == 1000 and 100 < sum(text in traffic for text in reports) < 300
    turns = [is_traffic_turn(annotators[0], i, QueuePolicy().traffic_share) for i in range(len(stored))]
    assert [text in traffic for text in stored] == turns
    ranked = [text for text, turn in zip(stored, turns, strict=True) if not turn]
    assert ranked  # ten turns of one in five: a draw with no ordinary turn would make the check below empty
    ranking = sorted(uncertainty, key=uncertainty.__getitem__, reverse=True)
    assert all(ranking.index(text) < 16 + i for i, text in enumerate(ranked))


def test_queue_skip_moves_on_without_storing(served) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    c = client(url)
    before = store.answers.count()
    first, _, _, shown = c.predict(api_name="/queue_next")
    second, _, ack, _ = c.predict(shown, api_name="/queue_skip")
    assert ack == "Skipped." and second != first
    assert store.answers.count() == before


def test_checks_are_mixed_in_at_positions_fresh_identities_cannot_predict(served) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    checks = {f"Known-answer check number {i} about the cup final": "Sports" for i in range(6)}
    store.pool.add(list(checks), source="checks", labels=list(checks.values()))
    store.pool.add([f"Ordinary article {i} on markets and matches" for i in range(30)], source="pool")
    firsts = [client(url).predict(api_name="/queue_next")[0] for _ in range(8)]  # 8 fresh identities
    # Each is served a check first with probability 1/3, so all 8 seeing one would mean checks come first.
    assert sum(text in checks for text in firsts) < 8
    c = client(url)
    text, _, _, shown = c.predict(api_name="/queue_next")
    served_texts = [text]
    for _ in range(20):
        text, _, _, shown = c.predict("Sports", shown, api_name="/queue_answer")
        served_texts.append(text)
    assert any(text in checks for text in served_texts), "a labeller answering 20 items meets checks"
    scores = {name: score for name, score in store.stats()["checks_right"].items() if score != "0/0"}
    assert f"{sum(text in checks for text in served_texts[:-1])}/{sum(text in checks for text in served_texts[:-1])}" in scores.values()


def test_queue_answers_and_skips_must_name_the_article_on_screen(served) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    store.pool.add([f"Stale-id story {i} about ports, pitches and profits" for i in range(4)], source="test")
    c = client(url)
    first, _, _, shown = c.predict(api_name="/queue_next")
    before = store.answers.count()
    second, _, ack, next_shown = c.predict("World", shown, api_name="/queue_answer")
    assert "Saved as" in ack and next_shown != shown
    # The same press again (a double tap): it names the article that is gone, so nothing is stored or skipped.
    text, _, ack, again = c.predict("Sports", shown, api_name="/queue_answer")
    assert ack.startswith("Not saved: that article is no longer on screen") and (text, again) == (second, next_shown)
    text, _, ack, again = c.predict(shown, api_name="/queue_skip")
    assert ack.startswith("Not skipped: that article is no longer on screen") and (text, again) == (second, next_shown)
    assert store.answers.count() == before + 1
    newest = store.answers.rows(limit=1)[0]
    assert (newest["text"], newest["user_label"]) == (first, "World")


def test_client_cannot_choose_its_rate_limit_identity_with_a_forged_header() -> None:
    from web.server.identity import ProxyPolicy

    direct = ProxyPolicy()
    # No trusted proxy: the header is ignored, the socket address counts.
    assert direct.client_address("10.0.0.1", "1.1.1.1") == direct.client_address("10.0.0.1", "2.2.2.2") == "10.0.0.1"
    proxied = ProxyPolicy(hops=1, addresses=("10.0.0.0/8",))
    # One trusted proxy appends the real address last; what the client wrote before it does not matter.
    assert proxied.client_address("10.0.0.1", "1.1.1.1, 9.9.9.9") == proxied.client_address("10.0.0.1", "2.2.2.2, 9.9.9.9")
    assert proxied.client_address("10.0.0.1", "9.9.9.9") == "9.9.9.9"
    # A peer that is not the proxy is taken at its own address, whatever it writes.
    assert proxied.client_address("203.0.113.5", "9.9.9.9") == "203.0.113.5"


def test_rate_limit_refuses_a_client_past_its_budget(tiny_champion_home: Path) -> None:
    from app import identity_service
    from web.page.actions import NewsLoopActions
    from web.server.serving import PageLimits

    settings = tiny_settings(tiny_champion_home, classify_per_minute=2)
    service = ChampionService(ModelRegistry(settings.paths.models_dir))
    actions = NewsLoopActions(
        service, None, limits=PageLimits.from_settings(settings), queue=settings.queue, identities=identity_service(settings)
    )
    request = FakeRequest("1.0.0.1")
    answers = [actions.classify("Stocks rose.", request)[1] for _ in range(3)]
    assert "Too many requests" not in answers[1] and "Too many requests" in answers[2]
    assert "Too many requests" not in actions.classify("Stocks rose.", FakeRequest("2.0.0.1"))[1]


class FakeRequest:
    def __init__(self, host: str) -> None:
        self.username = None
        self.headers: dict[str, str] = {}
        self.cookies: dict[str, str] = {}
        self.client = type("Client", (), {"host": host})()
