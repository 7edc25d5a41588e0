"""The JSON API beside the page: POST /api/v1/classify, GET /healthz, GET /readyz, over the page's classifier and limits."""

from __future__ import annotations

import math
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field, StrictStr

from core.serving.limits import Limiter
from core.settings.config import ServingSection
from core.taxonomy import LEARNING
from core.text import clean_text
from web.server.api_body import Budget, bounded_body
from web.server.serving import Classifier, PageLimits, storable
from web.server.topics import PageTopics

# Bytes a JSON body may need per allowed character: UTF-8 takes up to 4, a JSON escape (\uXXXX) 6.
_BYTES_PER_CHAR = 6
_BODY_OVERHEAD = 4096


class ClassifyRequest(BaseModel):
    """One text, or a list of texts classified in one call."""

    text: StrictStr | list[StrictStr] = Field(
        description="A news headline or article, or a list of them.",
        examples=["Stocks rallied after the central bank held rates.", ["Late goal wins the cup.", "New chip unveiled."]],
    )


class TextResult(BaseModel):
    label: str = Field(description="The most likely topic, by its current name.")
    key: str = Field(description="That topic's stable key (its name, unless it was renamed since the model learned it).")
    probabilities: dict[str, float] = Field(
        description="Probability of each topic the served model predicts, by current name; they sum to 1.")
    truncated: bool = Field(description="The text was longer than the model reads; only its first part was classified.")


class ClassifyResponse(BaseModel):
    model_version: str = Field(description="The model version that made every prediction in this answer.")
    results: list[TextResult] = Field(description="One result per input text, in input order (a list of one for a single text).")


class TopicInfo(BaseModel):
    key: str = Field(description="The topic's stable key: what answers and models store.")
    name: str = Field(description="The name people see and answers may use.")
    description: str = Field(description="One line on what belongs in the topic.")
    new: bool = Field(description=f"The served model does not predict it yet ({LEARNING}).")


class Topics(BaseModel):
    version: int = Field(description="The taxonomy's version: each change a maintainer makes is a new one.")
    topics: list[TopicInfo] = Field(description="The topics answers may name, in the taxonomy's order.")
    model_topics: list[str] = Field(description="The served model's own topics (current names), in its output order.")


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: str
    model_version: str


class Problem(BaseModel):
    detail: str = Field(description="What was wrong, in one sentence.")


def _readable(exc: RequestValidationError) -> str:
    """Pydantic's error list as one sentence a person can act on."""
    parts = []
    for error in exc.errors():
        where = [str(p) for p in error.get("loc", ()) if p != "body"]
        kind = error.get("type", "")
        if kind == "json_invalid":
            parts.append("the body is not valid JSON")
        elif kind == "missing":
            parts.append("the body needs a field 'text' (a string or a list of strings)")
        elif where and where[0] == "text":
            place = f"text[{where[2]}]" if len(where) > 2 and where[2].isdigit() else "text"
            if place == "text":
                parts.append("'text' must be a string or a list of strings")
            else:
                parts.append(f"{place} must be a string")
        else:
            parts.append(f"{'.'.join(where) or 'body'}: {error.get('msg', 'invalid')}")
    unique = list(dict.fromkeys(parts))
    return "Bad request: " + "; ".join(unique) + "."


