"""Curated memory entries: create, partial update with optimistic concurrency, delete,
read, list and full-text search. Deleting a compactor entry releases the events it folded."""

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    and_,
    delete,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from app import ids
from app.errors import Conflict, InvalidInput, NotFound
from app.services import cursors, validation
from app.services.data_rights import history
from app.services.entry_rows import COLUMNS, to_entry
from app.services.events import COLUMNS as EVENT_COLUMNS
from app.services.events import to_event
from app.services.records import (
    Edge,
    Entry,
    EntryFilter,
    EntryIn,
    EntryPatch,
    Event,
    Page,
)
from app.services.search import keywords, page_cache
from app.storage.lists import in_list, storable
from app.storage.models import entries_table as en
from app.storage.models import entry_sources_table as src
from app.storage.models import events_table as ev
from app.storage.search import fulltext, spec
from app.storage.tenants import TenantDb
from app.storage.transactions import read_rows, read_statement, write_transaction
from app.storage.types import utcnow


async def insert_entry(
    conn: AsyncConnection, entry: EntryIn, *, now: datetime | None = None
) -> Entry:
    """Insert inside the caller's transaction (the compactor folds in the same one)."""
    now = now or utcnow()
    row = Entry(
        id=ids.new_id(ids.ENTRY),
        scope=entry.scope,
        scope_ref=entry.scope_ref,
        title=entry.title,
        summary=entry.summary,
        tags=validation.normalize_tags(entry.tags),
        importance=entry.importance,
        source=entry.source,
        created_at=now,
        updated_at=now,
        version=1,
    )
    await conn.execute(
        insert(en).values(
            id=row.id,
            scope=row.scope.value,
            scope_ref=row.scope_ref,
            title=row.title,
            summary=row.summary,
            tags=row.tags,
            importance=row.importance,
            source=row.source.value,
            created_at=now,
            updated_at=now,
            version=1,
        )
    )
    return row


async def create_entry(db: TenantDb, entry: EntryIn) -> Entry:
    """Create a curated entry; source COMPACTOR is refused (it is the compactor's)."""
    validation.check_entry(entry)
    async with write_transaction(db.engine) as conn:
        return await insert_entry(conn, entry)


async def update_entry(db: TenantDb, entry_id: str, patch: EntryPatch, *, by: str) -> Entry:
    """Apply the fields given, keeping the version replaced (`by`: who asks, see
    history.check_actor); a stale expected_version is a Conflict."""
    validation.check_patch(patch)
    history.check_actor(by)
    if not storable(entry_id):  # no id holds NUL
        raise NotFound(["id"], f"no memory entry {entry_id!r}")
    values: dict[str, Any] = {}
    if patch.title is not None:
        values["title"] = patch.title
    if patch.summary is not None:
        values["summary"] = patch.summary
    if patch.tags is not None:
        values["tags"] = validation.normalize_tags(patch.tags)
    if patch.importance is not None:
        values["importance"] = patch.importance
    now = utcnow()
    async with write_transaction(db.engine) as conn:
        # FOR UPDATE (PostgreSQL; SQLite's BEGIN IMMEDIATE already serialises writers): a
        # concurrent update waits here and then sees this one's version, so
        # expectedVersion is checked against what is really stored, never lost.
        if values:  # the read also keeps the version replaced (rolled back if refused)
            row = await history.keep_current(conn, entry_id, change="update", by=by, at=now)
        else:
            stmt = select(*COLUMNS).where(en.c.id == entry_id).with_for_update()
            row = (await conn.execute(stmt)).first()
        if row is None:
            raise NotFound(["id"], f"no memory entry {entry_id!r}")
        current = to_entry(row)
        if patch.expected_version is not None and patch.expected_version != current.version:
            raise Conflict(
                ["expectedVersion"],
                f"entry is at version {current.version}, not {patch.expected_version}",
            )
        if not values:
            return current
        values.update(updated_at=now, version=current.version + 1)
        row = (
            await conn.execute(
                update(en)
                .where(en.c.id == entry_id, en.c.version == current.version)
                .values(values)
                .returning(*COLUMNS)
            )
        ).first()
        if row is None:  # cannot happen with the row locked; never lose an update
            raise Conflict(["expectedVersion"], "entry changed meanwhile; read it again")
        return to_entry(row)


async def delete_entry(db: TenantDb, entry_id: str, *, by: str) -> str:
    """Delete an entry, keeping its last version; the events a compactor entry folded
    return to the raw log."""
    history.check_actor(by)
    if not storable(entry_id):  # no id holds NUL
        raise NotFound(["id"], f"no memory entry {entry_id!r}")
    async with write_transaction(db.engine) as conn:
        found = (
            await conn.execute(select(*COLUMNS).where(en.c.id == entry_id).with_for_update())
        ).first()
        if found is None:
            raise NotFound(["id"], f"no memory entry {entry_id!r}")
        await history.record(conn, to_entry(found), change="delete", by=by, at=utcnow())
        await conn.execute(
            update(ev)
            .where(ev.c.compressed_into == entry_id)
            .values(compressed_at=None, compressed_into=None)
        )
        await conn.execute(delete(en).where(en.c.id == entry_id))
    return entry_id


async def get_entry(db: TenantDb, entry_id: str) -> Entry | None:
    """One entry by id, or None."""
    if not storable(entry_id):  # no id holds NUL: nothing to look up
        return None
    rows = await read_rows(db.engine, select(*COLUMNS).where(en.c.id == entry_id))
    return to_entry(rows[0]) if rows else None


