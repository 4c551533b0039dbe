"""Webhook endpoints of a tenant: register (the signing secret shown once), list, change,
enable or disable, delete; the delivery log of an endpoint, and the replay of a delivery.
Deliveries themselves are made by the worker (app/services/changes/delivery.py)."""

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import orjson
from pydantic import with_config

from app import ids
from app.adapters import webhook_sender
from app.config import Settings
from app.errors import InvalidInput, NotFound, TooLarge
from app.services import cursors, validation
from app.services.changes.change_events import ChangeType, change_types
from app.services.records import RECORD_JSON, Edge, Page, Scope
from app.storage.changes import outbox
from app.storage.changes import webhooks as store
from app.storage.control import ControlDb
from app.storage.lists import storable
from app.storage.tenants import TenantDb
from app.storage.transactions import read_statement, write_transaction
from app.storage.types import utcnow

URL_MAX_CHARS = 2048
DESCRIPTION_MAX_CHARS = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@with_config(RECORD_JSON)
@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where this tenant's change events are POSTed, signed (never its secret)."""

    id: str
    url: str
    types: list[ChangeType]
    """empty: every type"""
    scope: Scope | None
    scope_ref: str | None
    description: str | None
    enabled: bool
    disabled_reason: str | None
    created_at: datetime
    updated_at: datetime


@with_config(RECORD_JSON)
@dataclass(frozen=True, slots=True)
class CreatedEndpoint:
    endpoint: Endpoint
    secret: str
    """the signing secret (whsec_…): shown this once, never again"""


@dataclass(frozen=True, slots=True)
class EndpointIn:
    url: str
    types: Sequence[str] = ()
    scope: Scope | None = None
    scope_ref: str | None = None
    description: str | None = None


@dataclass(frozen=True, slots=True)
class EndpointPatch:
    """Fields to change; None leaves one as it is. Enabling again resumes where the
    endpoint stopped (the changes still kept, see changes_keep_days)."""

    url: str | None = None
    types: Sequence[str] | None = None
    description: str | None = None
    enabled: bool | None = None


@with_config(RECORD_JSON)
@dataclass(frozen=True, slots=True)
class Delivery:
    """One change sent to one endpoint."""

    id: str
    """the webhook-id header: the same on every attempt"""
    endpoint_id: str
    change: dict[str, Any] = field(hash=False)  # as sent: Change.payload()
    delivered: bool
    attempts: int
    next_attempt_at: datetime | None
    last_attempt_at: datetime | None
    last_status: int | None
    last_error: str | None
    latency_ms: int | None
    created_at: datetime
    delivered_at: datetime | None


def to_endpoint(row: Any) -> Endpoint:
    (id_, url, types, scope, scope_ref, description, status, reason, created, updated) = row[:10]
    return Endpoint(
        id=id_,
        url=url,
        types=[ChangeType(t) for t in types],
        scope=Scope(scope) if scope is not None else None,
        scope_ref=scope_ref,
        description=description,
        enabled=status == "enabled",
        disabled_reason=reason,
        created_at=created,
        updated_at=updated,
    )


def to_delivery(row: Any) -> Delivery:
    return Delivery(
        id=row.id,
        endpoint_id=row.endpoint_id,
        change=orjson.loads(row.payload),
        delivered=row.status == "delivered",
        attempts=row.attempts,
        next_attempt_at=row.next_attempt_at if row.status == "pending" else None,
        last_attempt_at=row.last_attempt_at,
        last_status=row.last_status,
        last_error=row.last_error,
        latency_ms=row.latency_ms,
        created_at=row.created_at,
        delivered_at=row.delivered_at,
    )


