"""GET /metrics (web.server.metrics) on the real server: what REST and page traffic leave in it, parsed as Prometheus
reads it; off when NEWSLOOP_METRICS is off; behind a bearer token when one is set, and refused on a Space without."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from gradio_client import Client
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from core.data import InputForm
from core.evaluation.estimate import Tally
from core.input_forms import FORM_NAMES, guess_form
from core.labels import LABELS
from core.settings.policies import StoreLimits
from feedback.store import FeedbackStore
from feedback.traffic.served import TallyKey, read_tallies, utc_day
from testkit.models import tiny_settings
from testkit.server import launched_app
from web.server.metrics import gradio_bucket

MAX_CHARS = 500
HEADLINE = "Stocks rallied after the central bank held rates."
ARTICLE = ("Wall St. Bears Claw Back Into the Black (Reuters) Reuters - Short-sellers, Wall Street's dwindling band "
           "of ultra-cynics, are seeing green again.")
PAGE_TEXT = "Late goal wins the cup for the champions."  # a headline too, classified and answered on the page

Samples = dict[str, list[tuple[dict[str, str], float]]]


def scrape(url: str, **kwargs: object) -> Samples:
    response = httpx.get(f"{url}metrics", timeout=30, **kwargs)  # type: ignore[arg-type]
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    found = [v for got, v in samples.get(name, []) if all(got.get(k) == want for k, want in labels.items())]
    assert len(found) == 1, (name, labels, samples.get(name))
    return found[0]


@pytest.fixture(scope="module")
def served(tiny_champion_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FeedbackStore]]:
    settings = tiny_settings(tiny_champion_home, max_input_chars=MAX_CHARS, classify_per_minute=100_000)
    store = FeedbackStore(tmp_path_factory.mktemp("metrics_db") / "feedback.db", StoreLimits(writes_per_minute=1_000))
    store.pool.add(["An open item of the labelling pool.", "Another one, not yet labelled."], source="test")
    with launched_app(settings, store) as (url, _):
        yield url, store


def test_metrics_count_requests_errors_answers_and_estimate_accuracy_by_form(served) -> None:  # type: ignore[no-untyped-def]
    url, store = served
    assert guess_form(HEADLINE) is InputForm.TITLE and guess_form(ARTICLE) is InputForm.FULL
    served_probs: dict[str, list[list[float]]] = {}
    for text in (HEADLINE, ARTICLE):
        response = httpx.post(f"{url}api/v1/classify", json={"text": text}, timeout=60)
        assert response.status_code == 200, response.text
        probabilities = response.json()["results"][0]["probabilities"]
        served_probs.setdefault(FORM_NAMES[guess_form(text).value], []).append([probabilities[n] for n in LABELS])
    too_long = httpx.post(f"{url}api/v1/classify", json={"text": "word " * MAX_CHARS}, timeout=60)
    assert too_long.status_code == 413

    page = Client(url, verbose=False, download_files=False, analytics_enabled=False)
    for refused in ("   ", "word " * MAX_CHARS):  # the page refuses these with a message, and counts them
        label, note, _ = page.predict(refused, api_name="/classify")
        assert label is None or not label.get("confidences"), note
    label, _, shown = page.predict(PAGE_TEXT, api_name="/classify")
    assert "saved" in page.predict(label["label"], shown, PAGE_TEXT, api_name="/feedback").lower()
    [row] = [r for r in store.answers.rows() if r["text"] == PAGE_TEXT]
    served_probs["headline"].append([row["probabilities"][n] for n in LABELS])  # what the page was shown

    samples = scrape(url)
    requests = "newsloop_http_requests_total"
    assert value(samples, requests, route="/api/v1/classify", method="POST", status="200") == 2
    assert value(samples, requests, route="/api/v1/classify", method="POST", status="413") == 1
    assert value(samples, requests, route="/gradio_api/queue/join", method="POST", status="200") >= 2
    # Route templates and buckets only: no raw path of Gradio's (session ids, file names) becomes a label.
    # The maintainers' page's requests (/admin/...) in the same buckets, under its path.
    routes = {_unmounted(labels["route"]) for labels, _ in samples[requests]}
    assert routes <= {"/api/v1/classify", "/", "/config", "static", "other"} | {
        r for r in routes if r.startswith("/gradio_api/") and r.count("/") <= 3}
    assert value(samples, "newsloop_http_request_duration_seconds_count", route="/api/v1/classify") == 3
    assert value(samples, "newsloop_classify_errors_total", source="api", reason="too_long") == 1
    assert value(samples, "newsloop_classify_errors_total", source="api", reason="rate_limited") == 0
    assert value(samples, "newsloop_classify_errors_total", source="page", reason="empty") == 1
    assert value(samples, "newsloop_classify_errors_total", source="page", reason="too_long") == 1
    assert value(samples, "newsloop_classify_errors_total", source="page", reason="rate_limited") == 0
    assert value(samples, "newsloop_answers_total", status=row["status"]) == 1
    assert value(samples, "newsloop_champion_info", version="v0001") == 1
    assert value(samples, "newsloop_queue_depth") == 2
    assert value(samples, "newsloop_retrain_running") == 0
    assert value(samples, "newsloop_retrain_runs", outcome="promoted") == 0  # the tiny home's champion: no retrain

    estimated = {labels["form"]: v for labels, v in samples["newsloop_estimated_accuracy"]}
    assert set(estimated) == {"headline", "full"}
    for form, probs in served_probs.items():
        expected = Tally().add(np.asarray(probs)).estimate().accuracy
        assert 0.0 < estimated[form] <= 1.0
        assert estimated[form] == pytest.approx(expected, rel=1e-9)
        assert value(samples, "newsloop_estimated_texts", form=form) == len(probs)

    again = scrape(url)  # the first scrape is counted once answered
    assert value(again, requests, route="/metrics", method="GET", status="200") == 1


def test_served_tallies_reach_the_store_when_the_server_stops_whether_or_not_metrics_are_served(
        tiny_champion_home: Path, tmp_path: Path) -> None:
    store = FeedbackStore(tmp_path / "feedback.db")
    settings = tiny_settings(tiny_champion_home, metrics=False, classify_per_minute=100_000)
    served: dict[str, list[list[float]]] = {}
    with launched_app(settings, store) as (url, _):
        for text in (HEADLINE, ARTICLE, HEADLINE):
            response = httpx.post(f"{url}api/v1/classify", json={"text": text}, timeout=60)
            assert response.status_code == 200, response.text
            probabilities = response.json()["results"][0]["probabilities"]
            served.setdefault(guess_form(text).value, []).append([probabilities[n] for n in LABELS])
    tallies = read_tallies(store.database)
    assert set(tallies) == {TallyKey(utc_day(), form, "v0001") for form in served}
    for form, probs in served.items():
        written = tallies[TallyKey(utc_day(), form, "v0001")]
        assert written.n == len(probs)
        assert written.estimate().accuracy == pytest.approx(Tally().add(np.asarray(probs)).estimate().accuracy)


def test_metrics_off_is_not_found(tiny_champion_home: Path) -> None:
    with launched_app(tiny_settings(tiny_champion_home, metrics=False)) as (url, _):
        assert httpx.get(f"{url}metrics", timeout=30).status_code == 404
        assert httpx.get(f"{url}healthz", timeout=30).status_code == 200


def test_a_token_is_required_once_set(tiny_champion_home: Path) -> None:
    settings = tiny_settings(tiny_champion_home, metrics_token=SecretStr("scrape-me-please"))
    with launched_app(settings) as (url, _):
        assert httpx.get(f"{url}metrics", timeout=30).status_code == 401
        wrong = httpx.get(f"{url}metrics", headers={"authorization": "Bearer nope"}, timeout=30)
        assert wrong.status_code == 401
        assert "newsloop_champion_info" in scrape(url, headers={"authorization": "Bearer scrape-me-please"})


def test_on_a_space_metrics_need_a_token(tiny_champion_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPACE_ID", "newsloop/demo")
    with launched_app(tiny_settings(tiny_champion_home)) as (url, _):
        refused = httpx.get(f"{url}metrics", timeout=30)
        assert refused.status_code == 403 and "NEWSLOOP_METRICS_TOKEN" in refused.text


def _unmounted(route: str) -> str:
    """A route of the maintainers' page as the same route of the labellers' ("/admin/other" -> "other")."""
    return route.removeprefix("/admin/") if route in ("/admin/other", "/admin/static") else route.removeprefix("/admin")


@pytest.mark.parametrize(("path", "bucket"), [
    ("/gradio_api/queue/data", "/gradio_api/queue/data"),
    ("/gradio_api/queue/join", "/gradio_api/queue/join"),
    ("/gradio_api/file=/tmp/gradio/abc123/x.png", "/gradio_api/file"),
    ("/gradio_api/heartbeat/8d0f3a", "/gradio_api/heartbeat"),
    ("/gradio_api/some/new/route", "/gradio_api/other"),
    ("/assets/index-4f2a.js", "static"),
    ("/", "/"),
    ("/wp-login.php", "other"),
])
def test_gradio_paths_fall_into_a_few_buckets(path: str, bucket: str) -> None:
    assert gradio_bucket(path) == bucket


def test_a_page_mounted_below_the_root_is_bucketed_under_its_path() -> None:
    """The maintainers' page (/admin/) gets the same few buckets as the labellers', named under its path."""
    from starlette.routing import Mount

    from web.server.metrics import MetricsMiddleware

    async def nothing(scope: object, receive: object, send: object) -> None: ...

    middleware = MetricsMiddleware(nothing, None, [Mount("/admin", app=nothing), Mount("", app=nothing)])  # type: ignore[arg-type]
    assert middleware.route_of("/admin/gradio_api/queue/join") == "/admin/gradio_api/queue/join"
    assert middleware.route_of("/admin/gradio_api/file=/tmp/gradio/x.csv") == "/admin/gradio_api/file"
    assert middleware.route_of("/admin/") == "/admin/" and middleware.route_of("/admin/wp-login.php") == "/admin/other"
    assert middleware.route_of("/gradio_api/queue/join") == "/gradio_api/queue/join"
