"""The arq worker: a 06:17 UTC cron fans out one compaction job per active tenant and day,
a loop for the worker's life delivers webhooks from the outbox of each tenant that has
any, another forgets old changes hourly, and another embeds the entries of the tenants
whose embedder is their gateway.

Jobs call the same services as the API (app.services.compaction.compact_tenant);
nothing here touches a database directly. Run it with `jet-memory worker` or
`arq app.worker.WorkerSettings`.
"""

import asyncio
import contextlib
import logging
import math
import os
import socket
import threading
import time
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any
from wsgiref.simple_server import WSGIServer

import httpx
from arq import cron, func
from arq.connections import ArqRedis, RedisSettings, create_pool
from arq.constants import default_queue_name, health_check_key_suffix
from arq.cron import CronJob
from arq.typing import StartupShutdown, WorkerCoroutine
from arq.worker import Function
from prometheus_client import start_http_server
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from app import deps, ids, logs
from app.adapters import webhook_sender
from app.config import Settings
from app.processes.embedded_redis import recorded_url
from app.services import compaction
from app.services.changes import change_events, delivery, webhooks
from app.services.compaction import CompactionRunRecord
from app.services.search.indexer import Indexer

log = logging.getLogger(__name__)

DEFAULT_REDIS_URL = "redis://localhost:6379"
# How a worker rides out a Redis outage (see redis_settings_for): retries with exponential
# backoff capped at REDIS_BACKOFF_CAP_S, about REDIS_OUTAGE_SECONDS in all.
REDIS_BACKOFF_CAP_S = 2.0
REDIS_OUTAGE_SECONDS = 60
REDIS_RETRIES = int(REDIS_OUTAGE_SECONDS / REDIS_BACKOFF_CAP_S)
# Long enough for a first run over years of history; a run cut short by it has still
# committed (and counted) the buckets it folded, and the rest waits for the next day.
# A run is taken for dead by its heartbeat or its gone process, never by its age.
JOB_TIMEOUT = timedelta(hours=1)
# arq refuses an id while the job or its result exists: keeping the result past the end
# of the day is what makes a second fan-out on the same day enqueue nothing.
KEEP_RESULT = timedelta(days=2)
# A try ends early when a worker is stopped (arq re-queues the job) or killed (another
# worker takes the job once its in-progress key expires, JOB_TIMEOUT + 10 s later).
MAX_TRIES = 3
# How often a worker writes its health-check key (arq's default is an hour); the key lives
# one second longer, so a worker gone for longer than this fails `jet-memory worker-check`.
HEALTH_CHECK_INTERVAL = timedelta(seconds=60)
CHECK_TIMEOUT_S = 2  # each step of `jet-memory worker-check`: connect, then read the key

# The webhook loop (deliver_webhooks): how often it lists the tenants with webhooks again
# (a tenant's first endpoint is delivered within this), how many tenants it works on at once;
# and how often the upkeep (keep_changes) forgets old changes and deliveries.
TENANTS_REFRESH_SECONDS = 1.0
WEBHOOK_TENANTS_AT_ONCE = 32
PRUNE_SECONDS = 3600.0
UPKEEP_RETRY_SECONDS = 10.0  # after the control database failed to list the tenants

Ctx = dict[str, Any]


def job_id(tenant_id: str, day: date) -> str:
    """The id of a tenant's compaction job for one UTC day."""
    return f"compact:{tenant_id}:{day.isoformat()}"


def redis_settings_for(url: str | None) -> RedisSettings:
    settings = RedisSettings.from_dsn(url or DEFAULT_REDIS_URL)
    # arq 0.28 has no reconnect loop: one ConnectionError in its poll loop ends the worker
    # (exit 1). With redis-py retrying every command (and connect) with backoff, a Redis
    # restart or an outage of up to ~REDIS_OUTAGE_SECONDS just pauses the worker; it goes on
    # by itself once Redis answers again. A longer outage still ends it: run the worker
    # under a restart policy (compose `restart: unless-stopped`, systemd `Restart=always`).
    # The cost: a SIGTERM during an outage waits up to as long (arq's close() talks to Redis).
    settings.retry = Retry(ExponentialBackoff(cap=REDIS_BACKOFF_CAP_S, base=0.1), REDIS_RETRIES)
    # OSError: redis-py 5 retries connect() only for it (a refused connection is not yet
    # a redis ConnectionError there).
    settings.retry_on_error = [RedisConnectionError, RedisTimeoutError, OSError]
    return settings


