"""What a host scrapes: GET /metrics in Prometheus's text format, every metric of the app defined here, in one place.

Why one module: the names, labels and bounds of what the app exposes are an interface (dashboards and alerts are
written against them), so they are defined together and reviewed together; the rest of the app only hands this
module events (a request ended, a prediction was served, an answer was stored) and callbacks it reads at scrape.

Cost: a request costs one counter increment and one histogram observation (`MetricsMiddleware`); a served
prediction also adds its probabilities to its input form's tally (`ServedTallies`, kept and written to the store by
web.server.tallies). What is expensive to know (the pool's open items, the retrain record, the champion) is read when
a scrape asks, never per request, and the pool count is cached for `queue_cache_s`.

Label values are bounded: a request is named by its route's template ("/api/v1/classify", never a raw path), Gradio's
own paths fall into a few buckets, an unknown path is "other", a method outside the usual few is "other".

Each app builds its own `CollectorRegistry` (never prometheus_client's global one), so a process may build several
apps (tests do) and each exposes only its own counts.

Who may read it: nothing in it is personal (counts, durations, a model version, estimates); on a public host (a
Space) it is still refused unless the scraper sends `Authorization: Bearer <NEWSLOOP_METRICS_TOKEN>` (see
`metrics_router`).
"""

from __future__ import annotations

import logging
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator, MutableMapping, Sequence
from typing import Any, cast

import numpy as np
from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily, Metric
from starlette.routing import Mount, Route

from core.registry.stages import Outcome, read_history, read_last_run, running_run
from core.storage.paths import HomePaths
from feedback.labelling.answers import AnswerInput, Answers, RecordResult
from feedback.store import FeedbackStore
from feedback.validate import Status
from web.server.identity import ASGIApp, Scope
from web.server.serving import Classifier, ServedModel
from web.server.tallies import ServedTallies
from web.server.topics import PageTopics

log = logging.getLogger(__name__)

CLASSIFY_ROUTE = "/api/v1/classify"
# The API's refusals of a classification, by status (web.server.api and api_body): 422 is an empty text or a
# body that is not {"text": ...}. The page's, by what its handler says (web.page.actions.NewsLoopActions.refused),
# and its early rate-limit refusals (`counting_refusals`).
API_REFUSALS = {413: "too_long", 422: "invalid", 429: "rate_limited", 503: "no_model"}
PAGE_REFUSALS = ("invalid", "too_long", "empty", "rate_limited", "no_model")
METHODS = frozenset({"GET", "POST", "HEAD", "OPTIONS", "PUT", "PATCH", "DELETE"})
# Seconds: a REST classification takes ~10 ms; a page event's stream (/gradio_api/queue/data) seconds.
LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_GRADIO_PARTS = frozenset({"upload", "upload_progress", "file", "heartbeat", "info", "call", "stream"})
_PAGE_PATHS = frozenset({"/", "/config", "/login", "/logout", "/theme.css", "/manifest.json", "/favicon.ico"})
_STATIC = ("/assets/", "/static/", "/svelte/", "/custom_component/")


