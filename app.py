"""NewsLoop's process wiring: read settings, serve the champion, open the feedback store, launch the page.

The page (`web/`) is built around objects it is given (a classifier, a feedback store, typed policies); it
does not load models or read settings itself. `main()` wires the real ones and bootstraps a first champion
when there is none.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from fastapi import APIRouter, FastAPI

from core.command_line import ExitCode
from core.data import DataSourceError, source_labels
from core.host.cpu_share import BESIDE_SERVING_ENV
from core.logs import configure_logging
from core.registry.mlflow_champion import alias_version, champion_source, is_tracking_server, register_starter
from core.registry.starter import install_starter
from core.registry.versions import ModelRegistry
from core.samples import Samples, data_samples
from core.settings.config import ConfigError, Settings, ensure_home, load_settings
from core.storage.locks import LockBusy, file_lock
from core.storage.snapshot_schedule import SnapshotSchedule, restore_if_fresh
from feedback import home_topics
from feedback.database.shared_state import (
    Busy,
    SharedAdminSessions,
    SharedMap,
    SharedRateLimiter,
    database_lock,
    shared_failure_throttle,
)
from feedback.labelling.scoring import PoolScoring
from feedback.store import FeedbackStore
from feedback.traffic.served import save_tallies
from web.admin import page as admin_page
from web.admin.actions import AdminActions, AdminPolicy, AdminShared
from web.admin.jobs import RetrainJobs
from web.admin.routes import admin_router
from web.admin.sessions import TICKET_TTL_S
from web.page import tabs as labellers_page
from web.page.actions import NewsLoopActions, PageShared
from web.server.api import build_api
from web.server.asgi import Page, ServerOptions, address, build_server, serve
from web.server.events import EarlyCheck
from web.server.identity import IdentityService, ProxyPolicy
from web.server.metrics import Metrics, MetricsMiddleware, metrics_router
from web.server.origin_guard import OriginPolicy
from web.server.serving import Classifier, PageLimits
from web.server.tallies import ServedTallies
from web.server.topics import PageTopics

log = logging.getLogger("newsloop.app")


def identity_secret(settings: Settings) -> bytes:
    """The key that signs browser ids: the setting, else a random one kept (0600) in home."""
    if settings.hosting.secret_key is not None and settings.hosting.secret_key.get_secret_value():
        return settings.hosting.secret_key.get_secret_value().encode()
    path = settings.paths.secret_key
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32))
    except FileExistsError:
        pass
    return path.read_text().strip().encode()


def identity_service(settings: Settings) -> IdentityService:
    proxy = ProxyPolicy(hops=settings.hosting.trusted_proxy_hops, addresses=settings.hosting.proxy_address_list)
    return IdentityService(identity_secret(settings), proxy, secure_cookie=settings.hosting.on_space)


def _users(settings: Settings) -> list[tuple[str, str]] | None:
    if settings.hosting.users is None or not settings.hosting.users.get_secret_value().strip():
        return None
    pairs = [entry.split(":", 1) for entry in settings.hosting.users.get_secret_value().split(",") if entry.strip()]
    if any(len(pair) != 2 or not pair[0].strip() or not pair[1] for pair in pairs):
        raise ConfigError("NEWSLOOP_USERS must be 'name:password' entries separated by commas")
    return [(name.strip(), password) for name, password in pairs]


def shared_web_state(settings: Settings, store: FeedbackStore | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """With a shared database, the state replicas must agree on: the page's rate limiters and queue items,
    and admin sessions, sign-in failures and tickets (the fields of PageShared and AdminShared);
    else none, in memory."""
    if not settings.storage.database_url or store is None:
        return {}, {}
    db = store.database
    page = {
        "classify_limit": SharedRateLimiter(db, "classify", settings.limits.classify_per_minute, 60.0),
        "queue_limit": SharedRateLimiter(db, "queue", settings.limits.queue_per_minute, 60.0),
        "queue_items": SharedMap(db, "queue_item"),
    }
    admin = {
        "sessions": SharedAdminSessions(db, settings.hosting.admin_session_minutes * 60.0),
        "throttle": shared_failure_throttle(db),
        "tickets": SharedMap(db, "admin_ticket", ttl_s=TICKET_TTL_S),
    }
    return page, admin


def build_app(classifier: Classifier, settings: Settings, store: FeedbackStore | None = None,
              samples: Samples | None = None) -> FastAPI:
    """The server around `classifier` and `store`: page, REST API, identities and limits cut from `settings`;
    `samples` (Classify's examples) are the configured data's, read from it when not given (`core.samples`)."""
    samples = samples or data_samples_of(settings)
    identities = identity_service(settings)
    page_state, admin_state = shared_web_state(settings, store)
    metrics = serving_metrics(settings, classifier, store)
    scoring = pool_scoring(settings, classifier, store)
    actions = NewsLoopActions(
        metrics.metered(classifier, "page"),
        metrics.counting_answers(store),
        limits=PageLimits.from_settings(settings), queue=settings.queue, identities=identities, refused=metrics.page_refusal,
        pool_added=scoring.nudge if scoring else None, shared=PageShared(**page_state)
    )
    admin = None
    if settings.hosting.admin_enabled:
        admin = AdminActions(
            store, registry=ModelRegistry(settings.paths.models_dir), jobs=RetrainJobs(settings.paths),
            identities=identities, policy=AdminPolicy.from_settings(settings), shared=AdminShared(**admin_state),
            flush_served=metrics.estimates.flush, topics=actions.topics,
        )
    pages = web_pages(actions, admin, settings.hosting.hf_sign_in, samples.examples)
    routers = [*api_routers(metrics.metered(classifier, "api"), actions, identities,
                            settings.serving.max_batch_texts),
               *([admin_router(admin)] if admin else []), *metrics_routers(metrics, settings)]
    early_refusals: list[tuple[Callable[..., Any], EarlyCheck]] = [
        (actions.classify, metrics.counting_refusals(actions.classify_refusal)),
        *([(admin.login, admin.sign_in_refusal)] if admin else [])]
    server = build_server(pages, identities, server_options(settings, routers, early_refusals),
                          is_admin=admin.is_admin if admin else lambda _: False)
    _on_start_and_stop(server, metrics, scoring)
    if settings.serving.metrics:  # outermost: what the guards inside refuse is counted too
        routes = [*server.routes, *(route for router in routers for route in router.routes)]  # templates, unprefixed
        server.add_middleware(MetricsMiddleware, metrics=metrics, routes=routes)
    return server


def server_options(settings: Settings, routers: Sequence[APIRouter],
                   early_refusals: Sequence[tuple[Callable[..., Any], EarlyCheck]]) -> ServerOptions:
    """The server's limits and routes, as `settings` cut them."""
    return ServerOptions(
        max_upload_mb=settings.limits.max_upload_mb,
        # State (database, models, MLflow store, the identity key) must never be downloadable.
        blocked_paths=(str(settings.storage.home),),
        auth=_users(settings),
        session_capacity=settings.limits.session_capacity,
        events_per_address=settings.limits.events_per_address,
        new_sessions_per_minute=settings.limits.new_sessions_per_minute,
        new_sessions_per_second=settings.limits.new_sessions_per_second,
        event_data_mb_per_minute=settings.limits.event_data_mb_per_minute,
        max_input_chars=settings.serving.max_input_chars,
        routers=routers,
        origins=OriginPolicy.from_urls(settings.hosting.public_url_list, settings.hosting.space_host),
        early_refusals=early_refusals,
    )


def _on_start_and_stop(server: FastAPI, metrics: Metrics, scoring: PoolScoring | None) -> None:
    # What this server tallied since its last write is written as it stops (a restart, a Space's redeploy).
    server.router.on_shutdown.append(metrics.estimates.flush)
    if scoring is not None:  # the pool is scored while the server runs, never inside a labeller's request
        server.router.on_startup.append(scoring.start)
        server.router.on_shutdown.append(scoring.stop)


def web_pages(actions: NewsLoopActions, admin: AdminActions | None, hf_sign_in: bool,
              examples: Sequence[str]) -> list[Page]:
    """The labellers' page at / and, when an admin can sign in, the maintainers' at /admin/: two Gradio apps over the
    same services, on one server. Nothing of the admin's is in the labellers' page but a link."""
    pages = [Page(labellers_page.build_page(actions, examples=examples, hf_sign_in=hf_sign_in,
                                            admin_link=admin is not None), scripts=labellers_page.SCRIPTS)]
    if admin is not None:
        pages.append(Page(admin_page.build_admin_page(admin, hf_sign_in=hf_sign_in), path=admin_page.MOUNT_PATH,
                          scripts=admin_page.SCRIPTS))
    for page in pages:
        # api_open=False: every event goes through the queue (its concurrency and size limits); no direct POST.
        page.blocks.queue(api_open=False, default_concurrency_limit=8, max_size=256)
    return pages


def serving_metrics(settings: Settings, classifier: Classifier, store: FeedbackStore | None) -> Metrics:
    """This app's metrics (web.server.metrics), in a registry of its own, with the served tallies written to the
    store (feedback.traffic.served). Built whether or not NEWSLOOP_METRICS serves them: the admin view, `status` and
    `watch` read the tallies."""
    required = settings.queue.labels_required
    pool_left = (lambda: store.pool.items_left(required)) if store is not None else None
    save = (lambda writer, tallies: save_tallies(store.database, writer, tallies)) if store is not None else None
    return Metrics(lambda: classifier.version, pool_left, settings.paths, tallies=ServedTallies(save),
                   topics=PageTopics(classifier, store))


def pool_scoring(settings: Settings, classifier: Classifier, store: FeedbackStore | None) -> PoolScoring | None:
    """The background scorer of the pool (feedback.labelling.scoring): the champion scores what it has not scored
    every `pool_scoring_s` seconds; none without a store."""
    if store is None:
        return None
    return PoolScoring(store.pool, lambda: classifier.version, classifier.proba_in_label_order,
                       settings.serving.pool_scoring_s, labels=PageTopics(classifier, store).model_labels)


def metrics_routers(metrics: Metrics, settings: Settings) -> list[APIRouter]:
    """GET /metrics when metrics are on: behind NEWSLOOP_METRICS_TOKEN when one is set, refused on a Space without."""
    if not settings.serving.metrics:
        return []
    token = settings.serving.metrics_token.get_secret_value() if settings.serving.metrics_token else None
    return [metrics_router(metrics, token or None, public=settings.hosting.on_space)]


def api_routers(classifier: Classifier, actions: NewsLoopActions, identities: IdentityService,
                max_batch_texts: int) -> list[APIRouter]:
    """The REST API beside the page (web.server.api), sharing the page's limits, rate limiter and identity rules."""
    return [build_api(classifier, actions.limits, actions.classify_limit, identities.address_of,
                      max_batch_texts=max_batch_texts, topics=PageTopics(classifier, actions.store))]


def data_samples_of(settings: Settings) -> Samples:
    """Classify's examples and the demo articles of the configured data (`core.samples`): its own, or AG News's when
    it is AG News. Raises DataSourceError for data that cannot be read (the app then will not start)."""
    data = settings.data
    return data_samples(data.source, data.val_fraction, data.use_extra, data.examples)


def ensure_champion(settings: Settings) -> None:
    """Serve the shipped starter when there is no champion; train one (in a child process, so this serving
    process never imports torch) only when the starter does not predict the configured data's topics (data of
    your own topics: `core.data.source_labels`)."""
    registry = ModelRegistry(settings.paths.models_dir)
    if registry.champion() is not None:
        return
    labels = source_labels(settings.data.source, settings.data.use_extra)
    if install_starter(registry, labels=labels) is not None:
        return
    log.info("no champion model and no starter for the topics %s: training one now (progress below)", ", ".join(labels))
    code = subprocess.run([sys.executable, "-m", "retrain", "bootstrap"], check=False).returncode
    if code:  # the bootstrap said why, in one line, above
        print("NewsLoop will not start: the bootstrap failed (above).", file=sys.stderr)
        sys.exit(code)


def register_starter_on_server(settings: Settings, wait_s: float = 300.0) -> None:
    """A fresh tracking server has no @champion: the first replica to find none registers the shipped starter,
    under the retrain lock (this home's, and the shared database's advisory lock, which excludes every machine).
    A replica that finds the lock held waits (up to `wait_s`) for the holder to register it, then serves it."""
    if not is_tracking_server(settings.tracking_uri) or alias_version(settings.tracking_uri) is not None:
        return
    shared = database_lock(settings.storage.database_url) if settings.storage.database_url else contextlib.nullcontext()
    try:
        with file_lock(settings.paths.retrain_lock, blocking=False), shared:
            register_starter(settings.tracking_uri, labels=source_labels(settings.data.source, settings.data.use_extra))
    except (LockBusy, Busy):
        log.info("the retrain lock is held elsewhere: waiting for @champion to be registered")
        deadline = time.monotonic() + wait_s
        while alias_version(settings.tracking_uri) is None and time.monotonic() < deadline:
            time.sleep(1.0)


def seed_topics(store: FeedbackStore, service: Classifier) -> None:
    """The taxonomy starts from the serving champion's topics: stored as version 1 when the feedback database has
    none yet (a no-op otherwise, and when no champion serves yet). Data of your own topics is served with its own
    topics from the first answer; the AG News four for a fresh clone, as before. A stored list that does not fit
    the champion's topics (a champion of other data) is refused, in one sentence naming the fix, before any page
    (`feedback.home_topics`); one nobody worked under becomes the champion's."""
    if service.version is None:
        return
    labels = PageTopics(service, store).model_labels()
    said = home_topics.fits(store, labels, whose=f"the champion {service.version}'s",
                            fresh="serve a fresh home (NEWSLOOP_HOME=<another folder> newsloop serve)")
    if said:
        log.warning("%s", said)
    taxonomy = store.topics.seed(labels, why="the champion's topics, when the app first served it")
    if taxonomy.keys != labels:  # the maintainers' changes since
        log.info("the champion predicts %s; the topics (taxonomy version %d) are %s", ", ".join(labels),
                 taxonomy.version, ", ".join(taxonomy.names))


def start_snapshots(settings: Settings) -> SnapshotSchedule | None:
    """Restore a wiped host from the durable directory, then keep snapshotting to it (see core.storage.durable)."""
    if settings.storage.durable_dir is None:
        return None
    restored = restore_if_fresh(settings.paths, settings.storage.durable_dir)
    if restored is not None:
        log.info("restored state from %s", restored)
    schedule = SnapshotSchedule(settings.paths, settings.storage.durable_dir, settings.storage.snapshot_minutes * 60)
    schedule.start()
    schedule.snapshot_on_sigterm()
    return schedule


def start_schedule(settings: Settings) -> threading.Thread | None:
    """In-app retrain schedule: every interval, a child process retrains if enough feedback has arrived."""
    if settings.retrain.interval_min <= 0:
        return None

    def loop() -> None:
        while True:
            time.sleep(settings.retrain.interval_min * 60)
            # `watch --once` counts new trusted answers itself (feedback.training.readiness); the retrain lock prevents overlap.
            subprocess.run([sys.executable, "-m", "retrain", "watch", "--once"], check=False,
                           env=os.environ | BESIDE_SERVING_ENV)  # it shares the app's cores (core.host.cpu_share)

    thread = threading.Thread(target=loop, name="retrain-schedule", daemon=True)
    thread.start()
    return thread


def announcement(settings: Settings) -> str:
    """The line `newsloop serve` prints once it listens: where to open the page, and the maintainers' page."""
    url = address(settings.serving.host, settings.serving.port)
    everywhere = " (listening on every address)" if settings.serving.host in ("0.0.0.0", "::") else ""
    admin = f"; maintainers: {url}admin/" if settings.hosting.admin_enabled else ""
    return f"NewsLoop serves at {url}{everywhere}{admin} (Ctrl+C stops it)"


def main(verbose: bool = False, **overrides: Any) -> None:
    """Serve; `overrides` are settings by flat name (`newsloop serve --host/--port`)."""
    configure_logging(logging.INFO, verbose=verbose)
    try:
        settings = load_settings(**overrides)
    except ConfigError as exc:  # e.g. a weak admin password on a public host: refuse to start, saying why
        print(f"NewsLoop will not start: {exc}", file=sys.stderr)
        sys.exit(ExitCode.CONFIG)
    ensure_home(settings)
    start_snapshots(settings)
    try:
        ensure_champion(settings)
        register_starter_on_server(settings)
        samples = data_samples_of(settings)
    except DataSourceError as exc:  # NEWSLOOP_DATA names a file or folder it refuses: say so, in one line
        print(f"NewsLoop will not start: {exc}", file=sys.stderr)
        sys.exit(ExitCode.BAD_INPUT)
    from core.serving.classifier import (
        ChampionService,  # here, so `import app` (tests, tools) does not load ONNX Runtime
    )

    service = ChampionService(
        champion_source(settings.tracking_uri, settings.paths.models_dir),
        threads=settings.serving.onnx_threads,
        check_interval_s=settings.serving.reload_interval_s,
        max_batch=settings.serving.max_batch,
        batch_wait_ms=settings.serving.batch_wait_ms,
    )
    service.refresh()
    service.start_watching()
    store = FeedbackStore.from_settings(settings)
    try:
        seed_topics(store, service)  # the champion's topics are the taxonomy's version 1 (kept if one is stored)
    except home_topics.HomeMismatch as exc:  # a champion of other topics than the home's: before any page
        print(f"NewsLoop will not start: {exc}", file=sys.stderr)
        sys.exit(ExitCode.BAD_INPUT)
    if settings.queue.demo_pool:  # something to label from the first minute; a first import replaces it
        store.pool.offer_demo(samples.demo)
    start_schedule(settings)
    serve(build_app(service, settings, store, samples), settings.serving.host, settings.serving.port,
          announcement(settings))


if __name__ == "__main__":
    main()
