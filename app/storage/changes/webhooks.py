"""Webhook endpoints and their deliveries in the tenant's database: the statements, with
the one dialect difference (inserting deliveries that may exist already) kept here."""

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, and_, bindparam, delete, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.models import webhook_deliveries_table as wd
from app.storage.models import webhook_endpoints_table as we

# What is shown of an endpoint: never its secret.
ENDPOINT_COLUMNS = [
    we.c.id,
    we.c.url,
    we.c.types,
    we.c.scope,
    we.c.scope_ref,
    we.c.description,
    we.c.status,
    we.c.disabled_reason,
    we.c.created_at,
    we.c.updated_at,
]
# What a worker needs to deliver to it.
WORKING_COLUMNS = [*ENDPOINT_COLUMNS, we.c.secret, we.c.cursor, we.c.lease_owner, we.c.lease_until]
DELIVERY_COLUMNS = [
    wd.c.seq,
    wd.c.id,
    wd.c.endpoint_id,
    wd.c.change_id,
    wd.c.scope_key,
    wd.c.type,
    wd.c.payload,
    wd.c.status,
    wd.c.attempts,
    wd.c.next_attempt_at,
    wd.c.first_attempt_at,
    wd.c.last_attempt_at,
    wd.c.last_status,
    wd.c.last_error,
    wd.c.latency_ms,
    wd.c.created_at,
    wd.c.delivered_at,
]


async def count_endpoints(conn: AsyncConnection) -> int:
    return int((await conn.execute(select(func.count()).select_from(we))).scalar_one())


async def insert_endpoint(conn: AsyncConnection, values: Mapping[str, Any]) -> None:
    await conn.execute(we.insert().values(**values))


async def endpoints(conn: AsyncConnection) -> Sequence[Any]:
    return (await conn.execute(select(*ENDPOINT_COLUMNS).order_by(we.c.seq))).all()


async def endpoint(conn: AsyncConnection, endpoint_id: str) -> Row[Any] | None:
    query = select(*ENDPOINT_COLUMNS).where(we.c.id == endpoint_id)
    return (await conn.execute(query)).first()


async def update_endpoint(
    conn: AsyncConnection, endpoint_id: str, values: Mapping[str, Any]
) -> int:
    result = await conn.execute(update(we).where(we.c.id == endpoint_id).values(**values))
    return int(result.rowcount or 0)


async def delete_endpoint(conn: AsyncConnection, endpoint_id: str) -> int:
    await conn.execute(delete(wd).where(wd.c.endpoint_id == endpoint_id))
    result = await conn.execute(delete(we).where(we.c.id == endpoint_id))
    return int(result.rowcount or 0)


async def enabled_endpoints(conn: AsyncConnection) -> Sequence[Any]:
    query = select(*WORKING_COLUMNS).where(we.c.status == "enabled").order_by(we.c.seq)
    return (await conn.execute(query)).all()


async def claim(conn: AsyncConnection, owner: str, now: datetime, until: datetime) -> None:
    """Take (or renew) the lease of every enabled endpoint that is free or already ours."""
    free = or_(we.c.lease_owner == owner, we.c.lease_until.is_(None), we.c.lease_until < now)
    await conn.execute(
        update(we)
        .where(and_(we.c.status == "enabled", free))
        .values(lease_owner=owner, lease_until=until)
    )


async def add_deliveries(
    conn: AsyncConnection, endpoint_id: str, rows: Sequence[Mapping[str, Any]], cursor: int
) -> None:
    """Queue deliveries (one already queued for the same change is left as it is) and move
    the endpoint's cursor to `cursor`, in the caller's transaction."""
    if rows:
        insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
        statement = insert(wd).on_conflict_do_nothing(index_elements=["endpoint_id", "change_id"])
        await conn.execute(statement, list(rows))
    await conn.execute(update(we).where(we.c.id == endpoint_id).values(cursor=cursor))