async def fan_out(ctx: Ctx, *, now: datetime | None = None) -> int:
    """Enqueue today's compaction job of every active tenant; returns how many were new."""
    day = (now or datetime.now(UTC)).astimezone(UTC).date()
    redis: ArqRedis = ctx["redis"]
    tenant_ids = await compaction.active_tenant_ids(ctx["container"].control)
    enqueued = 0
    for tenant_id in tenant_ids:
        job = await redis.enqueue_job(
            compact_tenant_job.__name__, tenant_id, day.isoformat(), _job_id=job_id(tenant_id, day)
        )
        enqueued += job is not None
    log.info(
        "compaction fan-out %s: %d active tenants, %d jobs enqueued, %d already queued or done",
        day.isoformat(),
        len(tenant_ids),
        enqueued,
        len(tenant_ids) - enqueued,
    )
    return enqueued


async def compact_tenant_job(ctx: Ctx, tenant_id: str, day: str) -> dict[str, Any]:
    """One tenant's daily compaction run; the result arq keeps is a small summary."""
    run = await compaction.compact_tenant(
        ctx["container"], tenant_id, trigger="cron", http=ctx["http"]
    )
    summary = run_summary(run)
    log.info(
        "compaction %s of tenant %s for %s (try %s): %s",
        summary.get("run_id"),
        tenant_id,
        day,
        ctx.get("job_try", 1),
        " ".join(f"{k}={v}" for k, v in summary.items() if k != "run_id"),
    )
    return summary


def run_summary(run: CompactionRunRecord) -> dict[str, Any]:
    """Status and counts of a run: never its problem lines, which name scopes."""
    return {
        "run_id": run.id,
        "status": run.status.value,
        "buckets_compacted": run.buckets_compacted,
        "buckets_skipped": run.buckets_skipped,
        "entries": run.periods,
        "events_compressed": run.events_compressed,
        "tokens": run.prompt_tokens + run.completion_tokens,
        "budget_exceeded": run.budget_exceeded,
        "problems": len(run.problems),
    }


async def deliver_webhooks(ctx: Ctx) -> None:
    """Runs for the worker's life: a pass over the webhooks of every active tenant that has
    any (marked in the control database when its first endpoint was registered) each
    webhook_poll_seconds (app.services.changes.delivery). A tenant without webhooks costs
    the loop nothing, however many there are."""
    container: deps.Container = ctx["container"]
    settings = container.settings
    config = delivery.DeliveryConfig.of(settings)
    limit = asyncio.Semaphore(settings.webhook_concurrency)
    owner = f"{socket.gethostname()}:{os.getpid()}:{ids.new_id('wrk')[-8:]}"
    tenant_ids: list[str] = []
    listed_at = -math.inf
    while True:
        started = time.monotonic()
        if started - listed_at > TENANTS_REFRESH_SECONDS:
            try:
                tenant_ids = await container.control.webhook_tenant_ids()
                listed_at = started
            except Exception:
                # The control database is unavailable: keep delivering to the tenants
                # known, and try the list again next pass; the loop must never die.
                log.exception("webhook loop: listing the tenants with webhooks failed")
        for chunk in _chunks(tenant_ids):
            await asyncio.gather(
                *(
                    _webhook_pass(container, t, ctx["webhook_http"], config, owner, limit)
                    for t in chunk
                )
            )
        await asyncio.sleep(max(0.0, settings.webhook_poll_seconds - (time.monotonic() - started)))


def _chunks(tenant_ids: list[str]) -> list[list[str]]:
    at_once = WEBHOOK_TENANTS_AT_ONCE
    return [tenant_ids[at : at + at_once] for at in range(0, len(tenant_ids), at_once)]


