"""Curated memory entries: create, partial update with optimistic concurrency, delete,
read, list and full-text search. Deleting a compactor entry releases the events it folded."""

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Select,
    and_,
    bindparam,
    delete,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from app import ids
from app.errors import Conflict, InvalidInput, NotFound
from app.services import cursors, search, search_cache, validation
from app.services.events import COLUMNS as EVENT_COLUMNS
from app.services.events import to_event
from app.services.records import (
    Entry,
    EntryFilter,
    EntryIn,
    EntryPatch,
    EntrySource,
    Event,
    Page,
    Scope,
    new_edge,
    new_entry,
)
from app.storage import fulltext, tenants
from app.storage.engine import (
    fetch_rows,
    read_on_thread,
    read_rows,
    read_statement,
    write_transaction,
)
from app.storage.models import entries_table as en
from app.storage.models import entry_sources_table as src
from app.storage.models import events_table as ev
from app.storage.tenants import TenantDb
from app.storage.types import utcnow

COLUMNS = [
    en.c.id, en.c.scope, en.c.scope_ref, en.c.title, en.c.summary, en.c.tags,
    en.c.importance, en.c.source, en.c.created_at, en.c.updated_at, en.c.version,
]  # fmt: skip


def to_entry(row: Any) -> Entry:
    """The Entry of a row whose first columns are COLUMNS, in order (more may follow);
    by position, as events.to_event."""
    (
        id_, scope, scope_ref, title, summary, tags, importance, source, created_at,
        updated_at, version,
    ) = row[:_N_COLUMNS]  # fmt: skip
    return new_entry(
        id=id_, scope=Scope(scope), scope_ref=scope_ref, title=title, summary=summary,
        tags=list(tags), importance=importance, source=EntrySource(source),
        created_at=created_at, updated_at=updated_at, version=version,
    )  # fmt: skip


_N_COLUMNS = len(COLUMNS)


async def insert_entry(
    conn: AsyncConnection, entry: EntryIn, *, now: datetime | None = None
) -> Entry:
    """Insert inside the caller's transaction (the compactor folds in the same one)."""
    now = now or utcnow()
    row = Entry(
        id=ids.new_id(ids.ENTRY), scope=entry.scope, scope_ref=entry.scope_ref,
        title=entry.title, summary=entry.summary, tags=validation.normalize_tags(entry.tags),
        importance=entry.importance, source=entry.source, created_at=now, updated_at=now,
        version=1,
    )  # fmt: skip
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
        )  # fmt: skip
    )
    return row


async def create_entry(db: TenantDb, entry: EntryIn) -> Entry:
    """Create a curated entry; source COMPACTOR is refused (it is the compactor's)."""
    validation.check_entry(entry)
    async with write_transaction(db.engine) as conn:
        return await insert_entry(conn, entry)


async def update_entry(db: TenantDb, entry_id: str, patch: EntryPatch) -> Entry:
    """Apply the fields given; a stale expected_version is a Conflict."""
    validation.check_patch(patch)
    if not validation.is_text(entry_id):
        raise NotFound(["id"], f"no memory entry {entry_id!r}")
    async with write_transaction(db.engine) as conn:
        # FOR UPDATE (PostgreSQL; SQLite's BEGIN IMMEDIATE already serialises writers): a
        # concurrent update waits here and then sees this one's version, so
        # expectedVersion is checked against what is really stored, never lost.
        row = (
            await conn.execute(select(*COLUMNS).where(en.c.id == entry_id).with_for_update())
        ).first()
        if row is None:
            raise NotFound(["id"], f"no memory entry {entry_id!r}")
        current = to_entry(row)
        if patch.expected_version is not None and patch.expected_version != current.version:
            raise Conflict(
                ["expectedVersion"],
                f"entry is at version {current.version}, not {patch.expected_version}",
            )
        values: dict[str, Any] = {}
        if patch.title is not None:
            values["title"] = patch.title
        if patch.summary is not None:
            values["summary"] = patch.summary
        if patch.tags is not None:
            values["tags"] = validation.normalize_tags(patch.tags)
        if patch.importance is not None:
            values["importance"] = patch.importance
        if not values:
            return current
        values.update(updated_at=utcnow(), version=current.version + 1)
        done = await conn.execute(
            update(en).where(en.c.id == entry_id, en.c.version == current.version).values(values)
        )
        if done.rowcount != 1:  # cannot happen with the row locked; never lose an update
            raise Conflict(["expectedVersion"], "entry changed meanwhile; read it again")
        row = (await conn.execute(select(*COLUMNS).where(en.c.id == entry_id))).one()
        return to_entry(row)


