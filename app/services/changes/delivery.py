"""The worker's side of webhooks. One pass over a tenant: take the lease of its endpoints,
queue the changes after each endpoint's cursor as deliveries, send what is due (one scope's
deliveries one after another, in change order; scopes side by side) and record the results.

At least once: a result is recorded after its POST, so a worker killed in between sends it
again. In order per scope: a scope's next delivery waits until the one before it succeeded.
"""

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import orjson

from app import ids, metrics
from app.adapters import webhook_sender
from app.adapters.webhook_sender import Network, Outcome
from app.config import Settings
from app.services.changes.change_events import Change, ChangeFilter, ChangeType, to_change
from app.services.records import Scope
from app.storage.changes import outbox
from app.storage.changes import webhooks as store
from app.storage.tenants import TenantDb
from app.storage.transactions import read_statement, write_transaction
from app.storage.types import utcnow

log = logging.getLogger(__name__)

FAN_OUT_BATCH = 1000  # changes queued per endpoint and pass
SCOPES_PER_PASS = 64  # scopes sent to side by side per endpoint and pass
PER_SCOPE = 50  # deliveries of one scope sent one after another per pass


@dataclass(frozen=True, slots=True)
class DeliveryConfig:
    allowed: Sequence[Network]
    timeout: float
    retry_base: float
    retry_max: float
    retry_window: float
    lease: float

    @classmethod
    def of(cls, settings: Settings) -> "DeliveryConfig":
        return cls(
            allowed=webhook_sender.networks(settings.webhook_allowed_networks.split(",")),
            timeout=settings.webhook_timeout_seconds,
            retry_base=settings.webhook_retry_base_seconds,
            retry_max=settings.webhook_retry_max_seconds,
            retry_window=settings.webhook_retry_window_seconds,
            lease=settings.webhook_lease_seconds,
        )


@dataclass
class PassResult:
    queued: int = 0
    delivered: int = 0
    failed: int = 0
    disabled: int = 0


def scope_key(change: Change) -> str:
    """Deliveries with the same key are sent in order; compaction.finished has its own."""
    if change.scope is None:
        return ""
    return f"{change.scope.value}/{change.scope_ref or ''}"


def backoff(attempts: int, base: float, cap: float) -> float:
    """Seconds before the next attempt after `attempts` failed ones: doubling, capped."""
    return float(min(cap, base * 2 ** min(attempts - 1, 40)))


async def deliver_tenant(
    db: TenantDb,
    http: webhook_sender.Client,
    config: DeliveryConfig,
    *,
    owner: str,
    limit: asyncio.Semaphore,
) -> PassResult:
    """One pass over one tenant's webhooks (see the module docstring)."""
    result = PassResult()
    endpoints = await _leased_endpoints(db, owner, config.lease)
    if not endpoints:
        return result
    result.queued = await _fan_out(db, endpoints)
    sends = []
    for endpoint in endpoints:
        async with read_statement(db.engine) as conn:
            due = await store.due_scopes(conn, endpoint.id, utcnow(), SCOPES_PER_PASS)
        for key, head in due:
            async with read_statement(db.engine) as conn:
                rows = await store.pending_in_scope(conn, endpoint.id, key, head, PER_SCOPE)
            sends.append(_send_scope(http, config, endpoint, rows, limit))
    outcomes = [o for batch in await asyncio.gather(*sends) for o in batch]
    if outcomes:
        await _record(db, config, endpoints, outcomes, result)
    return result


async def _leased_endpoints(db: TenantDb, owner: str, lease: float) -> list[Any]:
    async with read_statement(db.engine) as conn:
        rows = await store.enabled_endpoints(conn)
    if not rows:
        return []
    now = utcnow()
    renew_after = now + timedelta(seconds=lease / 2)

    def needs_claim(r: Any) -> bool:
        free = r.lease_until is None or r.lease_until < now
        ours_ending = r.lease_owner == owner and r.lease_until < renew_after
        return free or ours_ending

    if any(needs_claim(r) for r in rows):
        async with write_transaction(db.engine) as conn:
            await store.claim(conn, owner, now, now + timedelta(seconds=lease))
            rows = await store.enabled_endpoints(conn)
    return [
        r
        for r in rows
        if r.lease_owner == owner and r.lease_until is not None and r.lease_until > now
    ]