class Metrics:
    """One app's metrics, in its own registry. `champion` reads the served version, `queue_depth` the pool's
    open items (None: no store), `home` where the retrain record lies (None: not shown), `topics` the taxonomy
    (None: not shown)."""

    def __init__(
        self,
        champion: Callable[[], str | None],
        queue_depth: Callable[[], int] | None = None,
        home: HomePaths | None = None,
        *,
        tallies: ServedTallies | None = None,
        queue_cache_s: float = 5.0,
        topics: PageTopics | None = None,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.requests = Counter("newsloop_http_requests", "HTTP requests answered, by route template, method and status.",
                                ["route", "method", "status"], registry=self.registry)
        self.latency = Histogram("newsloop_http_request_duration_seconds", "Time to answer an HTTP request, by route.",
                                 ["route"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.classify_errors = Counter("newsloop_classify_errors", "Classifications refused, by where and why.",
                                       ["source", "reason"], registry=self.registry)
        self.answers = Counter("newsloop_answers", "Answers stored (repeats of a stored answer aside), by status.",
                               ["status"], registry=self.registry)
        for reason in API_REFUSALS.values():
            self.classify_errors.labels("api", reason)
        for reason in PAGE_REFUSALS:
            self.classify_errors.labels("page", reason)
        for status in Status:
            self.answers.labels(str(status))
        self.estimates = tallies if tallies is not None else ServedTallies()
        self._children: dict[tuple[str, str, int], tuple[Any, Any]] = {}
        self.registry.register(_ReadAtScrape(self, champion, queue_depth, home, queue_cache_s, topics))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)

    def request_done(self, route: str, method: str, status: int, seconds: float) -> None:
        key = (route, method, status)
        children = self._children.get(key)
        if children is None:  # labels() validates and locks: once per label set, not per request
            children = self._children.setdefault(
                key, (self.requests.labels(route, method, str(status)), self.latency.labels(route)))
        children[0].inc()
        children[1].observe(seconds)
        if route == CLASSIFY_ROUTE and status in API_REFUSALS:
            self.classify_errors.labels("api", API_REFUSALS[status]).inc()

    def metered(self, classifier: Classifier, source: str) -> MeteredClassifier:
        """`classifier` as `source` ("page", "api") serves it: its predictions feed the estimates."""
        return MeteredClassifier(classifier, self, source)

    def counting_answers(self, store: FeedbackStore | None) -> FeedbackStore | None:
        """`store` with every answer recorded through it counted by status (the page's and the queue's)."""
        return cast(FeedbackStore, AnswerCounter(store, self)) if store is not None else None

    def page_refusal(self, reason: str) -> None:
        """The page's classify handler refused a text (one of PAGE_REFUSALS)."""
        self.classify_errors.labels("page", reason if reason in PAGE_REFUSALS else "invalid").inc()

    def counting_refusals(self, check: Callable[[Any], str | None], source: str = "page") -> Callable[[Any], str | None]:
        """A rate-limit check (an early refusal of web.server.asgi.RequestGuard) whose refusals are counted."""

        def counted(request: Any) -> str | None:
            refusal = check(request)
            if refusal is not None:
                self.classify_errors.labels(source, "rate_limited").inc()
            return refusal

        return counted


class MeteredClassifier:
    """A classifier whose served predictions feed `metrics.estimates`, and whose "no model yet" is counted; the rest
    (the labelling queue's scoring, the footer's model) passes through untouched."""

    def __init__(self, inner: Classifier, metrics: Metrics, source: str) -> None:
        self.inner, self.metrics, self.source = inner, metrics, source

    @property
    def version(self) -> str | None:
        return self.inner.version

    @property
    def model(self) -> ServedModel:
        return self.inner.model

    def predict(self, texts: Sequence[str]) -> list[Any]:
        try:
            predictions = self.inner.predict(texts)
        except RuntimeError as exc:
            from core.serving.classifier import NoChampionError  # loads ONNX Runtime: only once a model was asked

            if isinstance(exc, NoChampionError):
                self.metrics.classify_errors.labels(self.source, "no_model").inc()
            raise
        self.metrics.estimates.observe(predictions, self.inner.version)
        return predictions

    def proba_in_label_order(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.proba_in_label_order(texts)


class AnswerCounter:
    """A feedback store whose `answers.record` counts each newly stored answer by its status (feedback stays
    unaware)."""

    def __init__(self, store: FeedbackStore, metrics: Metrics) -> None:
        self._store = store
        self.answers = _CountedAnswers(store.answers, metrics)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


class _CountedAnswers:
    """A store's answers, each newly recorded one counted by its status."""

    def __init__(self, answers: Answers, metrics: Metrics) -> None:
        self._answers, self._metrics = answers, metrics

    def record(self, answer: AnswerInput) -> RecordResult:
        result = self._answers.record(answer)
        if not result.duplicate:
            self._metrics.answers.labels(result.status).inc()
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._answers, name)


class _ReadAtScrape:
    """What is read when a scrape asks: the champion, the estimates, the pool's open items, the retrain record."""

    def __init__(self, metrics: Metrics, champion: Callable[[], str | None], queue_depth: Callable[[], int] | None,
                 home: HomePaths | None, queue_cache_s: float, topics: PageTopics | None = None) -> None:
        self.metrics, self.champion, self.queue_depth, self.home = metrics, champion, queue_depth, home
        self.topics = topics
        self.queue_cache_s = queue_cache_s
        self._queue: tuple[float, int | None] = (-float("inf"), None)
        self._queue_lock = threading.Lock()

    def collect(self) -> Iterator[Metric]:
        version = self.champion()
        info = InfoMetricFamily("newsloop_champion", "The model version being served.")
        if version is not None:
            info.add_metric([], {"version": version})
        yield info
        accuracy = GaugeMetricFamily("newsloop_estimated_accuracy", "Expected accuracy of the champion on the texts "
                                     "it served, from their calibrated probabilities, by guessed input form.",
                                     labels=["form"])
        texts = GaugeMetricFamily("newsloop_estimated_texts", "Texts behind newsloop_estimated_accuracy, by form.",
                                  labels=["form"])
        for form, estimate in sorted(self.metrics.estimates.estimates(version).items()):
            accuracy.add_metric([form], estimate.accuracy)
            texts.add_metric([form], estimate.n)
        yield accuracy
        yield texts
        depth = self._queue_depth()
        if depth is not None:
            yield GaugeMetricFamily("newsloop_queue_depth", "Labelling pool items not yet settled "
                                    f"(read at most every {self.queue_cache_s:g} s).", value=depth)
        if self.topics is not None:
            yield from self._topics(self.topics)
        if self.home is not None:
            yield from self._retrain(self.home)

    @staticmethod
    def _topics(topics: PageTopics) -> Iterable[Metric]:
        """The taxonomy's version, and one series per current topic (its stable key and its name): 1 while the served
        model does not predict it yet. At most 50 topics (core.taxonomy.MAX_TOPICS): the labels stay bounded."""
        try:
            taxonomy = topics.taxonomy()
            offered = topics.offered(taxonomy)
        except Exception:  # a database hiccup must not fail the whole scrape
            log.exception("cannot read the topics for /metrics")
            return
        yield GaugeMetricFamily("newsloop_taxonomy_version", "The topic list's version (each change is a new one).",
                                value=taxonomy.version)
        learning = GaugeMetricFamily("newsloop_topic_learning", "1 for a topic of the current list the served model "
                                     "does not predict yet (new: it is still learning it), 0 for one it predicts.",
                                     labels=["topic", "topic_name"])
        for topic in offered:
            learning.add_metric([topic.key, topic.name], 1.0 if topic.learning else 0.0)
        yield learning

    def _queue_depth(self) -> int | None:
        if self.queue_depth is None:
            return None
        with self._queue_lock:
            at, depth = self._queue
            if time.monotonic() - at >= self.queue_cache_s:
                try:
                    depth = self.queue_depth()
                except Exception:  # a database hiccup must not fail the whole scrape
                    log.exception("cannot count the labelling pool for /metrics")
                    depth = None
                self._queue = (time.monotonic(), depth)
            return depth

    @staticmethod
    def _retrain(home: HomePaths) -> Iterable[Metric]:
        history = read_history(home)
        runs = GaugeMetricFamily("newsloop_retrain_runs", "Finished retrains the retrain record remembers (its last "
                                 "runs), by outcome.", labels=["outcome"])
        for outcome in Outcome:
            runs.add_metric([str(outcome)], sum(1 for run in history if run.decision == outcome))
        yield runs
        last = read_last_run(home)
        if last is not None:
            ended = GaugeMetricFamily("newsloop_retrain_last_outcome", "How the last retrain ended (1).",
                                      labels=["outcome"])
            ended.add_metric([str(last.decision)], 1)
            yield ended
            yield GaugeMetricFamily("newsloop_retrain_last_seconds", "How long the last retrain took.",
                                    value=last.seconds)
        yield GaugeMetricFamily("newsloop_retrain_running", "1 while a retrain runs on this home.",
                                value=1 if running_run(home) is not None else 0)


class MetricsMiddleware:
    """Counts and times every HTTP request by route template (outermost: refusals of the guards inside count too).

    The route is found from the path alone, against `routes` (the app's own routes and those of the routers it
    includes: FastAPI keeps an included router's routes apart), read once, at the first request; a path none of
    them names falls into one of Gradio's buckets."""

    def __init__(self, app: ASGIApp, metrics: Metrics, routes: Sequence[Any]) -> None:
        self.app, self.metrics, self.routes = app, metrics, routes
        self._exact: dict[str, str] | None = None
        self._patterns: list[tuple[re.Pattern[str], str]] = []
        self._mounts: list[str] = []

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start, status = time.perf_counter(), 500

        async def noted(message: MutableMapping[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, noted)
        finally:
            method = scope.get("method", "GET")
            self.metrics.request_done(self.route_of(scope.get("path", "")), method if method in METHODS else "other",
                                      status, time.perf_counter() - start)

    def route_of(self, path: str) -> str:
        if self._exact is None:
            self._learn_routes()
        assert self._exact is not None
        if (known := self._exact.get(path)) is not None:
            return known
        for pattern, template in self._patterns:
            if pattern.match(path):
                return template
        for mount in self._mounts:  # a page mounted below the root (/admin/): its own buckets, under its path
            if path.startswith(mount + "/"):
                bucket = gradio_bucket(path[len(mount):])
                return mount + bucket if bucket.startswith("/") else f"{mount}/{bucket}"
        return gradio_bucket(path)

    def _learn_routes(self) -> None:
        exact: dict[str, str] = {}
        for route in self.routes:
            if isinstance(route, Mount) and route.path:
                self._mounts.append(route.path)
            if not isinstance(route, Route):
                continue  # a page's mount: bucketed by gradio_bucket
            if route.param_convertors:
                self._patterns.append((route.path_regex, route.path))
            else:
                exact[route.path] = route.path
        self._exact = exact


def gradio_bucket(path: str) -> str:
    """A bounded name for a path the app's own routes do not name (Gradio's page, its API and its files)."""
    if path in _PAGE_PATHS:
        return path
    if path.startswith("/gradio_api/"):
        parts = path[len("/gradio_api/"):].split("/")
        if parts[0] == "queue":
            return "/gradio_api/queue/" + (parts[1] if len(parts) > 1 and parts[1] in ("join", "data") else "other")
        head = parts[0].split("=", 1)[0]
        return f"/gradio_api/{head}" if head in _GRADIO_PARTS else "/gradio_api/other"
    if path.startswith(_STATIC):
        return "static"
    return "other"


def metrics_router(metrics: Metrics, token: str | None, public: bool) -> APIRouter:
    """GET /metrics. With a token, only a request bearing it is answered; without one, anyone off a public host,
    nobody on one (a Space: anyone on the internet could read it, and time it)."""
    router = APIRouter()
    expected = f"Bearer {token}".encode() if token else None

    @router.get("/metrics", include_in_schema=False)
    def scrape(request: Request) -> Response:  # a plain def: a scrape reads files and the database off the loop
        if expected is not None:
            given = request.headers.get("authorization", "").encode()
            if not secrets.compare_digest(given, expected):
                return Response('{"detail": "Send Authorization: Bearer <NEWSLOOP_METRICS_TOKEN>."}', 401,
                                {"www-authenticate": "Bearer"}, media_type="application/json")
        elif public:
            return Response('{"detail": "On a public host /metrics needs NEWSLOOP_METRICS_TOKEN set."}', 403,
                            media_type="application/json")
        return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    return router
