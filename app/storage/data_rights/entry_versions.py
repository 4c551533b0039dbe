"""The update path's copy of the stored entry into memory_entry_versions: one statement
that reads, locks and copies, in the form both backends and a Citus cluster can run."""

from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import String, bindparam, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.models import entries_table as en
from app.storage.models import entry_versions_table as ve
from app.storage.types import UTCDateTime


@cache
def _copy_statement(copied: tuple[str, ...]) -> Any:
    """The copy of the entry columns `copied` (the entry's id first, then the columns a
    version has under the same names), returning them in that order. Built once per column
    list: building it and its cache key on every update cost more CPU than the copy itself
    (docs/benchmarks.md, "Erasure and entry history")."""
    into = [ve.c.entry_id, *(ve.c[c] for c in copied[1:])]
    current = select(*(en.c[c] for c in copied)).where(en.c.id == bindparam("entry_id"))
    locked = current.with_for_update().cte("current_entry")
    copying = select(
        *locked.c,
        bindparam("change", type_=String),
        bindparam("at", type_=UTCDateTime),
        bindparam("by", type_=String),
    )
    return (
        insert(ve)
        .from_select([*into, ve.c.change, ve.c.changed_at, ve.c.changed_by], copying)
        .returning(*into)
    )


async def copy_current(
    conn: AsyncConnection,
    entry_id: str,
    columns: Sequence[str],
    *,
    change: str,
    by: str,
    at: datetime,
) -> Any:
    """Copy the stored entry into its versions and return its `columns` ("id" first, the
    others named as in both tables; None: no such entry),
    locked until the caller's transaction ends. The locking read is a CTE of the INSERT:
    Citus refuses FOR UPDATE in the SELECT of an INSERT … SELECT (it plans that on the
    coordinator), but pushes the CTE form down whole to the tenant's worker; on SQLite the
    lock is the write transaction itself."""
    values = {"entry_id": entry_id, "change": change, "at": at, "by": by}
    return (await conn.execute(_copy_statement(tuple(columns)), values)).first()
