"""Restoring an earlier version of an entry (history.py beside this module keeps them) as a
new version; a deleted entry comes back under its id."""

from sqlalchemy import func, insert, select, update

from app.errors import Conflict, InvalidInput, NotFound
from app.services.data_rights.history import COLUMNS as VERSION_COLUMNS
from app.services.data_rights.history import check_actor, record, to_version
from app.services.entry_rows import COLUMNS, to_entry
from app.services.records import Entry, EntrySource
from app.storage.lists import storable
from app.storage.models import entries_table as en
from app.storage.models import entry_versions_table as ve
from app.storage.tenants import TenantDb
from app.storage.transactions import write_transaction
from app.storage.types import utcnow


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
            await conn.execute(select(*COLUMNS).where(en.c.id == entry_id).with_for_update())
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
            "title": target.title, "summary": target.summary, "tags": target.tags,
            "importance": target.importance, "updated_at": now,
        }  # fmt: skip
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
                )  # fmt: skip
            )
        return to_entry((await conn.execute(select(*COLUMNS).where(en.c.id == entry_id))).one())


def _check_expected(expected: int | None, actual: int) -> None:
    if expected is not None and expected != actual:
        raise Conflict(["expectedVersion"], f"entry is at version {actual}, not {expected}")
