"""The maintainer's actions: sign-in, overview, answer review, retrain and rollback, pool import, export."""

from __future__ import annotations

import asyncio
import functools
import hmac
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import gradio as gr
from pydantic import SecretStr

from core.evaluation.decision import FeedbackParts
from core.registry.versions import ModelRegistry
from core.serving.limits import FailureThrottle
from core.settings.config import Settings
from core.settings.hosting import HostingSection
from core.settings.policies import GateConfig, MonitorPolicy, QueuePolicy, RetrainPolicy, TrustPolicy
from core.taxonomy import Taxonomy
from feedback.errors import FeedbackError
from feedback.export.files import export_answers
from feedback.store import FeedbackStore
from feedback.topics import changes as topic_changes
from feedback.topics.changes import BaseData
from web.admin import report
from web.admin.exports import ExportDownloads, Offer
from web.admin.guard import admin_only
from web.admin.jobs import RetrainJobs
from web.admin.sessions import AdminSessions, SignedInBrowsers, SignInTickets
from web.server.identity import IdentityService
from web.server.session_memory import SessionMap
from web.server.topics import PageTopics

if TYPE_CHECKING:
    from feedback.monitoring import TrafficReport

log = logging.getLogger("newsloop.app")
EXPORTS = ("csv", "jsonl", "parquet")
BAD_LISTED = 20  # bad rows an upload's message names (`newsloop import --skip-bad` lists every one)  # parquet: a Hugging Face `datasets` table with ClassLabel features


@dataclass(frozen=True)
class AdminPolicy:
    """What the settings decide for the maintainers' view, cut from them at the edge (`AdminPolicy.from_settings`);
    each default is its setting's (tests build it bare, or with the few fields they need)."""

    password: SecretStr | None = None  # NEWSLOOP_ADMIN_PASSWORD; None (and no `admins`): nobody can sign in
    admins: frozenset[str] = frozenset()  # Hugging Face accounts that are admins on a Space
    session_minutes: float = HostingSection.field_default("admin_session_minutes")
    trust: TrustPolicy = field(default_factory=TrustPolicy)
    retrain: RetrainPolicy = field(default_factory=RetrainPolicy)
    promotion: GateConfig = field(default_factory=GateConfig)
    monitor: MonitorPolicy = field(default_factory=MonitorPolicy)
    queue_traffic_share: float = QueuePolicy.field_default("traffic_share")
    hub_dataset: str = ""
    hub_token: SecretStr | None = None
    export_dir: Path | None = None  # where one-time exports are written (None: a temporary folder)
    # The base data's labels and name, for the previews of a topic change and of a retrain: read only when asked.
    base_data: Callable[[], BaseData] = BaseData

    @classmethod
    def from_settings(cls, settings: Settings) -> AdminPolicy:
        """The maintainers' view's policy, cut from the settings."""
        return cls(
            password=settings.hosting.admin_password,
            admins=settings.hosting.admin_list,
            session_minutes=settings.hosting.admin_session_minutes,
            trust=settings.trust_policy(),
            retrain=settings.retrain_policy(),
            promotion=settings.gate,
            monitor=settings.monitor,
            queue_traffic_share=settings.queue.traffic_share,
            hub_dataset=settings.storage.hub_dataset,
            hub_token=settings.storage.hub_token,
            export_dir=settings.storage.home / "exports",  # under home: never served by Gradio (blocked_paths)
            base_data=lambda: topic_changes.base_data(settings),
        )


@dataclass(frozen=True)
class AdminShared:
    """What replicas over one database must agree on (app.shared_web_state): signed-in browsers, sign-in failures
    and sign-in tickets. None: this process's own, in memory."""

    sessions: SignedInBrowsers | None = None
    throttle: FailureThrottle | None = None
    tickets: SessionMap | None = None