class _ReadableErrors(APIRoute):
    """Validation errors as {"detail": "<one sentence>"} (422), set on this router alone, not the whole app."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as exc:
                return JSONResponse({"detail": _readable(exc)}, status_code=422)

        return route


# The API's refusals, each with its Problem body, as the HTTP reference lists them.
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": Problem, "description": text}
    for code, text in {
        413: "A text or the list is too long.",
        422: "Malformed input: not JSON, no 'text', wrong types, or an empty text.",
        429: "Over the per-client rate limit; see Retry-After.",
        503: "No model is loaded yet.",
    }.items()
}


def build_api(
    classifier: Classifier,
    limits: PageLimits,
    classify_limit: Limiter,
    address_of: Callable[[Request], str],
    *,
    max_batch_texts: int = ServingSection.field_default("max_batch_texts"),
    topics: PageTopics | None = None,
) -> APIRouter:
    """The JSON routes. `classify_limit` is the page's own limiter and `address_of` the page's identity rule,
    so a client has one budget across page and API; a list of N texts costs N, and at most `max_batch_texts`
    (NEWSLOOP_MAX_BATCH_TEXTS) are taken at once. `topics` names what the model predicts (the page's; without it,
    the model's own labels are their names)."""
    topics = topics or PageTopics(classifier, None)
    router = APIRouter(route_class=_ReadableErrors)
    _add_classify(router, classifier, topics, limits, Budget(classify_limit, address_of), max_batch_texts)
    _add_reads(router, classifier, topics)
    return router


def _add_classify(router: APIRouter, classifier: Classifier, topics: PageTopics, limits: PageLimits, budget: Budget,
                  max_batch_texts: int) -> None:
    """POST /api/v1/classify: one text or a list, each spending one of the client's `budget`."""
    max_chars = limits.max_input_chars
    max_body = max_batch_texts * max_chars * _BYTES_PER_CHAR + _BODY_OVERHEAD

    def classify(payload: ClassifyRequest, request: Request, response: Response) -> ClassifyResponse:
        # A plain `def`: FastAPI runs it in its thread pool, so the blocking model call (which joins concurrent
        # single texts into one forward pass in core.serving.batching) never stalls the event loop.
        texts = [payload.text] if isinstance(payload.text, str) else payload.text
        # A lone surrogate cannot reach the tokenizer; as on the page, it becomes a replacement character.
        texts = [storable(text) for text in texts]
        _check_texts(texts, max_batch_texts, max_chars)
        _spend(budget.limiter, budget.address_of(request), len(texts))
        predictions = _predict(classifier, texts)
        taxonomy = topics.taxonomy()
        return ClassifyResponse(
            model_version=predictions[0].model_version,
            results=[TextResult(label=taxonomy.name_of(p.label), key=p.label,
                                probabilities=topics.named(p.probabilities, taxonomy), truncated=p.truncated)
                     for p in predictions],
        )

    # The body is bounded before FastAPI reads it (web.server.api_body), on this route alone.
    router.add_api_route(
        "/api/v1/classify",
        classify,
        methods=["POST"],
        response_model=ClassifyResponse,
        responses=ERRORS,
        summary="Classify one news text or a list of them",
        description=(
            f"Send `{{\"text\": \"...\"}}` or `{{\"text\": [\"...\", ...]}}` (at most {max_batch_texts} texts, each at "
            f"most {max_chars:,} characters and not empty; the body at most {max_body:,} bytes, UTF-8). Each text "
            f"counts once against the per-client limit of {limits.classify_per_minute} classifications a minute, "
            "shared with the page."
        ),
        tags=["classify"],
        route_class_override=bounded_body(max_body, max_batch_texts, _ReadableErrors, budget),
    )


def _add_reads(router: APIRouter, classifier: Classifier, topics: PageTopics) -> None:
    """The GET routes: the topics, and the health and readiness checks."""

    @router.get("/api/v1/topics", response_model=Topics, summary="The topics answers may name", tags=["topics"])
    def list_topics() -> Topics:
        """The taxonomy now: its version and topics (each marked `new` while the served model does not predict it),
        and the served model's own topics."""
        taxonomy = topics.taxonomy()
        return Topics(version=taxonomy.version,
                      topics=[TopicInfo(key=t.key, name=t.name, description=t.description, new=t.learning)
                              for t in topics.offered(taxonomy)],
                      model_topics=[taxonomy.name_of(key) for key in topics.model_labels()])

    @router.get("/healthz", response_model=Health, summary="The process is up", tags=["health"])
    def healthz() -> Health:
        return Health(status="ok")

    @router.get(
        "/readyz", response_model=Readiness, responses={503: ERRORS[503]}, summary="A model is loaded", tags=["health"]
    )
    def readyz() -> Readiness:
        version = classifier.version
        if version is None:
            raise HTTPException(503, "No model is loaded yet.")
        return Readiness(status="ready", model_version=version)


def _check_texts(texts: list[str], max_texts: int, max_chars: int) -> None:
    if not texts:
        raise HTTPException(422, "Send at least one text: the list is empty.")
    if len(texts) > max_texts:
        raise HTTPException(413, f"{len(texts)} texts in one request; the limit is {max_texts}. Split the list.")
    for index, text in enumerate(texts):
        name = "The text" if len(texts) == 1 else f"Text {index}"
        if len(text) > max_chars:
            raise HTTPException(
                413, f"{name} is {len(text):,} characters long; the limit is {max_chars:,}. "
                "Send the headline and first paragraphs instead."
            )
        if not clean_text(text):
            raise HTTPException(422, f"{name} is empty: send a news headline or article.")


def _spend(limiter: Limiter, key: str, cost: int) -> None:
    """Take `cost` classifications from the client's budget, or refuse with 429 and how long to wait (a
    refused list spends nothing); a list longer than the whole budget could never pass: 413."""
    if cost > limiter.limit:
        raise HTTPException(413, f"{cost} texts in one request; the limit is {limiter.limit} a minute. Split the list.")
    wait = limiter.check(key, cost)
    if wait:
        seconds = max(1, math.ceil(wait))
        raise HTTPException(429, f"Too many requests: try again in {seconds} s.", headers={"Retry-After": str(seconds)})


def _predict(classifier: Classifier, texts: list[str]) -> list[Any]:
    # core.serving.classifier loads ONNX Runtime; imported here, once a model is being asked, so importing the router does not.
    from core.serving.classifier import NoChampionError

    try:
        predictions = classifier.predict(texts)
        if len({p.model_version for p in predictions}) > 1:  # a long list straddled a model swap: ask again
            predictions = classifier.predict(texts)
        return predictions
    except NoChampionError as exc:
        raise HTTPException(503, "No model is loaded yet; try again shortly.") from exc
