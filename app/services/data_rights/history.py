"""Entry history: the version an update, restore or delete replaced, written in the same
transaction as the change; read newest first, and restored as a new version."""

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from app.errors import Conflict, InvalidInput, NotFound
from app.services import cursors, validation
from app.services.entry_rows import COLUMNS as ENTRY_COLUMNS
from app.services.entry_rows import NAMES as ENTRY_NAMES
from app.services.entry_rows import to_entry
from app.services.records import (
    Edge,
    Entry,
    EntrySource,
    EntryVersion,
    Page,
    field_names,
    row_reader,
    values_of,
)
from app.storage.data_rights import entry_versions
from app.storage.lists import storable
from app.storage.models import entries_table as en
from app.storage.models import entry_versions_table as ve
from app.storage.tenants import TenantDb
from app.storage.transactions import read_rows, write_transaction
from app.storage.types import utcnow

COMPACTOR = "compactor"  # changed_by of the compactor's own changes
VERSION_NAMES = field_names(EntryVersion)
VERSION_COLUMNS = [ve.c[name] for name in VERSION_NAMES]
to_version = row_reader(EntryVersion, VERSION_NAMES)


def check_actor(by: str) -> None:
    # Who asked is decided by the surface (an API key id, "compactor", "operator"), never
    # by client text; a bad one is a bug, not a client error.
    if not by or len(by) > 64:
        raise ValueError("changed_by must be 1 to 64 characters")


async def record(
    conn: AsyncConnection, entry: Entry, *, change: str, by: str, at: datetime
) -> None:
    """Keep `entry` (as stored now) as an earlier version, inside the caller's transaction."""
    kept = values_of(entry)
    kept["entry_id"] = kept.pop("id")
    await conn.execute(insert(ve).values(**kept, change=change, changed_at=at, changed_by=by))


async def keep_current(
    conn: AsyncConnection, entry_id: str, *, change: str, by: str, at: datetime
) -> Any:
    """Copy the stored entry into its versions and return its row (entries.COLUMNS order;
    None: no such entry), locked for the caller's change: the read and the versions write
    of an update in one statement, so history costs it no extra round trip. The caller
    rolls back if it then refuses the change."""
    return await entry_versions.copy_current(
        conn, entry_id, ENTRY_NAMES, change=change, by=by, at=at
    )


async def versions(
    db: TenantDb, entry_id: str, *, first: int, after: str | None
) -> Page[EntryVersion]:
    """The earlier versions of an entry (also of a deleted one), newest first."""
    validation.check_first(first)
    if not storable(entry_id):  # no id holds NUL: no versions
        return Page([], has_next_page=False)
    conds: list[Any] = [ve.c.entry_id == entry_id]
    if after is not None:
        (below,) = cursors.decode("versions", after, types=(int,))
        if not 0 < below < 2**31:
            raise InvalidInput(["after"], "after is not a valid cursor")
        conds.append(ve.c.version < below)
    stmt = select(*VERSION_COLUMNS).where(*conds).order_by(ve.c.version.desc()).limit(first + 1)
    rows: Sequence[Any] = await read_rows(db.engine, stmt)
    edges = [Edge(cursors.encode("versions", [r[1]]), to_version(r)) for r in rows[:first]]
    return Page(edges, has_next_page=len(rows) > first)


async def restore_entry(
    db: TenantDb, entry_id: str, version: int, *, expected_version: int | None, by: str
) -> Entry:
    """Bring back an earlier version's fields as a new version; a deleted entry comes back
    under its id (but a compactor summary: its events were released when it was deleted)."""
    check_actor(by)
    if not 0 < version < 2**31:
        raise InvalidInput(["version"], "version must be a positive 32-bit integer")
    if not storable(entry_id):
        raise NotFound(["id"], f"no memory entry {entry_id!r}")
    async with write_transaction(db.engine) as conn:
        row = (
            await conn.execute(select(*ENTRY_COLUMNS).where(en.c.id == entry_id).with_for_update())
        ).first()
        old = (
            await conn.execute(
                select(*VERSION_COLUMNS).where(ve.c.entry_id == entry_id, ve.c.version == version)
            )
        ).first()
        if old is None:
            latest = (
                await conn.execute(select(func.max(ve.c.version)).where(ve.c.entry_id == entry_id))
            ).scalar()
            if row is None and latest is None:
                raise NotFound(["id"], f"no memory entry {entry_id!r}")
            # The entry exists; its history does not hold that version: its state, a conflict.
            raise Conflict(["version"], f"entry {entry_id!r} has no earlier version {version}")
        target = to_version(old)
        now = utcnow()
        values = {
            "title": target.title,
            "summary": target.summary,
            "tags": target.tags,
            "importance": target.importance,
            "updated_at": now,
        }
        if row is not None:
            current = to_entry(row)
            _check_expected(expected_version, current.version)
            await record(conn, current, change="restore", by=by, at=now)
            await conn.execute(
                update(en).where(en.c.id == entry_id).values(**values, version=current.version + 1)
            )
        else:
            last = (
                await conn.execute(
                    select(*VERSION_COLUMNS)
                    .where(ve.c.entry_id == entry_id)
                    .order_by(ve.c.version.desc())
                    .limit(1)
                )
            ).one()
            deleted = to_version(last)
            _check_expected(expected_version, deleted.version)
            if deleted.source is EntrySource.COMPACTOR:
                raise Conflict(
                    ["id"],
                    "a deleted compactor summary cannot be restored: its events were "
                    "released and the next compaction run summarises them again",
                )
            await conn.execute(
                insert(en).values(
                    **values,
                    id=entry_id,
                    scope=deleted.scope.value,
                    scope_ref=deleted.scope_ref,
                    source=deleted.source.value,
                    created_at=deleted.created_at,
                    version=deleted.version + 1,
                )
            )
        return to_entry(
            (await conn.execute(select(*ENTRY_COLUMNS).where(en.c.id == entry_id))).one()
        )


def _check_expected(expected: int | None, actual: int) -> None:
    if expected is not None and expected != actual:
        raise Conflict(["expectedVersion"], f"entry is at version {actual}, not {expected}")
