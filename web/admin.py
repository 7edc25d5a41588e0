"""The maintainer's actions: sign-in, overview, answer review, retrain and rollback, pool import, export."""

from __future__ import annotations

import hmac
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import gradio as gr
from pydantic import SecretStr

from core.limits import FailureThrottle
from core.policies import GateConfig, RetrainPolicy, TrustPolicy
from core.registry import ModelRegistry
from feedback.errors import FeedbackError
from feedback.store import FeedbackStore
from web import admin_report as report
from web.identity import Gatekeeper
from web.jobs import RetrainJobs

log = logging.getLogger("newsloop.app")
EXPORTS = ("csv", "jsonl", "parquet")  # parquet: a Hugging Face `datasets` table with ClassLabel features


class SignedInBrowsers(Protocol):
    """Where admin sessions live: `AdminSessions` in this process, or a table replicas share."""

    def open(self, browser: str) -> None: ...

    def close(self, browser: str) -> None: ...

    def valid(self, browser: str) -> bool: ...


class AdminSessions:
    """Signed-in admin browsers: a server-side record per browser id (the signed, HttpOnly cookie), with an
    expiry. Nothing the client sends can name a session; an empty or missing browser id never has one."""

    def __init__(self, ttl_s: float, capacity: int = 1000, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self.capacity = capacity
        self._clock = clock
        self._expires: dict[str, float] = {}
        self._lock = threading.Lock()

    def open(self, browser: str) -> None:
        if not browser:
            raise ValueError("an admin session needs a browser id")
        now = self._clock()
        with self._lock:
            self._expires = {b: t for b, t in self._expires.items() if t > now}
            if len(self._expires) >= self.capacity:
                self._expires.pop(min(self._expires, key=self._expires.__getitem__))
            self._expires[browser] = now + self.ttl_s

    def close(self, browser: str) -> None:
        with self._lock:
            self._expires.pop(browser, None)

    def valid(self, browser: str) -> bool:
        with self._lock:
            return bool(browser) and self._expires.get(browser, 0.0) > self._clock()


class AdminActions:
    """The maintainer's view. Every handler checks the caller server-side: hiding the panel is not security.

    An admin is a browser that signed in with the password (`AdminSessions`), or, on a Space, a Hugging
    Face account named in `admins`.
    """

    def __init__(
        self,
        store: FeedbackStore | None,
        *,
        password: SecretStr | None,
        registry: ModelRegistry,
        jobs: RetrainJobs,
        gate: Gatekeeper,
        admins: frozenset[str] = frozenset(),
        session_minutes: float = 60.0,
        trust: TrustPolicy | None = None,
        retrain: RetrainPolicy | None = None,
        promotion: GateConfig | None = None,
        hub_dataset: str = "",
        hub_token: SecretStr | None = None,
        sessions: SignedInBrowsers | None = None,
    ) -> None:
        self.store = store
        self.password = password
        self.registry = registry
        self.jobs = jobs
        self.gate = gate
        self.admins = admins
        self.sessions: SignedInBrowsers = sessions or AdminSessions(session_minutes * 60.0)
        self.throttle = FailureThrottle()
        self.trust = trust or TrustPolicy()
        self.retrain = retrain or RetrainPolicy()
        self.promotion = promotion or GateConfig()  # the gate's settings: the preview sizes the traffic set by them
        self.hub_dataset = hub_dataset
        self.hub_token = hub_token

    @property
    def enabled(self) -> bool:
        return (self.password is not None and bool(self.password.get_secret_value())) or bool(self.admins)

    def is_admin(self, request: Any, profile: gr.OAuthProfile | None = None) -> bool:
        """Whether this request (a gr.Request or a Starlette request) comes from a signed-in admin: a password
        session, or a `NEWSLOOP_ADMINS` Hugging Face account (`profile`, which Gradio injects into handlers)."""
        if request is None:
            return False
        who = self.gate.identify(request, profile)
        if who.verified and who.annotator.removeprefix("user:") in self.admins:
            return True
        return self.sessions.valid(who.browser)

    def restore(
        self, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """On page load: a browser still signed in gets its panel back without the password."""
        if not self.is_admin(request, profile):
            return "", gr.update(visible=False), gr.update(visible=True)
        return "Signed in.", gr.update(visible=True), gr.update(visible=False)

    def login(
        self, password: str, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> tuple[str, dict[str, Any], dict[str, Any]]:
        message, panel = self._login(password, request)
        return message, panel, gr.update(visible=message != "Signed in.")

    def _login(
        self, password: str, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> tuple[str, dict[str, Any]]:
        if not self.enabled:
            return "The admin view is disabled on this server.", gr.update(visible=False)
        if self.is_admin(request, profile):
            return "Signed in.", gr.update(visible=True)
        who = self.gate.identify(request)
        if not who.browser:
            return "Your browser did not send its NewsLoop id: reload the page (cookies must be on).", gr.update(visible=False)
        if self.password is None or not self.password.get_secret_value():
            return "Sign in with an admin's Hugging Face account.", gr.update(visible=False)
        wait = self.throttle.wait(who.address)
        if wait:
            return f"Too many failed attempts: try again in {wait:.0f} s.", gr.update(visible=False)
        given = password if isinstance(password, str) else ""
        if not hmac.compare_digest(given.encode("utf-8", "replace"), self.password.get_secret_value().encode()):
            self.throttle.failed(who.address)
            log.warning("admin login refused for %s", who.address)
            return "Wrong password.", gr.update(visible=False)
        self.sessions.open(who.browser)
        log.info("admin signed in from %s", who.address)
        return "Signed in.", gr.update(visible=True)

    def logout(
        self, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> tuple[str, dict[str, Any], dict[str, Any]]:
        self.sessions.close(self.gate.identify(request).browser)
        return "Signed out.", gr.update(visible=False), gr.update(visible=True)

    def review(
        self, answer_id: float | None, verdict: str, request: gr.Request | None, profile: gr.OAuthProfile | None = None
    ) -> str:
        if not self.is_admin(request, profile):
            return "Sign in first."
        if self.store is None or answer_id is None:
            return "Enter the id of an answer."
        try:
            answer = self.store.set_status(answer_id, verdict)  # type: ignore[arg-type] - validated there
        except FeedbackError as exc:
            return f"Not changed: {exc}"
        return f"Answer {answer['id']} {verdict}."

    def accept(self, answer_id: float | None, request: gr.Request, profile: gr.OAuthProfile | None = None) -> str:
        return self.review(answer_id, "accepted", request, profile)

    def reject(self, answer_id: float | None, request: gr.Request, profile: gr.OAuthProfile | None = None) -> str:
        return self.review(answer_id, "rejected", request, profile)

    def pick(self, evt: gr.SelectData, request: gr.Request, profile: gr.OAuthProfile | None = None) -> float | None:
        """A click on a suspicious answer's row puts its id in the review box (no retyping)."""
        if not self.is_admin(request, profile):
            return None
        row = evt.row_value if isinstance(evt.row_value, list) else []
        return float(row[0]) if row and isinstance(row[0], int | float) else None

    def trusted_count(self) -> int | None:
        from feedback.snapshot import read_trusted  # here: only the admin view's overview needs it

        return len(read_trusted(self.store, self.trust)) if self.store is not None else None

    def retrain_preview(
        self, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> tuple[str, dict[str, Any]]:
        """What a retrain would train on and how long it should take, before it starts."""
        if not self.is_admin(request, profile):
            return "Sign in first.", gr.update(visible=False)
        if self.store is None:
            return "There is no feedback store on this server.", gr.update(visible=False)
        from feedback.readiness import readiness  # here: only the retrain preview needs it

        ready = readiness(self.store, self.trust, self.retrain, self.promotion, self.jobs.last_run())
        return report.preview_text(ready, self.jobs.expected_seconds() / 60), gr.update(visible=True)

    def credible_waiting(self) -> int:
        """Suspicious answers from signed-in or checked people waiting for review (see `report.review_line`)."""
        from feedback.credible import credible_waiting

        return credible_waiting(self.store.database, self.trust) if self.store is not None else 0

    def launch_retrain(
        self, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> tuple[str, dict[str, Any], gr.Timer]:
        if not self.is_admin(request, profile):
            return "Sign in first.", gr.update(visible=False), gr.Timer(active=False)
        message = self.jobs.start("run")
        started = message.startswith("Started")
        shown = "Retrain started: progress below, refreshed every few seconds." if started else message
        return shown, gr.update(visible=False), gr.Timer(active=True)

    def rollback(self, request: gr.Request, profile: gr.OAuthProfile | None = None) -> str:
        if not self.is_admin(request, profile):
            return "Sign in first."
        champion = self.registry.champion()
        if champion is None or not self.registry.status()["previous"]:
            return "There is no previous champion to roll back to."
        # Compare-and-swap: roll back only what the admin saw serving, not a champion promoted since.
        started = self.jobs.start("rollback", "--reason", "admin view", "--expect", champion.version)
        if not started.startswith("Started"):
            return started
        code = self.jobs.wait(120.0)
        now = self.registry.champion()
        if code == 0 and now is not None and now.version != champion.version:
            return f"Rolled back: **{now.version}** serves again (it replaced {champion.version})."
        tail = self.jobs.status().log_tail.strip().splitlines()[-1:] or ["no output"]
        return f"Not rolled back: {tail[0]}" if code is not None else "The rollback is still running…"

    def import_pool(
        self, file: str | None, checks: bool, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> str:
        if not self.is_admin(request, profile):
            return "Sign in first."
        if self.store is None or not file:
            return "Choose a CSV or JSONL file."
        try:
            report = self.store.import_pool(Path(file), source=Path(file).name, checks=bool(checks))
        except FeedbackError as exc:
            return f"Nothing imported: {exc}"
        what = "known-answer check(s)" if checks else "article(s)"
        return f"Imported {report.added} {what} ({report.duplicates} already in the pool)."

    def export(self, fmt: str, request: gr.Request, profile: gr.OAuthProfile | None = None) -> dict[str, Any] | None:
        if not self.is_admin(request, profile) or self.store is None or fmt not in EXPORTS:
            return None
        fd, path = tempfile.mkstemp(prefix="newsloop-feedback-", suffix=f".{fmt}")
        os.close(fd)
        if fmt == "parquet":
            from feedback.dataset import export_dataset  # imports `datasets`: only when asked for

            export_dataset(self.store, Path(path), "parquet")
        else:
            self.store.export(Path(path), fmt)
        return gr.update(value=path, visible=True)

    @property
    def can_push(self) -> bool:
        return bool(self.hub_dataset and self.hub_token and self.hub_token.get_secret_value())

    def push_to_hub(self, request: gr.Request, profile: gr.OAuthProfile | None = None) -> str:
        if not self.is_admin(request, profile):
            return "Sign in first."
        if self.store is None or not self.can_push or self.hub_token is None:
            return "Pushing needs NEWSLOOP_HUB_DATASET and NEWSLOOP_HUB_TOKEN."
        from feedback.dataset import push_dataset

        try:
            url = push_dataset(self.store, self.hub_dataset, self.hub_token.get_secret_value())
        except Exception as exc:  # network, permissions: show why, never a traceback
            log.warning("push to the Hub failed: %s", exc)
            return f"Not pushed: {type(exc).__name__}: {str(exc)[:200]}"
        return f"Pushed every answer to [{self.hub_dataset}]({url}) (a private dataset)."