async def delete_entry(db: TenantDb, entry_id: str) -> str:
    """Delete an entry; the events a compactor entry folded return to the raw log."""
    if not validation.is_text(entry_id):
        raise NotFound(["id"], f"no memory entry {entry_id!r}")
    async with write_transaction(db.engine) as conn:
        found = (await conn.execute(select(en.c.id).where(en.c.id == entry_id))).first()
        if found is None:
            raise NotFound(["id"], f"no memory entry {entry_id!r}")
        await conn.execute(
            update(ev)
            .where(ev.c.compressed_into == entry_id)
            .values(compressed_at=None, compressed_into=None)
        )
        await conn.execute(delete(en).where(en.c.id == entry_id))
    return entry_id


async def get_entry(db: TenantDb, entry_id: str) -> Entry | None:
    """One entry by id, or None."""
    if not validation.is_text(entry_id):
        return None
    rows = await read_rows(db.engine, select(*COLUMNS).where(en.c.id == entry_id))
    return to_entry(rows[0]) if rows else None


async def get_entries(db: TenantDb, entry_ids: Sequence[str]) -> dict[str, Entry]:
    """Entries by id (for batching lookups such as MemoryEvent.compressedInto)."""
    if not entry_ids:
        return {}
    rows = await read_rows(db.engine, select(*COLUMNS).where(en.c.id.in_(list(entry_ids))))
    return {row.id: to_entry(row) for row in rows}


async def list_entries(
    db: TenantDb, flt: EntryFilter, *, first: int, after: str | None
) -> Page[Entry]:
    """Most recently updated first; with flt.search, most relevant first (score = -bm25)."""
    validation.check_first(first)
    validation.check_search(flt.search)
    validation.check_filter_text(flt.scope_ref, flt.tags, "tags")
    if flt.min_importance is not None and not 1 <= flt.min_importance <= 5:
        raise InvalidInput(["minImportance"], "minImportance must be 1 to 5")
    if flt.search is not None:
        # Served from the search page cache while the tenant's entries are unchanged.
        return await search_cache.search_page(
            db, flt, first=first, after=after, search_fn=_uncached_search
        )
    conds: list[Any] = []
    if flt.min_importance is not None and flt.min_importance > 1:
        # `+ 0` keeps SQLite off ix_memory_entries_scope_rank (the context loader's): a
        # range on importance there means sorting the scope, where walking
        # ix_memory_entries_scope_updated in order stops at the page size.
        conds.append(en.c.importance + 0 >= flt.min_importance)
    if flt.sources:
        conds.append(en.c.source.in_([s.value for s in flt.sources]))
    if flt.scope is None and flt.scope_ref is not None:
        conds.append(en.c.scope_ref == flt.scope_ref)
    async with read_statement(db.engine) as conn:
        if flt.tags:
            scope = None if flt.scope is None else flt.scope.value
            conds.append(
                fulltext.entries_tagged(fulltext.Target.of(conn), flt.tags, scope, flt.scope_ref)
            )
        if flt.scope is not None:
            conds.append(en.c.scope == flt.scope.value)
            if flt.scope_ref is not None:
                conds.append(en.c.scope_ref == flt.scope_ref)
        if after is not None:
            at, eid = cursors.decode("entries", after, types=(str, str))
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
        new_edge(cursors.encode("entries", [e.updated_at.isoformat(), e.id]), e)
        for e in entries[:first]
    ]
    return Page(edges, has_next_page=len(entries) > first)


async def _uncached_search(
    db: TenantDb, flt: EntryFilter, *, first: int, after: str | None
) -> Page[Entry]:
    """A search's page, read from the database (what the cache keeps)."""
    if db.engine.dialect.name == "sqlite" and not flt.sources:
        return await _search_on_thread(db, flt, first=first, after=after)
    # One statement: no BEGIN/COMMIT around it (it reads one snapshot on its own).
    async with read_statement(db.engine) as conn:
        return await _search(conn, flt, first=first, after=after)


def matching(
    conn: AsyncConnection, query: fulltext.Search, columns: Sequence[Any] = COLUMNS
) -> Select[Any]:
    """Entries matching `query`: `columns`, `seq` and their `rank` (lower is better).
    Shared by the entry search and the context loader (app/services/context.py)."""
    return fulltext.entries(fulltext.Target.of(conn), query, columns)


