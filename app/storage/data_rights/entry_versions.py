"""The update path's copy of the stored entry into memory_entry_versions: one statement
that reads, locks and copies, in the form both backends and a Citus cluster can run."""

from datetime import datetime
from typing import Any

from sqlalchemy import String, bindparam, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.models import entries_table as en
from app.storage.models import entry_versions_table as ve
from app.storage.types import UTCDateTime

# The stored entry columns a version copies, in the services' entry column order.
_COPIED = ("id", "scope", "scope_ref", "title", "summary", "tags", "importance", "source",
           "created_at", "updated_at", "version")  # fmt: skip
_INTO = [ve.c.entry_id, *(ve.c[c] for c in _COPIED[1:])]


def _copy_statement() -> Any:
    current = select(*(en.c[c] for c in _COPIED)).where(en.c.id == bindparam("entry_id"))
    locked = current.with_for_update().cte("current_entry")
    copied = select(
        *locked.c,
        bindparam("change", type_=String),
        bindparam("at", type_=UTCDateTime),
        bindparam("by", type_=String),
    )
    return (
        insert(ve)
        .from_select([*_INTO, ve.c.change, ve.c.changed_at, ve.c.changed_by], copied)
        .returning(*_INTO)
    )


# Built once: building this statement and its cache key on every update cost more CPU than
# the copy itself (docs/benchmarks.md, "Erasure and entry history").
_COPY = _copy_statement()


async def copy_current(
    conn: AsyncConnection, entry_id: str, *, change: str, by: str, at: datetime
) -> Any:
    """Copy the stored entry into its versions and return its row (None: no such entry),
    locked until the caller's transaction ends. The locking read is a CTE of the INSERT:
    Citus refuses FOR UPDATE in the SELECT of an INSERT … SELECT (it plans that on the
    coordinator), but pushes the CTE form down whole to the tenant's worker; on SQLite the
    lock is the write transaction itself."""
    values = {"entry_id": entry_id, "change": change, "at": at, "by": by}
    return (await conn.execute(_COPY, values)).first()