async def _fan_out(db: TenantDb, endpoints: list[Any]) -> int:
    """Queue, for every endpoint, the changes after its cursor that it asked for."""
    start = min(e.cursor for e in endpoints)
    async with read_statement(db.engine) as conn:
        rows = await outbox.after(conn, start, FAN_OUT_BATCH)
    if not rows:
        return 0
    seen = [to_change(r) for r in rows]
    last = seen[-1].id
    now = utcnow()
    queued = 0
    async with write_transaction(db.engine) as conn:
        for e in endpoints:
            if e.cursor >= last:
                continue
            wanted = ChangeFilter(
                types=frozenset(ChangeType(t) for t in e.types),
                scope=Scope(e.scope) if e.scope is not None else None,
                scope_ref=e.scope_ref,
            )
            new = [c for c in seen if c.id > e.cursor and wanted.matches(c)]
            fresh = ids.new_ids(ids.DELIVERY, len(new)) if new else []
            values = [
                {
                    "id": delivery_id,
                    "endpoint_id": e.id,
                    "change_id": c.id,
                    "scope_key": scope_key(c),
                    "type": c.type.value,
                    "payload": orjson.dumps(c.payload()).decode(),
                    "status": "pending",
                    "attempts": 0,
                    "next_attempt_at": now,
                    "created_at": now,
                }
                for delivery_id, c in zip(fresh, new, strict=True)
            ]
            await store.add_deliveries(conn, e.id, values, last)
            queued += len(values)
    return queued


@dataclass(frozen=True, slots=True)
class _Sent:
    delivery: Any
    outcome: Outcome
    at: datetime


async def _send_scope(
    http: webhook_sender.Client,
    config: DeliveryConfig,
    endpoint: Any,
    rows: Sequence[Any],
    limit: asyncio.Semaphore,
) -> list[_Sent]:
    """One scope's due deliveries, in order, stopping at the first that fails."""
    sent: list[_Sent] = []
    for row in rows:
        async with limit:
            at = utcnow()
            outcome = await webhook_sender.post(
                http,
                endpoint.url,
                secret=endpoint.secret,
                message_id=row.id,
                body=row.payload.encode(),
                allowed=config.allowed,
                seconds=config.timeout,
            )
        sent.append(_Sent(row, outcome, at))
        if not outcome.delivered:
            break
    return sent


async def _record(
    db: TenantDb,
    config: DeliveryConfig,
    endpoints: list[Any],
    outcomes: list[_Sent],
    result: PassResult,
) -> None:
    by_id = {e.id: e for e in endpoints}
    to_disable: dict[str, str] = {}
    attempts: list[tuple[str, dict[str, Any]]] = []
    async with write_transaction(db.engine) as conn:
        for s in outcomes:
            d, o = s.delivery, s.outcome
            first = d.first_attempt_at or s.at
            values: dict[str, Any] = {
                "attempts": d.attempts + 1,
                "first_attempt_at": first,
                "last_attempt_at": s.at,
                "last_status": o.status,
                "last_error": o.error,
                "latency_ms": o.latency_ms,
            }
            if o.delivered:
                values.update(status="delivered", delivered_at=s.at)
                result.delivered += 1
                metrics.WEBHOOK_ATTEMPTS.labels("delivered").inc()
                if d.attempts == 0:
                    changed = orjson.loads(d.payload)["time"]
                    lag = (s.at - datetime.fromisoformat(changed)).total_seconds()
                    metrics.WEBHOOK_LAG.observe(max(lag, 0.0))
            else:
                wait = backoff(d.attempts + 1, config.retry_base, config.retry_max)
                values["next_attempt_at"] = s.at + timedelta(seconds=wait)
                result.failed += 1
                metrics.WEBHOOK_ATTEMPTS.labels("failed").inc()
                if (s.at - first).total_seconds() >= config.retry_window:
                    to_disable[d.endpoint_id] = (
                        f"failing since {first.isoformat()}; last attempt: {o.error}"
                    )[:500]
            attempts.append((d.id, values))
        await store.record_attempts(conn, attempts)
        for endpoint_id, reason in to_disable.items():
            await store.update_endpoint(
                conn,
                endpoint_id,
                {
                    "status": "disabled",
                    "disabled_reason": reason,
                    "updated_at": utcnow(),
                },
            )
    for endpoint_id, reason in to_disable.items():
        result.disabled += 1
        metrics.WEBHOOK_ENDPOINTS_DISABLED.inc()
        # The operator's signal: the tenant and endpoint ids, never the URL's secrets.
        log.warning(
            "webhook endpoint %s of tenant %s disabled: %s (url host %s)",
            endpoint_id,
            db.tenant_id,
            reason,
            _host(by_id[endpoint_id].url),
        )


def _host(url: str) -> str:
    return urlsplit(url).hostname or "?"


async def prune_deliveries(db: TenantDb, *, keep: timedelta, batch: int = 5000) -> int:
    """Forget deliveries delivered longer than `keep` ago; how many went."""
    removed = 0
    before = utcnow() - keep
    while True:
        async with write_transaction(db.engine) as conn:
            n = await store.prune_delivered(conn, before, batch)
        removed += n
        if n < batch:
            return removed