# The search's statements, built once per shape (which filters are given; the first page or
# a later one): the values are bind parameters, so a search builds no SQL expression, and
# SQLAlchemy's compiled cache finds the statement by the same object every time.
_SEARCH_STATEMENTS: dict[tuple[Any, ...], Select[Any]] = {}
# The high-water mark of a first page: a column of the page's own statement, so one
# statement reads it and the page from the same snapshot (an aliased table: never
# correlated with the page's own memory_entries).
_hw = en.alias("hw")
_HWM = select(func.coalesce(func.max(_hw.c.seq), 0)).scalar_subquery().label("hwm")


def search_statement(
    dialect: str, flt: EntryFilter, query: fulltext.Search, *, cursor: bool
) -> Select[Any]:
    """The statement of a page of `flt`'s search (`query`, as `_search` makes it from
    `flt`): a later page's (`cursor`) or the first's. Also the benchmarks' raw baseline
    (bench/bench_data.py)."""
    shape = fulltext.Shape.of(query)
    key = (
        dialect, shape, cursor, flt.min_importance is not None and flt.min_importance > 1,
        bool(flt.sources), flt.scope is None and flt.scope_ref is not None,
    )  # fmt: skip
    stmt = _SEARCH_STATEMENTS.get(key)
    if stmt is None:
        _, _, _, min_importance, sources, ref_only = key
        # The same conditions list_entries gives a list without a search.
        conds: list[Any] = []
        if min_importance:
            conds.append(en.c.importance + 0 >= bindparam("min_importance"))
        if sources:
            conds.append(en.c.source.in_(bindparam("sources", expanding=True)))
        if ref_only:
            conds.append(en.c.scope_ref == bindparam("scope_ref"))
        # A later page: only the rows that existed at the first page. The first: every
        # row is at or below the mark read with them, so it only reads the mark.
        stmt = fulltext.entries_page(
            dialect, shape, COLUMNS, conds=conds, below_hwm=cursor, extra=() if cursor else (_HWM,)
        )
        _SEARCH_STATEMENTS[key] = stmt
    return stmt


async def _search(
    conn: AsyncConnection, flt: EntryFilter, *, first: int, after: str | None
) -> Page[Entry]:
    """Relevance-ordered, paged by offset under the high-water mark of the first page (see
    cursors.decode_search): one statement a page."""
    stmt, values, hwm, offset, _ = _search_query(fulltext.Target.of(conn), flt, first, after)
    rows = (await conn.execute(stmt, values)).all()
    if rows and hwm is None:
        hwm = rows[0].hwm  # the first page reads the high-water mark its cursors keep
    return _search_page([(row, row.rank) for row in rows], first=first, hwm=hwm, offset=offset)


# A search whose words match at most this many entries (in all scopes) is read on the
# event loop's thread when no other request is being served. The bench's 100,000-entry
# tenant (bench/results/data), one scope, sqlite3 alone: a question about one word in 30
# entries 0.45 ms, two in 60 0.55, three in 90 0.65, twelve in 317 2.5. For those, the
# hand-off to aiosqlite's thread and back costs more than the read (`asgi_bench --only
# search_rare_gql`, one request at a time: 805 -> 380 µs CPU a request; `http_bench
# --only search`, 1 client: 1.38-1.53 -> 1.23 ms server time). With other requests in
# flight the thread is better even for those: SQLite's C runs there (without the GIL)
# while the loop serves the others, where inline it would hold them all up (16 clients
# asking rare words: p95 50-64 ms through the thread, 101-104 inline; 07:40-07:43). A
# common word (2,000-50,000 entries, 3-20 ms) always goes to the thread.
INLINE_SEARCH_MATCHES = 150
# ...and has at most this many words: each word costs FTS5 a lookup (~0.1 ms), whatever it
# matches, and a longer question's words are neither counted nor read inline (a question
# may have 64 words; counting each common one costs up to ~2 ms).
INLINE_SEARCH_WORDS = 6