async def _webhook_pass(
    container: deps.Container,
    tenant_id: str,
    http: webhook_sender.Client,
    config: delivery.DeliveryConfig,
    owner: str,
    limit: asyncio.Semaphore,
) -> None:
    try:
        async with container.tenants.lease(tenant_id) as db:
            await delivery.deliver_tenant(db, http, config, owner=owner, limit=limit)
    except Exception:
        # One tenant's trouble (a locked or unavailable database) never stops the others;
        # its deliveries wait in its outbox for the next pass.
        log.exception("webhook pass of tenant %s failed; retried next pass", tenant_id)


async def keep_changes(ctx: Ctx) -> None:
    """Runs for the worker's life: at start and then once every PRUNE_SECONDS, over every
    active tenant, forget changes and delivered deliveries older than changes_keep_days,
    and mark a tenant that has a webhook endpoint but no mark (one registered before the
    marks existed) so that deliver_webhooks visits it."""
    container: deps.Container = ctx["container"]
    keep = timedelta(days=container.settings.changes_keep_days)
    while True:
        started = time.monotonic()
        try:
            tenant_ids = await compaction.active_tenant_ids(container.control)
            marked = set(await container.control.webhook_tenant_ids())
        except Exception:
            log.exception("changes upkeep: listing the tenants failed; retried shortly")
            await asyncio.sleep(UPKEEP_RETRY_SECONDS)
            continue
        for chunk in _chunks(tenant_ids):
            await asyncio.gather(*(_upkeep(container, t, keep, t in marked) for t in chunk))
        await asyncio.sleep(max(0.0, PRUNE_SECONDS - (time.monotonic() - started)))


async def _upkeep(container: deps.Container, tenant_id: str, keep: timedelta, marked: bool) -> None:
    try:
        async with container.tenants.lease(tenant_id) as db:
            await change_events.prune_changes(db, keep=keep)
            await delivery.prune_deliveries(db, keep=keep)
            if not marked and await webhooks.has_endpoints(db):
                await container.control.mark_webhooks(tenant_id)
    except Exception:
        log.exception("changes upkeep of tenant %s failed; retried next hour", tenant_id)


async def startup(ctx: Ctx) -> None:
    # Tests hand in their own Settings; a deployed worker reads JET_* from the environment.
    settings: Settings = ctx.get("settings") or Settings()
    if not logging.getLogger().handlers:  # `arq …` configures only its own loggers
        logs.configure(settings.log_level, settings.log_format)
    if settings.worker_metrics_port is not None:
        # prometheus-client's own server, on a daemon thread: /metrics only.
        ctx["metrics_server"] = start_http_server(
            settings.worker_metrics_port, addr=settings.worker_metrics_host
        )
        log.info(
            "worker metrics on http://%s:%d/metrics",
            settings.worker_metrics_host,
            settings.worker_metrics_port,
        )
    ctx["container"] = await deps.build(settings)
    # One client for every job of this worker: connections to a tenant's gateway are
    # reused across its buckets. Timeouts are per request, from the tenant's policy.
    ctx["http"] = httpx.AsyncClient()
    deliveries = delivery.DeliveryConfig.of(settings)
    ctx["webhook_http"] = webhook_sender.new_client(deliveries.allowed, seconds=deliveries.timeout)
    ctx["webhooks"] = asyncio.create_task(deliver_webhooks(ctx), name="webhooks")
    ctx["upkeep"] = asyncio.create_task(keep_changes(ctx), name="changes-upkeep")
    # The tenants that embed by their own gateway are embedded here, through its DLP and
    # budget (the API processes embed the local-model tenants).
    indexer = ctx["container"].indexer(worker=True)
    if indexer is not None:
        indexer.start()
        ctx["indexer"] = indexer
    kw = ctx["redis"].connection_pool.connection_kwargs  # no password in what is logged
    redis_at = kw.get("path") or f"{kw.get('host')}:{kw.get('port')}/{kw.get('db', 0)}"
    log.info("worker ready: %s, Redis %s", settings.storage_label, redis_at)