async def check_url(url: str, settings: Settings) -> None:
    """An http(s) URL without credentials, whose host resolves only to globally reachable
    addresses or to ones in JET_WEBHOOK_ALLOWED_NETWORKS (webhook_sender.check_address)."""
    if len(url) > URL_MAX_CHARS:
        raise TooLarge(["url"], f"url is longer than {URL_MAX_CHARS} characters")
    validation.check_text(url, "url")
    if _CONTROL.search(url) or " " in url:
        raise InvalidInput(["url"], "url must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError on a bad port
    except ValueError:
        raise InvalidInput(["url"], "url is not a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(["url"], "url must be an http:// or https:// URL with a host")
    if parts.username is not None or parts.password is not None:
        raise InvalidInput(["url"], "url must not carry a user or password")
    if parts.fragment:
        raise InvalidInput(["url"], "url must not have a #fragment")
    allowed = webhook_sender.networks(settings.webhook_allowed_networks.split(","))
    try:
        await webhook_sender.check_address(url, allowed)
    except webhook_sender.AddressRefused as exc:
        raise InvalidInput(["url"], f"url refused: {exc}") from None


def _check_types(types: Sequence[str]) -> list[str]:
    if len(types) > len(ChangeType):
        raise TooLarge(["types"], f"types has more than {len(ChangeType)} values")
    parsed = change_types(types)
    return sorted(t.value for t in parsed)


def _check_description(description: str | None) -> None:
    if description is None:
        return
    validation.check_text(description, "description")
    if len(description) > DESCRIPTION_MAX_CHARS:
        raise TooLarge(
            ["description"], f"description is longer than {DESCRIPTION_MAX_CHARS} characters"
        )


async def create_endpoint(
    db: TenantDb, new: EndpointIn, settings: Settings, *, control: ControlDb
) -> CreatedEndpoint:
    """Register an endpoint; its signing secret is in the answer and nowhere else, ever.
    The tenant is marked in `control` first, so the worker's delivery loop visits it."""
    types = _check_types(new.types)
    if new.scope is not None:
        validation.check_scope(new.scope, new.scope_ref)
    elif new.scope_ref is not None:
        raise InvalidInput(["scopeRef"], "scopeRef needs a scope")
    _check_description(new.description)
    await check_url(new.url, settings)
    await control.mark_webhooks(db.tenant_id)
    now = utcnow()
    secret = webhook_sender.new_secret()
    endpoint_id = ids.new_id(ids.WEBHOOK)
    async with write_transaction(db.engine) as conn:
        cap = settings.webhook_endpoints_per_tenant
        if await store.count_endpoints(conn) >= cap:
            raise InvalidInput([], f"a tenant has at most {cap} webhook endpoints")
        await store.insert_endpoint(
            conn,
            {
                "id": endpoint_id,
                "url": new.url,
                "types": types,
                "scope": new.scope.value if new.scope is not None else None,
                "scope_ref": new.scope_ref,
                "description": new.description,
                "secret": secret,
                "status": "enabled",
                "created_at": now,
                "updated_at": now,
                # Changes from now on: an endpoint never receives what happened before it existed.
                "cursor": await outbox.last_id(conn),
            },
        )
        row = await store.endpoint(conn, endpoint_id)
    return CreatedEndpoint(to_endpoint(row), secret)


async def has_endpoints(db: TenantDb) -> bool:
    """Whether the tenant has any webhook endpoint, enabled or not."""
    async with read_statement(db.engine) as conn:
        return await store.count_endpoints(conn) > 0


async def list_endpoints(db: TenantDb) -> list[Endpoint]:
    """Every endpoint of the tenant (at most webhook_endpoints_per_tenant), oldest first."""
    async with read_statement(db.engine) as conn:
        return [to_endpoint(r) for r in await store.endpoints(conn)]


async def get_endpoint(db: TenantDb, endpoint_id: str) -> Endpoint:
    async with read_statement(db.engine) as conn:
        row = await store.endpoint(conn, endpoint_id) if storable(endpoint_id) else None
    if row is None:
        raise NotFound(["id"], f"no webhook endpoint {endpoint_id!r}")
    return to_endpoint(row)


async def update_endpoint(
    db: TenantDb, endpoint_id: str, patch: EndpointPatch, settings: Settings
) -> Endpoint:
    """Change an endpoint; enabling it makes its waiting deliveries due at once."""
    values: dict[str, Any] = {}
    if patch.types is not None:
        values["types"] = _check_types(patch.types)
    if patch.description is not None:
        _check_description(patch.description)
        values["description"] = patch.description
    if patch.url is not None:
        await check_url(patch.url, settings)
        values["url"] = patch.url
    if patch.enabled is not None:
        values["status"] = "enabled" if patch.enabled else "disabled"
        values["disabled_reason"] = None if patch.enabled else "disabled by the tenant"
    await get_endpoint(db, endpoint_id)
    if not values:
        return await get_endpoint(db, endpoint_id)
    values["updated_at"] = utcnow()
    async with write_transaction(db.engine) as conn:
        if not await store.update_endpoint(conn, endpoint_id, values):
            raise NotFound(["id"], f"no webhook endpoint {endpoint_id!r}")
        if patch.enabled:
            await store.retry_now(conn, endpoint_id, values["updated_at"])
        row = await store.endpoint(conn, endpoint_id)
    return to_endpoint(row)


async def delete_endpoint(db: TenantDb, endpoint_id: str) -> str:
    """Delete an endpoint and its delivery log; nothing more is sent to it."""
    async with write_transaction(db.engine) as conn:
        if not storable(endpoint_id) or not await store.delete_endpoint(conn, endpoint_id):
            raise NotFound(["id"], f"no webhook endpoint {endpoint_id!r}")
    return endpoint_id


async def list_deliveries(
    db: TenantDb, endpoint_id: str, *, first: int, after: str | None
) -> Page[Delivery]:
    """An endpoint's delivery log, newest first (status, attempts, latency)."""
    validation.check_first(first)
    before = None
    if after is not None:
        [before] = cursors.decode("deliveries", after, types=(int,))
    await get_endpoint(db, endpoint_id)
    async with read_statement(db.engine) as conn:
        rows = await store.deliveries_page(conn, endpoint_id, before, first + 1)
    edges = [Edge(cursors.encode("deliveries", [r.seq]), to_delivery(r)) for r in rows[:first]]
    return Page(edges, has_next_page=len(rows) > first)


async def replay_delivery(db: TenantDb, endpoint_id: str, delivery_id: str) -> Delivery:
    """Send a delivery again (the same message id, so a receiver can tell): it goes back
    to the head of its scope's queue, due now."""
    now = utcnow()
    async with write_transaction(db.engine) as conn:
        row = None
        if storable(endpoint_id) and storable(delivery_id):
            row = await store.delivery(conn, endpoint_id, delivery_id)
        if row is None:
            raise NotFound(["deliveryId"], f"no delivery {delivery_id!r} of this endpoint")
        await store.record_attempt(
            conn,
            delivery_id,
            {
                "status": "pending",
                "next_attempt_at": now,
                "attempts": 0,
                "first_attempt_at": None,
                "delivered_at": None,
            },
        )
        row = await store.delivery(conn, endpoint_id, delivery_id)
    return to_delivery(row)
