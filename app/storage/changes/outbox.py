"""The outbox of change events (memory_changes): how event writers announce the events
they insert, and how readers page through changes by id. Triggers announce entries and
compaction runs (migration 0008); nothing here ever reads or writes memory text."""

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Integer, Row, bindparam, delete, func, insert, literal, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.lists import in_list
from app.storage.models import changes_table as ch
from app.storage.models import events_table as ev

COLUMNS = [ch.c.id, ch.c.type, ch.c.at, ch.c.scope, ch.c.scope_ref, ch.c.object_id, ch.c.version]
_ANNOUNCED = ("type", "at", "scope", "scope_ref", "object_id", "version")

# SQLite, in the writer's transaction right after its insert: the events above `:after`
# (the highest seq before the insert, as fulltext.INDEX_EVENTS_SQL) in seq order. Plain
# SQL so the SQLite fast path (plain sqlite3) runs the very same statement.
ANNOUNCE_EVENTS_SQL = (
    f"INSERT INTO memory_changes ({', '.join(_ANNOUNCED)}) "
    "SELECT 'event.appended', recorded_at, scope, scope_ref, id, 1 FROM memory_events "
    "WHERE seq > :after ORDER BY seq"
)


async def announce_events(conn: AsyncConnection, event_ids: Sequence[str]) -> None:
    """PostgreSQL, in the writer's transaction: announce the events just inserted (a
    Core statement, so the tenant's schema translation applies)."""
    await conn.execute(
        insert(ch).from_select(
            list(_ANNOUNCED),
            select(
                literal("event.appended"),
                ev.c.recorded_at,
                ev.c.scope,
                ev.c.scope_ref,
                ev.c.id,
                literal(1),
            )
            .where(in_list(ev.c.id, "ids"))
            .order_by(ev.c.seq),
        ),
        {"ids": list(event_ids)},
    )


# Built once: live feeds run these several times a second per tenant, and building a
# statement costs more than SQLAlchemy's compiled cache then saves. Both are bounded by
# the primary key (storage.transactions.read_rows).
AFTER = (
    select(*COLUMNS)
    .where(ch.c.id > bindparam("cursor"))
    .order_by(ch.c.id)
    .limit(bindparam("limit", type_=Integer))
)
LAST_ID = select(func.coalesce(func.max(ch.c.id), 0))


async def after(conn: AsyncConnection, cursor: int, limit: int) -> Sequence[Row[Any]]:
    """The first `limit` changes with an id above `cursor`, in id order."""
    return (await conn.execute(AFTER, {"cursor": cursor, "limit": limit})).all()


async def last_id(conn: AsyncConnection) -> int:
    """The highest change id (0 when there is none yet)."""
    return int((await conn.execute(LAST_ID)).scalar_one())


async def prune(conn: AsyncConnection, before: datetime, limit: int) -> int:
    """Delete up to `limit` of the oldest changes recorded before `before`."""
    oldest = select(ch.c.id).where(ch.c.at < before).order_by(ch.c.id).limit(limit)
    result = await conn.execute(delete(ch).where(ch.c.id.in_(oldest.scalar_subquery())))
    return int(result.rowcount or 0)