async def shutdown(ctx: Ctx) -> None:
    indexer: Indexer | None = ctx.pop("indexer", None)
    if indexer is not None:
        await indexer.aclose()
    for name in ("webhooks", "upkeep"):
        loop: asyncio.Task[None] | None = ctx.pop(name, None)
        if loop is not None:
            loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await loop
    served: tuple[WSGIServer, threading.Thread] | None = ctx.pop("metrics_server", None)
    if served is not None:
        await asyncio.to_thread(served[0].shutdown)  # waits out its 0.5 s poll
        served[0].server_close()
    http: httpx.AsyncClient | None = ctx.pop("http", None)
    if http is not None:
        await http.aclose()
    webhook_http: webhook_sender.Client | None = ctx.pop("webhook_http", None)
    if webhook_http is not None:
        await webhook_http.close()
    container: deps.Container | None = ctx.pop("container", None)
    if container is not None:
        await container.aclose()


class WorkerSettings:
    """What `arq app.worker.WorkerSettings` and `jet-memory worker` run."""

    # Annotated as arq's WorkerSettingsBase protocol declares them (its attributes are
    # mutable, so mypy wants the very same types).
    functions: Sequence[WorkerCoroutine | Function] = [
        func(compact_tenant_job, keep_result=KEEP_RESULT, timeout=JOB_TIMEOUT, max_tries=MAX_TRIES)
    ]
    cron_jobs: Sequence[CronJob] | None = [
        cron(fan_out, hour=6, minute=17, second=0, unique=True, run_at_startup=False)
    ]
    # arq evaluates cron times in the machine's local zone unless told otherwise.
    timezone = UTC
    on_startup: StartupShutdown | None = startup
    on_shutdown: StartupShutdown | None = shutdown
    # arq reads settings from class attributes, so this one is read at import time.
    redis_settings = redis_settings_for(Settings().redis_url)
    # Each job already runs compaction_concurrency gateway calls at once.
    max_jobs = 4
    health_check_interval = HEALTH_CHECK_INTERVAL


def redis_in_use(settings: Settings) -> tuple[str, str]:
    """The Redis URL a worker run with `settings` uses, and where it was found: JET_REDIS_URL,
    else the embedded Redis that `jet-memory up` recorded in the data dir, else the default."""
    if settings.redis_url:
        return settings.redis_url, "JET_REDIS_URL"
    embedded = settings.data_dir / "redis"
    recorded = recorded_url(embedded)
    if recorded is not None:
        return recorded, f"the embedded Redis of `jet-memory up` (recorded in {embedded})"
    return DEFAULT_REDIS_URL, "the default (JET_REDIS_URL unset, no embedded Redis running)"


async def check_worker(url: str) -> tuple[bool, str]:
    """Whether a worker has written its health-check key to the Redis at `url` within the
    last HEALTH_CHECK_INTERVAL, and a line saying so (without the URL's password)."""
    redis_settings = RedisSettings.from_dsn(url)
    # One quick try: a health check must answer, not ride out an outage as a worker does.
    redis_settings.conn_retries, redis_settings.conn_timeout = 0, CHECK_TIMEOUT_S
    where = f"{redis_settings.host}:{redis_settings.port}/{redis_settings.database}"
    try:
        redis = await asyncio.wait_for(create_pool(redis_settings), CHECK_TIMEOUT_S)
    except (OSError, RedisConnectionError, RedisTimeoutError, TimeoutError) as exc:
        return False, f"cannot reach Redis at {where}: {type(exc).__name__}"
    try:
        data = await asyncio.wait_for(
            redis.get(default_queue_name + health_check_key_suffix), CHECK_TIMEOUT_S
        )
    except (OSError, RedisConnectionError, RedisTimeoutError, TimeoutError) as exc:
        return False, f"Redis at {where} did not answer: {type(exc).__name__}"
    finally:
        await redis.aclose(close_connection_pool=True)
    if not data:
        seconds = int(HEALTH_CHECK_INTERVAL.total_seconds())
        return False, f"no worker has reported to Redis at {where} in the last {seconds} s"
    return True, f"worker healthy (Redis {where}): {data.decode(errors='replace')}"