async def retry_now(conn: AsyncConnection, endpoint_id: str, now: datetime) -> None:
    """Every pending delivery of the endpoint due at once (it was enabled again)."""
    await conn.execute(
        update(wd)
        .where(wd.c.endpoint_id == endpoint_id, wd.c.status == "pending")
        .values(next_attempt_at=now)
    )


async def due_scopes(
    conn: AsyncConnection, endpoint_id: str, now: datetime, limit: int
) -> Sequence[Any]:
    """(scope_key, first pending change id) of the scopes whose first pending delivery is
    due: a later delivery of a scope never goes before an earlier one has."""
    heads = (
        select(wd.c.scope_key, func.min(wd.c.change_id).label("head"))
        .where(wd.c.endpoint_id == endpoint_id, wd.c.status == "pending")
        .group_by(wd.c.scope_key)
        .subquery()
    )
    query = (
        select(heads.c.scope_key, heads.c.head)
        .join(wd, and_(wd.c.endpoint_id == endpoint_id, wd.c.change_id == heads.c.head))
        .where(wd.c.next_attempt_at <= now)
        .order_by(heads.c.head)
        .limit(limit)
    )
    return (await conn.execute(query)).all()


async def pending_in_scope(
    conn: AsyncConnection, endpoint_id: str, scope_key: str, head: int, limit: int
) -> Sequence[Any]:
    query = (
        select(*DELIVERY_COLUMNS)
        .where(
            wd.c.endpoint_id == endpoint_id,
            wd.c.status == "pending",
            wd.c.scope_key == scope_key,
            wd.c.change_id >= head,
        )
        .order_by(wd.c.change_id)
        .limit(limit)
    )
    return (await conn.execute(query)).all()


async def record_attempt(
    conn: AsyncConnection, delivery_id: str, values: Mapping[str, Any]
) -> None:
    await conn.execute(update(wd).where(wd.c.id == delivery_id).values(**values))


async def record_attempts(
    conn: AsyncConnection, attempts: Sequence[tuple[str, Mapping[str, Any]]]
) -> None:
    """Many deliveries' results, (delivery id, values): one executemany per set of columns
    written (a pass's delivered ones, its failed ones), not a statement per delivery."""
    by_columns: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for delivery_id, values in attempts:
        params = {"d_id": delivery_id} | {f"v_{k}": v for k, v in values.items()}
        by_columns.setdefault(tuple(sorted(values)), []).append(params)
    for columns, rows in by_columns.items():
        # Parameter names apart from the columns': SQLAlchemy reserves those for SET.
        statement = (
            update(wd)
            .where(wd.c.id == bindparam("d_id"))
            .values({c: bindparam(f"v_{c}", type_=wd.c[c].type) for c in columns})
        )
        await conn.execute(statement, rows)


async def deliveries_page(
    conn: AsyncConnection, endpoint_id: str, before_seq: int | None, limit: int
) -> Sequence[Any]:
    """An endpoint's deliveries, newest first."""
    query = select(*DELIVERY_COLUMNS).where(wd.c.endpoint_id == endpoint_id)
    if before_seq is not None:
        query = query.where(wd.c.seq < before_seq)
    return (await conn.execute(query.order_by(wd.c.seq.desc()).limit(limit))).all()


async def delivery(conn: AsyncConnection, endpoint_id: str, delivery_id: str) -> Row[Any] | None:
    query = select(*DELIVERY_COLUMNS).where(wd.c.endpoint_id == endpoint_id, wd.c.id == delivery_id)
    return (await conn.execute(query)).first()


async def prune_delivered(conn: AsyncConnection, before: datetime, limit: int) -> int:
    oldest = (
        select(wd.c.seq)
        .where(wd.c.status == "delivered", wd.c.delivered_at < before)
        .order_by(wd.c.seq)
        .limit(limit)
    )
    result = await conn.execute(delete(wd).where(wd.c.seq.in_(oldest.scalar_subquery())))
    return int(result.rowcount or 0)
