"""The per-scope summary (memory_scopes, migration 0010): how event writers count what they
insert, in their own transaction, and the keyset page memoryScopes reads. Entries and erased
events are counted by triggers; nothing here reads memory text."""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select, and_, func, literal, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.lists import in_list
from app.storage.models import events_table as ev
from app.storage.models import scopes_table as sc

COLUMNS = [sc.c.scope, sc.c.scope_key, sc.c.event_count, sc.c.entry_count, sc.c.last_activity_at]

# SQLite, in the writer's transaction right after its insert: the events above `:after`
# (as fulltext.INDEX_EVENTS_SQL), one upsert per scope they touch. Plain SQL so the SQLite
# fast path (plain sqlite3) runs the very same statement. Timestamps are stored as text of
# one fixed format, so max() of two compares them in time order. NOT INDEXED keeps the read
# to the new rows' seq range: otherwise the planner walks the whole log along the
# (scope, scope_ref, ...) index to save the GROUP BY a sort.
COUNT_EVENTS_SQL = (
    "INSERT INTO memory_scopes (scope, scope_key, event_count, entry_count, last_activity_at) "
    "SELECT scope, coalesce(scope_ref, ''), count(*), 0, max(recorded_at) "
    "FROM memory_events NOT INDEXED "
    "WHERE seq > :after GROUP BY scope, coalesce(scope_ref, '') "
    "ON CONFLICT (scope, scope_key) DO UPDATE SET "
    "event_count = event_count + excluded.event_count, "
    "last_activity_at = max(last_activity_at, excluded.last_activity_at)"
)


async def count_events(conn: AsyncConnection, event_ids: Sequence[str]) -> None:
    """PostgreSQL, in the writer's transaction: count the events just inserted into their
    scopes (a Core statement, so the tenant's schema translation applies). Scopes are
    upserted in key order, so two writers of the same scopes wait, never deadlock."""
    key = func.coalesce(ev.c.scope_ref, "")
    counted = (
        select(ev.c.scope, key, func.count(), literal(0), func.max(ev.c.recorded_at))
        .where(in_list(ev.c.id, "ids"))
        .group_by(ev.c.scope, key)
        .order_by(ev.c.scope, key)
    )
    stmt = pg_insert(sc).from_select([c.name for c in COLUMNS], counted)
    stmt = stmt.on_conflict_do_update(
        index_elements=[sc.c.scope, sc.c.scope_key],
        set_={
            "event_count": sc.c.event_count + stmt.excluded.event_count,
            "last_activity_at": func.greatest(
                sc.c.last_activity_at, stmt.excluded.last_activity_at
            ),
        },
    )
    await conn.execute(stmt, {"ids": list(event_ids)})


def page(*, scope: str | None, after: tuple[str, str] | None, limit: int) -> Select[Any]:
    """Up to `limit` scopes in (scope, scope_key) order, read along the primary key: those
    after the key `after`, of one `scope` when given."""
    conds: list[Any] = []
    if scope is not None:
        conds.append(sc.c.scope == scope)
    if after is not None:
        # The row-value comparison spelled out: both backends range-scan the key for it.
        conds.append(
            or_(sc.c.scope > after[0], and_(sc.c.scope == after[0], sc.c.scope_key > after[1]))
        )
    return select(*COLUMNS).where(*conds).order_by(sc.c.scope, sc.c.scope_key).limit(limit)