async def _search_on_thread(
    db: TenantDb, flt: EntryFilter, *, first: int, after: str | None
) -> Page[Entry]:
    """_search's page on SQLite by plain sqlite3 (the same SQL and value conversions,
    compiled once), not through SQLAlchemy's execution and result layers: on the event
    loop's thread (InlineReader) when the question's few words are known to match few
    entries (`WordCounts`, INLINE_SEARCH_MATCHES and _WORDS), else on aiosqlite's thread
    (read_on_thread), which also counts the words not known yet. An inline read that runs
    past its budget, or that the reader will not answer, is read on the thread too. Not
    for a filter by sources (an expanding IN list, which neither takes)."""
    stmt, values, hwm, offset, words = _search_query(fulltext.Target("sqlite"), flt, first, after)
    counts = db.extras.get("word_counts")
    if counts is None:
        counts = db.extras["word_counts"] = fulltext.WordCounts()
    assert isinstance(counts, fulltext.WordCounts)
    short = len(words) <= INLINE_SEARCH_WORDS
    matches = counts.matches(words) if short else None
    alone = tenants.leased() <= 1  # no other request for the loop to get on with meanwhile
    reader = (
        db.inline_reader()
        if alone and matches is not None and matches <= INLINE_SEARCH_MATCHES
        else None
    )
    rows = None if reader is None else reader.rows(stmt, values)
    if rows is None:
        unknown = counts.unknown(words) if short else []

        def on_thread(conn: sqlite3.Connection) -> tuple[list[Any], dict[str, int]]:
            return fetch_rows(conn, stmt, values), fulltext.count_entry_words(conn, unknown)

        found, learnt = await read_on_thread(db.engine, on_thread)
        counts.learn(learnt)
        rows = found
    rank_at, hwm_at = _RANK_HWM_AT.get(stmt) or _rank_hwm_at(stmt)
    if rows and hwm is None:
        hwm = rows[0][hwm_at]
    return _search_page([(row, row[rank_at]) for row in rows], first=first, hwm=hwm, offset=offset)


def _search_query(
    target: fulltext.Target, flt: EntryFilter, first: int, after: str | None
) -> tuple[Select[Any], dict[str, Any], int | None, int, Sequence[str]]:
    """The search statement of this page, its values, the cursor's hwm and offset, and the
    words searched for."""
    assert flt.search is not None
    query = fulltext.Search(
        search.words(flt.search, "search"),
        scope=None if flt.scope is None else flt.scope.value,
        scope_ref=None if flt.scope is None else flt.scope_ref,
        tags=list(flt.tags or []),
    )
    hwm, offset = cursors.decode_search("entries-search", after)
    stmt = search_statement(target.dialect, flt, query, cursor=hwm is not None)
    values = fulltext.params(target, query)
    values["page_offset"] = offset
    values["page_limit"] = first + 1
    if hwm is not None:
        values["hwm"] = hwm
    if flt.min_importance is not None and flt.min_importance > 1:
        values["min_importance"] = flt.min_importance
    if flt.sources:
        values["sources"] = [s.value for s in flt.sources]
    if flt.scope is None and flt.scope_ref is not None:
        values["scope_ref"] = flt.scope_ref
    return stmt, values, hwm, offset, query.words


def _search_page(
    rows: Sequence[tuple[Any, float]], *, first: int, hwm: int | None, offset: int
) -> Page[Entry]:
    """The page of (row, rank) pairs, under the high-water mark `hwm`."""
    edges = [
        new_edge(cursors.encode("entries-search", [hwm, offset + i + 1]), to_entry(row), -rank)
        for i, (row, rank) in enumerate(rows[:first])
    ]
    return Page(edges, has_next_page=len(rows) > first)


# search statement -> the positions of its `rank` and `hwm` columns (-1: a later page's
# statement has no `hwm`)
_RANK_HWM_AT: dict[Select[Any], tuple[int, int]] = {}


def _rank_hwm_at(stmt: Select[Any]) -> tuple[int, int]:
    keys = list(stmt.selected_columns.keys())
    _RANK_HWM_AT[stmt] = at = (keys.index("rank"), keys.index("hwm") if "hwm" in keys else -1)
    return at


async def source_events(
    db: TenantDb, entry_id: str, *, first: int, after: str | None
) -> Page[Event]:
    """The events a compactor entry folded, in folding order (oldest first)."""
    validation.check_first(first)
    conds: list[Any] = [src.c.entry_id == entry_id]
    if after is not None:
        (position,) = cursors.decode("sources", after, types=(int,))
        if not 0 <= position < 2**31:  # positions are 32-bit (INTEGER on PostgreSQL)
            raise InvalidInput(["after"], "after is not a valid cursor")
        conds.append(src.c.position > position)
    stmt = (
        select(*EVENT_COLUMNS, src.c.position)
        .select_from(src.join(ev, ev.c.id == src.c.event_id))
        .where(*conds)
        .order_by(src.c.position)
        .limit(first + 1)
    )
    rows = await read_rows(db.engine, stmt)
    edges = [new_edge(cursors.encode("sources", [r.position]), to_event(r)) for r in rows[:first]]
    return Page(edges, has_next_page=len(rows) > first)
