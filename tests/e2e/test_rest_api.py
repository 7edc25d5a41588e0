"""The JSON API (web/server/api.py) through real HTTP: answers, status codes, limits, bad input, shared rate limit, OpenAPI.

Most cases drive the real server (`launched_app`: page, API, browser ids); the rate-limit and no-model
cases serve the router alone, around a limiter and a registry the test controls.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import uvicorn
from fastapi import FastAPI, Request

from core.host.net import free_port
from core.labels import LABELS
from core.registry.versions import ModelRegistry
from core.serving.classifier import ChampionService
from core.serving.limits import RateLimiter
from testkit.models import tiny_settings
from testkit.server import launched_app
from web.server.api import build_api
from web.server.serving import PageLimits

MAX_CHARS = 500
MAX_TEXTS = 4  # the router-only server's bound
NEWS = "Stocks rallied after the central bank left interest rates unchanged."


def _address(request: Request) -> str:
    # Stands in for the page's identity rule (web.server.identity), which the real server passes.
    return "addr:" + (request.client.host if request.client else "")


@contextlib.contextmanager
def serve(service: ChampionService, limiter: RateLimiter, per_minute: int = 1000) -> Iterator[str]:
    """A real uvicorn server on a free loopback port around the API router alone."""
    app = FastAPI(title="NewsLoop API (test)")
    limits = PageLimits(max_input_chars=MAX_CHARS, classify_per_minute=per_minute)
    app.include_router(build_api(service, limits, limiter, _address, max_batch_texts=MAX_TEXTS))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def service(tiny_champion_home: Path) -> ChampionService:
    # A wait long enough that concurrent single texts reliably share a forward pass in the batching test.
    return ChampionService(ModelRegistry(tiny_champion_home / "models"), batch_wait_ms=30, max_batch=16)


@pytest.fixture(scope="module")
def settings(tiny_champion_home: Path):  # type: ignore[no-untyped-def]
    return tiny_settings(tiny_champion_home, max_input_chars=MAX_CHARS, classify_per_minute=100_000)


@pytest.fixture(scope="module")
def url(settings, service: ChampionService) -> Iterator[str]:  # type: ignore[no-untyped-def]
    with launched_app(settings, None, service) as (base, _):
        yield base.rstrip("/")


def post(url: str, body: object = None, **kwargs: object) -> httpx.Response:
    if body is not None:
        kwargs["json"] = body
    return httpx.post(f"{url}/api/v1/classify", timeout=30, **kwargs)  # type: ignore[arg-type]


def _detail(response: httpx.Response) -> str:
    detail = response.json()["detail"]
    assert isinstance(detail, str) and detail  # one readable sentence, not pydantic's error list
    return detail


def test_one_text_gets_a_label_probabilities_and_the_model_version(url: str, service: ChampionService) -> None:
    response = post(url, {"text": NEWS})
    assert response.status_code == 200
    body = response.json()
    assert body["model_version"] == service.version
    [result] = body["results"]
    assert result["label"] in LABELS and set(result["probabilities"]) == set(LABELS)
    assert abs(sum(result["probabilities"].values()) - 1.0) < 1e-4
    assert result["label"] == max(result["probabilities"], key=result["probabilities"].get)
    assert result["truncated"] is False


def test_a_list_gets_one_result_per_text_in_order(url: str, service: ChampionService) -> None:
    texts = ["Late goal wins the cup final.", NEWS, "New chip doubles battery life."]
    response = post(url, {"text": texts})
    assert response.status_code == 200
    results = response.json()["results"]
    assert len(results) == 3
    expected = service.predict(texts)
    assert [r["label"] for r in results] == [p.label for p in expected]


# The real server's list bound is NEWSLOOP_MAX_BATCH_TEXTS (default 32).
LIMIT = 32


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"text": ""}, 422, "empty"),
        ({"text": "   \n\t "}, 422, "empty"),
        ({"text": []}, 422, "at least one text"),
        ({"text": ["fine", ""]}, 422, "Text 1 is empty"),
        ({"text": "x" * (MAX_CHARS + 1)}, 413, f"the limit is {MAX_CHARS}"),
        ({"text": ["ok", "x" * (MAX_CHARS + 1)]}, 413, "Text 1 is"),
        ({"text": ["news"] * (LIMIT + 1)}, 413, f"the limit is {LIMIT}"),
        ({"text": 5}, 422, "'text' must be a string or a list of strings"),
        ({"text": None}, 422, "'text' must be a string or a list of strings"),
        ({"text": {"a": "b"}}, 422, "'text' must be a string or a list of strings"),
        ({"text": ["ok", 3]}, 422, "text[1] must be a string"),
        ({"texts": "wrong field"}, 422, "needs a field 'text'"),
        (["a", "list", "body"], 422, "Bad request"),
    ],
)
def test_bad_input_is_a_clear_4xx(url: str, body: object, status: int, words: str) -> None:
    response = post(url, body)
    assert response.status_code == status
    assert words in _detail(response)


def test_a_body_that_is_not_json_is_refused_with_a_message(url: str) -> None:
    response = post(url, content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert "not valid JSON" in _detail(response)


def test_an_oversized_body_is_refused_before_parsing(url: str) -> None:
    response = post(url, content=b'{"text": "' + b"x" * (LIMIT * MAX_CHARS * 6 + 5000) + b'"}',
                    headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert "request body" in _detail(response)


def test_rate_limit_counts_each_text_and_is_shared_with_the_page(service: ChampionService) -> None:
    limiter = RateLimiter(5, 60.0)
    limiter.check("addr:127.0.0.1")  # one classification on the page, same client, same limiter
    with serve(service, limiter, per_minute=5) as base:
        assert post(base, {"text": ["a news text", "another one"]}).status_code == 200  # 3 of 5 spent
        assert post(base, {"text": "third news text"}).status_code == 200  # 4 of 5
        refused = post(base, {"text": ["one", "two"]})
        assert refused.status_code == 429
        assert int(refused.headers["retry-after"]) >= 1
        assert "Too many requests" in _detail(refused)
        assert post(base, {"text": "fifth news text"}).status_code == 200  # the refused list spent nothing
    assert limiter.check("addr:127.0.0.1") > 0  # the page is refused too: one budget


def test_a_list_longer_than_the_whole_budget_is_refused_without_spending_it(service: ChampionService) -> None:
    limiter = RateLimiter(2, 60.0)
    with serve(service, limiter, per_minute=2) as base:
        response = post(base, {"text": ["one", "two", "three"]})
        assert response.status_code == 413 and "2 a minute" in _detail(response)
        assert post(base, {"text": ["one", "two"]}).status_code == 200


def test_health_and_readiness(url: str, service: ChampionService) -> None:
    assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}
    ready = httpx.get(f"{url}/readyz")
    assert ready.status_code == 200 and ready.json() == {"status": "ready", "model_version": service.version}


def test_without_a_champion_not_ready_and_classify_is_503(tmp_path: Path) -> None:
    empty = ChampionService(ModelRegistry(tmp_path / "models"))
    with serve(empty, RateLimiter(100, 60.0)) as base:
        assert httpx.get(f"{base}/healthz").status_code == 200
        assert httpx.get(f"{base}/readyz").status_code == 503
        response = post(base, {"text": NEWS})
        assert response.status_code == 503 and "No model" in _detail(response)


def test_concurrent_single_texts_share_forward_passes(
    url: str, service: ChampionService, monkeypatch: pytest.MonkeyPatch
) -> None:
    batcher = service._batcher
    assert batcher is not None
    # Hold the first pass until the other requests have queued behind it, so that whether they share passes
    # does not depend on how fast this machine answers the first (it did not, once: 8 passes for 8 texts).
    predict, held = batcher._predict, threading.Event()

    def first_pass_waits(texts: list[str]) -> list:
        if not held.is_set():
            held.set()
            deadline = time.monotonic() + 10.0  # a bound on a broken test, not a timing assumption
            while len(batcher._pending) < 8 - len(texts) and time.monotonic() < deadline:
                time.sleep(0.005)
        return predict(texts)

    monkeypatch.setattr(batcher, "_predict", first_pass_waits)
    before = batcher.batches
    with httpx.Client(timeout=30) as client, ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(lambda i: client.post(f"{url}/api/v1/classify", json={"text": f"{NEWS} {i}"}), range(8)))
    assert [r.status_code for r in responses] == [200] * 8
    assert batcher.batches - before < 8


def test_openapi_documents_the_routes_and_their_models(url: str) -> None:
    spec = httpx.get(f"{url}/api/openapi.json").json()
    assert {"/api/v1/classify", "/healthz", "/readyz"} <= set(spec["paths"])
    classify = spec["paths"]["/api/v1/classify"]["post"]
    assert {"200", "413", "422", "429", "503"} <= set(classify["responses"])
    assert {"ClassifyRequest", "ClassifyResponse", "TextResult"} <= set(spec["components"]["schemas"])
    assert httpx.get(f"{url}/api/docs").status_code == 200


def test_the_page_still_answers_beside_the_api(url: str) -> None:
    assert httpx.get(f"{url}/").status_code == 200


def test_a_lone_surrogate_is_classified_not_a_server_error(url: str) -> None:
    body = '{"text": "Lone surrogate \\ud800 in a story about the league"}'  # valid JSON, invalid Unicode
    response = httpx.post(f"{url}/api/v1/classify", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 200 and response.json()["results"][0]["label"] in LABELS