async def get_entries(db: TenantDb, entry_ids: Sequence[str]) -> dict[str, Entry]:
    """Entries by id (for batching lookups such as MemoryEvent.compressedInto)."""
    wanted = [i for i in entry_ids if storable(i)]
    if not wanted:
        return {}
    rows = await read_rows(db.engine, _BY_IDS, {"ids": wanted})
    return {row.id: to_entry(row) for row in rows}


_BY_IDS = select(*COLUMNS).where(in_list(en.c.id, "ids"))


def _check_lists(flt: EntryFilter) -> None:
    for name, values in (("tags", flt.tags), ("sources", flt.sources)):
        validation.check_list_size(values, name)


def _matches_nothing(flt: EntryFilter) -> bool:
    """A filter value no stored entry can hold (NUL, a lone surrogate): an empty page."""
    values = [*(flt.tags or ()), *([flt.scope_ref] if flt.scope_ref is not None else [])]
    return not all(map(storable, values))


async def list_entries(
    db: TenantDb, flt: EntryFilter, *, first: int, after: str | None
) -> Page[Entry]:
    """Most recently updated first; with flt.search, most relevant first (score = -bm25)."""
    validation.check_first(first)
    validation.check_search(flt.search)
    _check_lists(flt)  # the lists' sizes first: no work in proportion to one over its cap
    validation.check_filter_text(flt.scope_ref, flt.tags, "tags")
    if flt.min_importance is not None and not 1 <= flt.min_importance <= 5:
        raise InvalidInput(["minImportance"], "minImportance must be 1 to 5")
    if _matches_nothing(flt):
        return Page([], has_next_page=False)
    if flt.min_score is not None and not 0 <= flt.min_score <= 1:
        raise InvalidInput(["minScore"], f"minScore must be 0 to 1, got {flt.min_score}")
    if flt.search is not None:
        # Served from the search page cache while the tenant's entries are unchanged.
        page = await page_cache.search_page(
            db, flt, first=first, after=after, search_fn=keywords.uncached_search
        )
        if not flt.min_score:
            return page
        # After the page: the order is the index's relevance, not the score, so a page
        # may hold fewer hits than `first` (the cursor still goes on from its last row).
        kept = [e for e in page.edges if e.score is not None and e.score >= flt.min_score]
        return Page(kept, page.has_next_page, end=page.end_cursor)
    conds: list[Any] = []
    if flt.min_importance is not None and flt.min_importance > 1:
        # `+ 0` keeps SQLite off ix_memory_entries_scope_rank (the context loader's): a
        # range on importance there means sorting the scope, where walking
        # ix_memory_entries_scope_updated in order stops at the page size.
        conds.append(en.c.importance + 0 >= flt.min_importance)
    if flt.sources:
        conds.append(in_list(en.c.source, [s.value for s in flt.sources]))
    if flt.scope is None and flt.scope_ref is not None:
        conds.append(en.c.scope_ref == flt.scope_ref)
    async with read_statement(db.engine) as conn:
        if flt.tags:
            scope = None if flt.scope is None else flt.scope.value
            conds.append(
                fulltext.entries_tagged(spec.Target.of(conn), flt.tags, scope, flt.scope_ref)
            )
        if flt.scope is not None:
            conds.append(en.c.scope == flt.scope.value)
            if flt.scope_ref is not None:
                conds.append(en.c.scope_ref == flt.scope_ref)
        if after is not None:
            at, eid = cursors.decode("entries", after, types=(str, str))
            if not storable(eid):
                raise InvalidInput(["after"], "after is not a valid cursor")
            at_dt = cursors.decode_time(at)
            conds.append(
                or_(en.c.updated_at < at_dt, and_(en.c.updated_at == at_dt, en.c.id < eid))
            )
        stmt = (
            select(*COLUMNS)
            .where(*conds)
            .order_by(en.c.updated_at.desc(), en.c.id.desc())
            .limit(first + 1)
        )
        entries = [to_entry(r) for r in await conn.execute(stmt)]
    edges = [
        Edge(cursors.encode("entries", [e.updated_at.isoformat(), e.id]), e)
        for e in entries[:first]
    ]
    return Page(edges, has_next_page=len(entries) > first)


def source_events_position(*, first: int, after: str | None) -> int | None:
    """Checks a page of source events' arguments (no database): the position `after` names."""
    validation.check_first(first)
    if after is None:
        return None
    (position,) = cursors.decode("sources", after, types=(int,))
    if not 0 <= position < 2**31:  # positions are 32-bit (INTEGER on PostgreSQL)
        raise InvalidInput(["after"], "after is not a valid cursor")
    return int(position)


async def source_events(
    db: TenantDb, entry_id: str, *, first: int, after: str | None
) -> Page[Event]:
    """The events a compactor entry folded, in folding order (oldest first)."""
    position = source_events_position(first=first, after=after)
    if not storable(entry_id):  # no id holds NUL: no entry, no events
        return Page([], has_next_page=False)
    conds: list[Any] = [src.c.entry_id == entry_id]
    if position is not None:
        conds.append(src.c.position > position)
    stmt = (
        select(*EVENT_COLUMNS, src.c.position)
        .select_from(src.join(ev, ev.c.id == src.c.event_id))
        .where(*conds)
        .order_by(src.c.position)
        .limit(first + 1)
    )
    rows = await read_rows(db.engine, stmt)
    edges = [Edge(cursors.encode("sources", [r.position]), to_event(r)) for r in rows[:first]]
    return Page(edges, has_next_page=len(rows) > first)
