"""Curated memory entries: create, partial update with optimistic concurrency, delete,
read, list and full-text search. Deleting a compactor entry releases the events it folded."""

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
from app.errors import Conflict, InvalidInput, NotFound, TooLarge
from app.services import cursors, fusion, history, limits, search, search_cache, validation
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
from app.storage import fulltext, reads
from app.storage.lists import in_list, storable
from app.storage.models import entries_table as en
from app.storage.models import entry_sources_table as src
from app.storage.models import events_table as ev
from app.storage.tenants import TenantDb
from app.storage.transactions import read_rows, read_statement, write_transaction
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
        if values is not None and len(values) > limits.FILTER_VALUES_MAX:
            raise TooLarge(
                [name],
                f"{name} has {len(values)} values; the limit is {limits.FILTER_VALUES_MAX}",
            )


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
        page = await search_cache.search_page(
            db, flt, first=first, after=after, search_fn=_uncached_search
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
                fulltext.entries_tagged(fulltext.Target.of(conn), flt.tags, scope, flt.scope_ref)
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
        new_edge(cursors.encode("entries", [e.updated_at.isoformat(), e.id]), e)
        for e in entries[:first]
    ]
    return Page(edges, has_next_page=len(entries) > first)


async def _uncached_search(
    db: TenantDb, flt: EntryFilter, *, first: int, after: str | None
) -> Page[Entry]:
    """A search's page, read from the database (what the cache keeps): one statement,
    relevance-ordered, paged by offset under the high-water mark of the first page (see
    cursors.decode_search). Fused with the dense ranking unless keywords only."""
    fused = await fusion.fused_page(
        db, flt, first=first, after=after, keyword_ranking=_keyword_ranking, to_entry=to_entry,
        columns=COLUMNS,
    )  # fmt: skip
    if fused is not None:
        return fused
    target = fulltext.Target.of_engine(db.engine)
    stmt, values, hwm, offset, words = _search_query(target, flt, first, after)
    rows = await reads.search_rows(db, stmt, values, words)
    rank_at, hwm_at = _RANK_HWM_AT.get(stmt) or _rank_hwm_at(stmt)
    if rows and hwm is None:
        hwm = rows[0][hwm_at]  # the first page reads the high-water mark its cursors keep
    return _search_page(
        [(row, row[rank_at]) for row in rows], words, first=first, hwm=hwm, offset=offset
    )


async def _keyword_ranking(
    db: TenantDb, flt: EntryFilter, hwm: int, limit: int
) -> list[tuple[int, float]]:
    """The keyword ranking's best `limit` (seq, rank) at or below `hwm`, best first: what
    fusion ranks by, without the entries' rows (read for the page only)."""
    target = fulltext.Target.of_engine(db.engine)
    cursor = cursors.encode("entries-search", [hwm, 0])
    stmt, values, _, _, words = _search_query(target, flt, limit - 1, cursor, ranking=True)
    return [(int(s), float(r)) for s, r in await reads.search_rows(db, stmt, values, words)]


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
    dialect: str, flt: EntryFilter, query: fulltext.Search, *, cursor: bool, ranking: bool = False
) -> Select[Any]:
    """The statement of a page of `flt`'s search (`query`, as `_search` makes it from
    `flt`): a later page's (`cursor`) or the first's. Also the benchmarks' raw baseline
    (bench/bench_data.py)."""
    shape = fulltext.Shape.of(query)
    key = (
        dialect, shape, cursor, flt.min_importance is not None and flt.min_importance > 1,
        bool(flt.sources), flt.scope is None and flt.scope_ref is not None, ranking,
    )  # fmt: skip
    stmt = _SEARCH_STATEMENTS.get(key)
    if stmt is None:
        _, _, _, min_importance, sources, ref_only, _ = key
        # The same conditions list_entries gives a list without a search.
        conds: list[Any] = []
        if min_importance:
            conds.append(en.c.importance + 0 >= bindparam("min_importance"))
        if sources:
            conds.append(in_list(en.c.source, "sources"))
        if ref_only:
            conds.append(en.c.scope_ref == bindparam("scope_ref"))
        # A later page: only the rows that existed at the first page. The first: every
        # row is at or below the mark read with them, so it only reads the mark.
        stmt = fulltext.entries_page(
            dialect, shape, () if ranking else COLUMNS, conds=conds, below_hwm=cursor,
            extra=() if cursor or ranking else (_HWM,),
        )  # fmt: skip
        _SEARCH_STATEMENTS[key] = stmt
    return stmt


def _search_query(
    target: fulltext.Target,
    flt: EntryFilter,
    first: int,
    after: str | None,
    *,
    ranking: bool = False,
) -> tuple[Select[Any], dict[str, Any], int | None, int, Sequence[str]]:
    """The search statement of this page (`ranking`: its seq and rank only), its values,
    the cursor's hwm and offset, and the words searched for."""
    assert flt.search is not None
    query = fulltext.Search(
        search.words(flt.search, "search"),
        scope=None if flt.scope is None else flt.scope.value,
        scope_ref=None if flt.scope is None else flt.scope_ref,
        tags=list(flt.tags or []),
    )
    hwm, offset = cursors.decode_search("entries-search", after)
    stmt = search_statement(target.dialect, flt, query, cursor=hwm is not None, ranking=ranking)
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
    rows: Sequence[tuple[Any, float]],
    words: Sequence[str],
    *,
    first: int,
    hwm: int | None,
    offset: int,
) -> Page[Entry]:
    """The page of (row, rank) pairs, under the high-water mark `hwm`, each hit scored by
    the share of the search's `words` it contains (search.score), ordered by rank."""
    edges = []
    for i, (row, _) in enumerate(rows[:first]):
        entry = to_entry(row)
        matched = search.matched_terms(words, [entry.title, entry.summary, *entry.tags])
        cursor = cursors.encode("entries-search", [hwm, offset + i + 1])
        edges.append(new_edge(cursor, entry, search.score(words, matched), matched))
    return Page(edges, has_next_page=len(rows) > first)


# search statement -> the positions of its `rank` and `hwm` columns (-1: a later page's
# statement has no `hwm`)
_RANK_HWM_AT: dict[Select[Any], tuple[int, int]] = {}


def _rank_hwm_at(stmt: Select[Any]) -> tuple[int, int]:
    keys = list(stmt.selected_columns.keys())
    _RANK_HWM_AT[stmt] = at = (keys.index("rank"), keys.index("hwm") if "hwm" in keys else -1)
    return at


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
    edges = [new_edge(cursors.encode("sources", [r.position]), to_event(r)) for r in rows[:first]]
    return Page(edges, has_next_page=len(rows) > first)