class AdminActions:
    """The maintainer's view. Every admin handler is wrapped in `admin_only` (web.admin.guard), which checks
    the caller server-side: hiding the panel is not security.

    An admin is a browser that signed in with the password (`AdminSessions`), or, on a Space, a Hugging
    Face account named in `admins`.
    """

    def __init__(
        self,
        store: FeedbackStore | None,
        *,
        registry: ModelRegistry,
        jobs: RetrainJobs,
        identities: IdentityService,
        policy: AdminPolicy | None = None,
        shared: AdminShared | None = None,
        flush_served: Callable[[], None] | None = None,
        topics: PageTopics | None = None,
    ) -> None:
        policy = policy or AdminPolicy()
        shared = shared or AdminShared()
        self.store = store
        self.password = policy.password
        self.registry = registry
        self.jobs = jobs
        self.identities = identities
        self.admins = policy.admins
        self.sessions: SignedInBrowsers = shared.sessions or AdminSessions(policy.session_minutes * 60.0)
        self.throttle = shared.throttle or FailureThrottle()
        self.tickets = SignInTickets(shared.tickets)
        self.exports = ExportDownloads(policy.export_dir)
        self.trust = policy.trust
        self.retrain = policy.retrain
        self.promotion = policy.promotion  # the gate's settings: the preview sizes the evidence by them
        self.queue_traffic_share = policy.queue_traffic_share  # the setting's, until a maintainer sets one here
        self.hub_dataset = policy.hub_dataset
        self.hub_token = policy.hub_token
        self.monitor = policy.monitor
        self.flush_served = flush_served or (lambda: None)  # this server's served tallies, written before a read
        self.topics = topics  # the taxonomy over the served model's labels (the page's), for the Topics panel
        # The base data's label keys, one per row, and its name: what a topic change's preview counts and names, and
        # the retrain preview names (read once, when first asked).
        self.base_data = functools.cache(policy.base_data)

    @property
    def enabled(self) -> bool:
        return (self.password is not None and bool(self.password.get_secret_value())) or bool(self.admins)

    def is_admin(self, request: Any, profile: gr.OAuthProfile | None = None) -> bool:
        """Whether this request (a gr.Request or a Starlette request) comes from a signed-in admin: a password
        session, or a `NEWSLOOP_ADMINS` Hugging Face account (`profile`, which Gradio injects into handlers)."""
        if request is None:
            return False
        who = self.identities.identify(request, profile)
        if who.verified and who.annotator.removeprefix("user:") in self.admins:
            return True
        return self.sessions.valid(who.browser)

    def is_admin_event(self, request: Any, profile: gr.OAuthProfile | None = None) -> bool:
        """`is_admin`, for an event sent by the admin's own page: it carries the browser's anti-forgery token,
        which a request forged by another site cannot (web.server.identity.FORM_HEADER)."""
        return self.is_admin(request, profile) and self.identities.sent_form_token(request)

    def taxonomy(self) -> Taxonomy:
        """The topic list as the pages read it (over the served model's labels)."""
        return (self.topics or PageTopics(None, self.store)).taxonomy()

    def topic_names(self) -> tuple[str, ...]:
        """The taxonomy's current topic names, in order (what the panels offer to filter, relabel and settle by)."""
        return self.taxonomy().names

    def model_names(self, meta: Mapping[str, Any]) -> list[str]:
        """A model's own topics (its meta's `labels`, else the served model's), by their current names."""
        topics = self.topics or PageTopics(None, self.store)
        taxonomy = topics.taxonomy()
        return [taxonomy.name_of(key) for key in meta.get("labels") or topics.model_labels()]

    def signed_in_as(self, request: Any, profile: gr.OAuthProfile | None = None) -> str:
        """Who a change is recorded as made by: the Hugging Face account, or "an admin (password)"."""
        who = self.identities.identify(request, profile)
        return who.annotator.removeprefix("user:") if who.verified else "an admin (password)"

    def restore(
        self, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """On page load: a browser still signed in gets its panel back without the password."""
        if not self.is_admin(request, profile):
            return "", gr.update(visible=False), gr.update(visible=True)
        return "Signed in.", gr.update(visible=True), gr.update(visible=False)

    def sign_in_refusal(self, request: Any) -> str | None:
        """Why a sign-in from this request's address is refused before it joins the page's queue (too many
        failures: `web.server.asgi.RequestGuard` answers 429 at once), or None."""
        return self._locked_out(self.identities.address_of(request))

    def _locked_out(self, address: str) -> str | None:
        wait = self.throttle.wait(address)
        return f"Too many failed attempts: try again in {wait:.0f} s." if wait else None

    async def login(
        self, password: str, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> tuple[str, str]:
        """Check the password; on success the tab gets a ticket (second output) that its next request trades
        for a fresh browser id with the admin session (`redeem`), so a planted id never becomes an admin.

        Async so that the slow-down below waits on the event loop, holding no worker thread; the login event
        has no concurrency limit (`web.admin.view`), so guesses that wait never delay anyone else."""
        # Many failures from everyone together slow every attempt down, the right password included, but
        # never refuse it: a guessing run from many addresses cannot lock the real admin out.
        delay = await anyio.to_thread.run_sync(self.throttle.delay)  # a shared throttle reads the database
        if delay:
            await asyncio.sleep(delay)
        return await anyio.to_thread.run_sync(self._check_password, password, request, profile)

    def _check_password(self, password: str, request: gr.Request, profile: gr.OAuthProfile | None) -> tuple[str, str]:
        if not self.enabled:
            return "The admin view is disabled on this server.", ""
        if self.is_admin(request, profile):
            return "Signed in.", ""
        who = self.identities.identify(request)
        if not who.browser:
            return "Your browser did not send its NewsLoop id: reload the page (cookies must be on).", ""
        if self.password is None or not self.password.get_secret_value():
            return "Sign in with an admin's Hugging Face account.", ""
        refusal = self._locked_out(who.address)  # also checked before the queue; a burst may pass that together
        if refusal:
            return refusal, ""
        given = password if isinstance(password, str) else ""
        if not hmac.compare_digest(given.encode("utf-8", "replace"), self.password.get_secret_value().encode()):
            self.throttle.failed(who.address)
            log.warning("admin login refused for %s", who.address)
            return "Wrong password.", ""
        log.info("admin signed in from %s", who.address)
        return "Signing in…", self.tickets.issue(who.browser, admin=True)

    def after_sign_in(
        self, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> tuple[Any, dict[str, Any], dict[str, Any]]:
        """Once the tab redeemed its ticket: the panel for an admin; the sign-in box (and the message) else."""
        if self.is_admin(request, profile):
            return "Signed in.", gr.update(visible=True), gr.update(visible=False)
        return gr.skip(), gr.update(visible=False), gr.update(visible=True)

    def logout(
        self, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> tuple[str, dict[str, Any], dict[str, Any], str]:
        """End the session; the ticket (last output) gives the browser a fresh id, as signing in did."""
        browser = self.identities.identify(request).browser
        self.sessions.close(browser)
        ticket = self.tickets.issue(browser, admin=False) if browser else ""
        return "Signed out.", gr.update(visible=False), gr.update(visible=True), ticket

    def redeem(self, ticket: object, request: Any) -> str | None:
        """For the browser a sign-in or sign-out ticket was issued to (a Starlette request): a fresh browser
        id cookie value, with the admin session moved to it on sign-in; None for any other ticket."""
        old = self.identities.identify(request).browser
        signs_in = self.tickets.redeem(ticket, old)
        if signs_in is None:
            return None
        self.sessions.close(old)
        cookie = self.identities.mint_cookie()
        if signs_in:
            self.sessions.open(self.identities.browser_key(cookie))
        return cookie

    def trusted_parts(self) -> FeedbackParts | None:
        """The trusted texts by part, as the next retrain would split them (the preview's and the run's count)."""
        from feedback.training.snapshot import trusted_parts  # here: only the admin view's overview needs it

        if self.store is None:
            return None
        return trusted_parts(self.store, self.trust, self.retrain.holdout_fraction)

    @admin_only(lambda _: ("Sign in first.", gr.update(visible=False)))
    def retrain_preview(
        self, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> tuple[str, dict[str, Any]]:
        """What a retrain would train on and how long it should take, before it starts."""
        if self.store is None:
            return "There is no feedback store on this server.", gr.update(visible=False)
        from feedback.training.readiness import readiness  # here: only the retrain preview needs it

        job = self.jobs.status()
        if job.retraining:
            return "A retrain is already running: its progress is shown above.", gr.update(visible=False)
        if job.running:  # a label-error search, a rollback: the retrain waits for it, and says so
            return (f"{job.what[:1].upper()}{job.what[1:]} is running (`newsloop {job.command}`): a retrain can start "
                    "when it ends.", gr.update(visible=False))
        ready = readiness(self.store, self.trust, self.retrain, self.promotion, self.jobs.last_run())
        expected = self.jobs.expected(trains=ready.parts.train > 0)
        # The data it reads, named: the seed set standing in for an unreachable hub dataset says so.
        data = f"\n\nBase data: {self.base_data().description or 'none configured'}."
        return report.preview_text(ready, expected, self.traffic()) + data, gr.update(visible=True)

    def traffic(self) -> TrafficReport | None:
        """The champion on its traffic: estimated and measured by day and form, the window's alert and drift."""
        if self.store is None:
            return None
        from feedback.monitoring import traffic_report  # here: only the overview and the preview need it

        self.flush_served()
        status = self.registry.status()
        return traffic_report(self.store, status["champion"], status.get("champion_meta") or {}, self.monitor,
                              self.trust)

    def credible_waiting(self) -> int:
        """Suspicious answers from signed-in or checked people waiting for review (see `report.review_line`)."""
        from feedback.trust.credible import credible_waiting

        return credible_waiting(self.store.database, self.trust) if self.store is not None else 0

    @admin_only(lambda _: ("Sign in first.", gr.update(visible=False), gr.Timer(active=False)))
    def launch_retrain(
        self, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> tuple[str, dict[str, Any], gr.Timer]:
        message = self.jobs.start("run")
        started = message.startswith("Started")
        shown = "Retrain started: progress below, refreshed every few seconds." if started else message
        return shown, gr.update(visible=False), gr.Timer(active=True)

    @admin_only()
    def rollback(self, request: gr.Request, profile: gr.OAuthProfile | None = None) -> str:
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

    @admin_only()
    def import_pool(
        self, file: str | None, checks: bool, skip_bad: bool, request: gr.Request,
        profile: gr.OAuthProfile | None = None,
    ) -> str:
        if self.store is None or not file:
            return "Choose a CSV or JSONL file."
        try:
            report = self.store.pool.import_file(Path(file), source=Path(file).name, checks=bool(checks),
                                            skip_bad=bool(skip_bad))
        except FeedbackError as exc:
            return f"Nothing imported: {exc}"
        what = "known-answer check(s)" if checks else "article(s)"
        replaced = f" They replace the demo pool ({report.demo_removed} demo articles removed)." if report.demo_removed else ""
        bad = ""
        if report.bad:
            listed = "; ".join(f"line {line}: {problem}" for line, problem in report.bad[:BAD_LISTED])
            more = f"; and {len(report.bad) - BAD_LISTED} more" if len(report.bad) > BAD_LISTED else ""
            bad = f" **{len(report.bad)} bad row(s) left out**: {listed}{more}."
        return f"Imported {report.added} {what} ({report.duplicates} already in the pool).{replaced}{bad}"

    @admin_only("")
    def export(self, fmt: str, request: gr.Request, profile: gr.OAuthProfile | None = None) -> str:
        """A one-time download link for this admin's browser (`take_export`); the file is gone once fetched."""
        if self.store is None or fmt not in EXPORTS:
            return ""
        path = self.exports.new_file(f".{fmt}")
        if fmt == "parquet":
            from feedback.export.dataset import export_dataset  # imports `datasets`: only when asked for

            export_dataset(self.store, path, "parquet")
        else:
            export_answers(self.store, path, fmt)
        name = f"newsloop-feedback-{time.strftime('%Y%m%d-%H%M%S')}.{fmt}"
        token = self.exports.offer(path, name, self.identities.identify(request).browser)
        minutes = self.exports.ttl_s / 60
        return (f'<a href="export/{token}" download="{name}" id="export-link">Download {name}</a> '
                f"(once, from this browser, within {minutes:.0f} minutes)")

    @admin_only(None, page_event=False)  # a link the page showed: its one-time token shows the page made it
    def take_export(self, token: str, request: Any) -> Offer | None:
        """The export behind `token` if this request is the admin browser it was made for (used up)."""
        return self.exports.take(token, self.identities.identify(request).browser)

    @property
    def can_push(self) -> bool:
        return bool(self.hub_dataset and self.hub_token and self.hub_token.get_secret_value())

    @admin_only()
    def push_to_hub(self, request: gr.Request, profile: gr.OAuthProfile | None = None) -> str:
        if self.store is None or not self.can_push or self.hub_token is None:
            return "Pushing needs NEWSLOOP_HUB_DATASET and NEWSLOOP_HUB_TOKEN."
        from feedback.export.dataset import push_dataset

        try:
            url = push_dataset(self.store, self.hub_dataset, self.hub_token.get_secret_value())
        except Exception as exc:  # network, permissions: show why, never a traceback
            log.warning("push to the Hub failed: %s", exc)
            return f"Not pushed: {type(exc).__name__}: {str(exc)[:200]}"
        return f"Pushed every answer to [{self.hub_dataset}]({url}) (a private dataset)."
