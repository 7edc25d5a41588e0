"""A visitor with nothing but HTTP: calls a launched app's Gradio events the way a script would.

Each `Visitor` is one browser: it keeps the NewsLoop id cookie the server sets (by hand, since on a
Space the cookie is `Secure` and these tests speak plain HTTP); `keep_cookies=False` drops it, as an
attacker minting identities does. `forwarded_for` adds an X-Forwarded-For header to each request, as
the host's proxy would.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx

ADMIN = "/admin"  # the maintainers' page's path (web.admin.page.MOUNT_PATH)


class EventError(RuntimeError):
    """The server answered an event with an error instead of outputs."""


class JoinRefused(EventError):
    """The server refused an event at its join, before it entered the queue (`status`, `detail`)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"join refused: {status} {detail}")
        self.status, self.detail = status, detail


class Visitor:
    def __init__(self, url: str, *, keep_cookies: bool = True, forwarded_for: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.keep_cookies = keep_cookies
        self.forwarded_for = forwarded_for
        self.http = httpx.Client(base_url=self.url, timeout=60.0)
        self._events: dict[str, int] | None = None
        self._pages: dict[str, str] = {}
        self.cookie: str | None = None
        self.form_token = ""  # the anti-forgery token the page's script sends (web/server/forms.js): kept like a browser
        self.send_form_token = True  # False: act as a page on another site, which cannot read it
        self.extra_headers: dict[str, str] = {}
        self.session_hash = uuid.uuid4().hex[:11]  # one browser tab: Gradio keys per-tab state by it

    def close(self) -> None:
        self.http.close()

    def _headers(self) -> dict[str, str]:
        headers = {"x-forwarded-for": self.forwarded_for} if self.forwarded_for else {}
        if self.cookie:
            headers["cookie"] = self.cookie
        if self.form_token and self.send_form_token:
            headers["x-newsloop-form"] = self.form_token
        return headers | self.extra_headers

    def _after(self, response: httpx.Response | None = None) -> None:
        self.http.cookies.clear()
        if response is not None and self.keep_cookies and self.cookie is None:
            for header in response.headers.get_list("set-cookie"):
                if header.startswith("newsloop_id="):
                    self.cookie = header.split(";", 1)[0]
        if response is not None and self.keep_cookies:
            for header in response.headers.get_list("set-cookie"):
                if header.startswith("newsloop_form="):
                    self.form_token = header.split(";", 1)[0].split("=", 1)[1]

    def adopt(self, response: httpx.Response) -> None:
        """Take the id and anti-forgery cookies a response sets (a sign-in's fresh ones), as a browser does."""
        for header in response.headers.get_list("set-cookie"):
            name, _, rest = header.partition("=")
            if name == "newsloop_id":
                self.cookie = header.split(";", 1)[0]
            elif name == "newsloop_form":
                self.form_token = rest.split(";", 1)[0]

    def get(self, path: str) -> httpx.Response:
        response = self.http.get(path, headers=self._headers())
        self._after(response)
        return response

    def post(self, path: str, headers: dict[str, str] | None = None, **kwargs: Any) -> httpx.Response:
        response = self.http.post(path, headers=self._headers() | (headers or {}), **kwargs)
        self._after(response)
        return response

    def outputs_or_refusal(self, event: str, *data: Any) -> list[Any]:
        """`call`, with a join refused before the queue given as outputs (the refusal's detail in each place a
        message would be), so a test can read an early refusal and a handler's message alike."""
        try:
            return self.call(event, *data)
        except JoinRefused as refused:
            return [f"{refused.status}: {refused.detail}"] * 4

    def events(self) -> dict[str, int]:
        """Every event's name -> fn_index, private ones included (each page's config lists them all): the labellers'
        page's, then the maintainers' page's (at /admin/, when the app has one) under names the first does not use."""
        if self._events is None:
            self._events, self._pages = {}, {}
            for page in ("", ADMIN):
                response = self.get(f"{page}/config")
                if response.status_code != 200:
                    continue
                for dep in response.json()["dependencies"]:
                    if dep.get("api_name") and dep["api_name"] not in self._events:
                        self._events[dep["api_name"]], self._pages[dep["api_name"]] = dep["id"], page
        return self._events

    def page_of(self, event: str) -> str:
        """The path of the page whose event `event` is ("" for the labellers', ADMIN for the maintainers')."""
        self.events()
        return self._pages[event]

    def call_with(self, event: str, headers: dict[str, str], *data: Any) -> list[Any]:
        """`call`, with `headers` (an Origin, a Referer) on the join and on the stream, as a page sends them."""
        self.extra_headers = headers
        try:
            return self.call(event, *data)
        finally:
            self.extra_headers = {}

    def call(self, event: str, *data: Any, session_hash: str | None = None) -> list[Any]:
        """Join the queue for `event` by fn_index and return its outputs (raises EventError on an error).

        An event declared with `gr.api` has one output, the handler's whole return value.
        """
        session = self.session_hash if session_hash is None else session_hash
        body = {"data": list(data), "fn_index": self.events()[event], "session_hash": session,
                "event_data": None, "trigger_id": None}
        page = self.page_of(event)
        # json.dumps escapes non-ASCII, so even a lone surrogate travels as a script would send it.
        joined = self.post(f"{page}/gradio_api/queue/join", content=json.dumps(body).encode(),
                           headers={"content-type": "application/json"})
        if joined.status_code != 200:
            try:
                detail = str(joined.json().get("detail", ""))
            except ValueError:
                detail = joined.text[:200]
            raise JoinRefused(joined.status_code, detail)
        with self.http.stream("GET", f"{page}/gradio_api/queue/data", params={"session_hash": session},
                              headers=self._headers()) as stream:
            if stream.status_code != 200:
                raise EventError(f"stream refused: {stream.status_code}")
            for line in stream.iter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message.get("msg") == "process_completed":
                    if not message.get("success"):
                        raise EventError(str(message.get("output", {}).get("error")))
                    return message["output"]["data"]
        raise EventError("the event stream ended without a result")
