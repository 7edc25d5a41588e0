"""Bounds on a JSON API request's body, enforced before any costly work: size while it streams, then shape."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool

from core.serving.limits import Limiter


@dataclass(frozen=True)
class Budget:
    """A client's per-minute budget (the page's classify limiter, keyed by the page's address rule). A client
    with nothing left is refused before its body is read, and a refused body spends one, so a flood of bad
    requests is rate limited like any other."""

    limiter: Limiter
    address_of: Callable[[Request], str]

    async def wait(self, request: Request) -> float:
        # A limiter shared by replicas asks the database: off the event loop.
        return await run_in_threadpool(self.limiter.peek, self.address_of(request))

    async def spend(self, request: Request) -> None:
        await run_in_threadpool(self.limiter.check, self.address_of(request), 1)


def bounded_body(
    max_body: int, max_texts: int, base: type[APIRoute] = APIRoute, budget: Budget | None = None
) -> type[APIRoute]:
    """A route class whose work per request is bounded before it is done: a client out of `budget` is refused
    at once; the body is counted while it streams (with or without Content-Length) and refused at `max_body`
    without reading the rest; the JSON's shape, then its list length, then (only for a list of at most
    `max_texts`) its items' types are checked before FastAPI validates anything, so a refusal costs
    milliseconds and names at most a few problems. A body that passes is handed to the route as it came."""

    class BoundedBody(base):  # type: ignore[valid-type, misc]  # the base is the caller's route class, a run-time value
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()

            async def route(request: Request) -> Response:
                wait = await budget.wait(request) if budget is not None else 0.0
                if wait:
                    seconds = str(max(1, math.ceil(wait)))
                    return JSONResponse({"detail": f"Too many requests: try again in {seconds} s."}, status_code=429,
                                        headers={"retry-after": seconds, "connection": "close"})
                body = await _read_within(request, max_body)
                if isinstance(body, bytes):
                    refusal = _shape_problem(body, max_texts)
                    if refusal is None:
                        return await handler(Request(request.scope, replay(body)))
                else:
                    refusal = body
                if budget is not None:
                    await budget.spend(request)
                return refusal

            return route

    return BoundedBody


def _problem(status: int, detail: str, *, close: bool = False) -> JSONResponse:
    # A refusal before the whole body was read closes the connection: the rest is never drained.
    return JSONResponse({"detail": detail}, status_code=status, headers={"connection": "close"} if close else None)


async def _read_within(request: Request, max_body: int) -> bytes | Response:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_body:
        return _problem(413, f"The request body is {int(declared):,} bytes; the limit is {max_body:,}.", close=True)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_body:
            return _problem(413, f"The request body is over the limit of {max_body:,} bytes.", close=True)
        chunks.append(chunk)
    return b"".join(chunks)


_MAX_NAMED = 3  # problems one error message names


def _shape_problem(body: bytes, max_texts: int) -> Response | None:
    """A refusal for a body that is not {"text": str | [str, ...]} with at most `max_texts` texts, or None."""
    try:
        payload = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        return _problem(422, "Bad request: the body is not UTF-8 text.")
    except (ValueError, RecursionError):
        return _problem(422, "Bad request: the body is not valid JSON.")
    if not isinstance(payload, dict):
        return _problem(422, "Bad request: the body must be a JSON object with a field 'text'.")
    if "text" not in payload:
        return _problem(422, "Bad request: the body needs a field 'text' (a string or a list of strings).")
    texts = payload["text"]
    if isinstance(texts, str):
        return None
    if not isinstance(texts, list):
        return _problem(422, "Bad request: 'text' must be a string or a list of strings.")
    if len(texts) > max_texts:
        return _problem(413, f"{len(texts):,} texts in one request; the limit is {max_texts}. Split the list.")
    wrong = [f"text[{i}] must be a string" for i, text in enumerate(texts) if not isinstance(text, str)]
    if wrong:
        more = f" (and {len(wrong) - _MAX_NAMED} more)" if len(wrong) > _MAX_NAMED else ""
        return _problem(422, "Bad request: " + "; ".join(wrong[:_MAX_NAMED]) + more + ".")
    return None


def replay(body: bytes) -> Callable[[], Coroutine[Any, Any, dict[str, Any]]]:
    """An ASGI `receive` that hands over a body already read, once."""
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive
