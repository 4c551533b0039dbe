"""Whole-table reads and writes for export and import: keyset pages in a stable order, and
bulk inserts that keep ids and timestamps (the file format is
app/services/data_rights/portability.py's).

Inserts only: the event log's immutability triggers refuse updates and deletes, not these.
"""

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import orjson
from sqlalchemy import (
    JSON,
    Boolean,
    ColumnElement,
    Select,
    String,
    Table,
    and_,
    func,
    insert,
    select,
    text,
    tuple_,
)
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.storage import scopes
from app.storage.lists import in_list
from app.storage.models import (
    compaction_runs_table,
    entries_table,
    entry_sources_table,
    entry_versions_table,
    events_table,
    llm_calls_table,
)
from app.storage.search import fulltext
from app.storage.transactions import read_statement
from app.storage.types import UTCDateTime, sqlite_text


@dataclass(frozen=True)
class TableSpec:
    """How one table is read whole (`order`) or for one scope (`scoped_order`, None: the
    table holds nothing of a scope's subject), and what identifies a row (`identity`)."""

    table: Table
    order: tuple[str, ...]
    scoped_order: tuple[str, ...] | None
    identity: tuple[str, ...]

    @property
    def columns(self) -> list[str]:
        """The stored columns but `seq`, the database's own row number."""
        return [c.name for c in self.table.columns if c.name != "seq"]

    @property
    def max_lengths(self) -> dict[str, int]:
        """The columns a backend bounds in length (PostgreSQL refuses a longer value)."""
        return {
            c.name: c.type.length
            for c in self.table.columns
            if isinstance(c.type, String) and c.type.length is not None
        }


# Whole tables by `seq` (their insertion order), so that an import into an empty tenant
# keeps every tie-break that falls back on it; a scope by its (time, id) index.
TABLES: Mapping[str, TableSpec] = {
    "memory_entries": TableSpec(entries_table, ("seq",), ("updated_at", "id"), ("id",)),
    "memory_events": TableSpec(events_table, ("seq",), ("occurred_at", "id"), ("id",)),
    "memory_entry_sources": TableSpec(
        entry_sources_table,
        ("entry_id", "event_id"),
        ("entry_id", "event_id"),
        ("entry_id", "event_id"),
    ),
    "memory_entry_versions": TableSpec(
        entry_versions_table,
        ("seq",),
        ("entry_id", "version"),
        ("entry_id", "version"),
    ),
    "compaction_runs": TableSpec(compaction_runs_table, ("id",), None, ("id",)),
    "llm_calls": TableSpec(llm_calls_table, ("id",), None, ("id",)),
}


def _scope_filter(table: Table, scope: str, scope_ref: str | None) -> ColumnElement[bool]:
    ref = table.c.scope_ref.is_(None) if scope_ref is None else table.c.scope_ref == scope_ref
    return and_(table.c.scope == scope, ref)


def _in_scope(stmt: Select[Any], spec: TableSpec, scope: str, scope_ref: str | None) -> Select[Any]:
    t = spec.table
    if "scope" in t.c:
        return stmt.where(_scope_filter(t, scope, scope_ref))
    # Provenance: the rows of the scope's entries.
    en = entries_table
    return stmt.join(en, en.c.id == t.c.entry_id).where(_scope_filter(en, scope, scope_ref))


def _page_statement(
    spec: TableSpec, scope: str | None, scope_ref: str | None, after: tuple[Any, ...] | None
) -> Select[Any]:
    t = spec.table
    order = spec.order if scope is None else spec.scoped_order
    assert order is not None, f"{t.name} is not exported for a scope"
    key = [t.c[name] for name in order]
    columns = [t.c[name] for name in spec.columns]
    stmt = select(*columns, *(k.label(f"_key_{k.name}") for k in key))
    if scope is not None:
        stmt = _in_scope(stmt, spec, scope, scope_ref)
    if after is not None:
        stmt = stmt.where(tuple_(*key) > tuple_(*after))
    return stmt.order_by(*key)


async def count_rows(
    engine: AsyncEngine, names: Sequence[str], scope: str, scope_ref: str | None
) -> int:
    """How many rows of the tables `names` one scope holds (one read, through the scope
    indexes)."""
    counts = [
        _in_scope(
            select(func.count()).select_from(TABLES[n].table), TABLES[n], scope, scope_ref
        ).scalar_subquery()
        for n in names
    ]
    async with read_statement(engine) as conn:
        return int((await conn.execute(select(sum(counts[1:], counts[0])))).scalar_one())


async def table_pages(
    engine: AsyncEngine,
    name: str,
    *,
    scope: str | None,
    scope_ref: str | None,
    page_size: int,
    snapshot: AsyncConnection | None = None,
) -> AsyncIterator[list[dict[str, Any]]]:
    """The rows of table `name` (or of one scope), `page_size` at a time by keyset: each page
    one bounded read, on `snapshot` (one read transaction for them all) or, without it, on
    a connection of its own that is returned to the pool between pages."""
    spec = TABLES[name]
    n_key = len(spec.order if scope is None else spec.scoped_order or ())
    after: tuple[Any, ...] | None = None
    while True:
        stmt = _page_statement(spec, scope, scope_ref, after).limit(page_size)
        if snapshot is not None:
            rows = (await snapshot.execute(stmt)).all()
        else:
            async with read_statement(engine) as conn:
                rows = (await conn.execute(stmt)).all()
        if not rows:
            return
        width = len(spec.columns)
        names = spec.columns
        yield [dict(zip(names, r[:width], strict=True)) for r in rows]
        if len(rows) < page_size:
            return
        after = tuple(rows[-1][width : width + n_key])


async def stored(
    conn: AsyncConnection, name: str, keys: Sequence[tuple[Any, ...]]
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The stored rows of table `name` among `keys` (identity values), by identity."""
    spec = TABLES[name]
    t = spec.table
    first = t.c[spec.identity[0]]
    stmt = select(*(t.c[c] for c in spec.columns)).where(
        in_list(first, sorted({str(k[0]) for k in keys}))
    )
    wanted = set(keys)
    found: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in (await conn.execute(stmt)).all():
        row = dict(zip(spec.columns, r, strict=True))
        identity = tuple(row[c] for c in spec.identity)
        if identity in wanted:
            found[identity] = row
    return found


async def deleted_versions(conn: AsyncConnection, entry_ids: Sequence[str]) -> dict[str, int]:
    """entry id -> the highest version of its `delete` versions, among `entry_ids`."""
    ve = entry_versions_table
    stmt = (
        select(ve.c.entry_id, func.max(ve.c.version))
        .where(in_list(ve.c.entry_id, list(entry_ids)), ve.c.change == "delete")
        .group_by(ve.c.entry_id)
    )
    return {e: v for e, v in (await conn.execute(stmt)).all()}


async def event_ids_by_idempotency_key(
    conn: AsyncConnection, keys: Sequence[str]
) -> dict[str, str]:
    """idempotency key -> the id of the event stored under it, among `keys`."""
    ev = events_table
    stmt = select(ev.c.idempotency_key, ev.c.id).where(in_list(ev.c.idempotency_key, list(keys)))
    return {k: i for k, i in (await conn.execute(stmt)).all()}


async def insert_rows(conn: AsyncConnection, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert `rows` (every column but seq, ids and timestamps as given) into table `name`
    in the caller's write transaction; events are indexed for search as appends are
    (PostgreSQL: a generated column; SQLite: fulltext.INDEX_EVENTS_SQL) and counted in their
    scopes' summary (app.storage.scopes)."""
    if not rows:
        return
    spec = TABLES[name]
    if conn.dialect.name == "postgresql":
        await conn.execute(insert(spec.table), list(rows))
        if name == "memory_events":
            await scopes.count_events(conn, [r["id"] for r in rows])
        return
    after = None
    if name == "memory_events":
        after = (await conn.execute(text(fulltext.LAST_EVENT_SEQ_SQL))).scalar_one()
    # Positional tuples straight to sqlite3, as event_log's appends do: SQLAlchemy's
    # per-row parameter processing was most of an import's time.
    await conn.exec_driver_sql(_sqlite_insert(spec), [_sqlite_row(spec, r) for r in rows])
    if after is not None:
        await conn.execute(text(fulltext.INDEX_EVENTS_SQL), {"after": after})
        await conn.execute(text(scopes.COUNT_EVENTS_SQL), {"after": after})


def _sqlite_insert(spec: TableSpec) -> str:
    names = spec.columns
    marks = ", ".join("?" * len(names))
    return f"INSERT INTO {spec.table.name} ({', '.join(names)}) VALUES ({marks})"


def _sqlite_row(spec: TableSpec, row: Mapping[str, Any]) -> tuple[Any, ...]:
    """The values UTCDateTime, JSON and Boolean bind on SQLite (tests hold them equal to
    SQLAlchemy's through the round trip); only those columns are looked at."""
    values = [row[name] for name in spec.columns]
    for i, encode in _sqlite_encoders(spec):
        if values[i] is not None:
            values[i] = encode(values[i])
    return tuple(values)


@cache
def _sqlite_encoders(spec: TableSpec) -> list[tuple[int, Any]]:
    out: list[tuple[int, Any]] = []
    for i, name in enumerate(spec.columns):
        type_ = spec.table.c[name].type
        if isinstance(type_, UTCDateTime):
            out.append((i, sqlite_text))
        elif isinstance(type_, JSON):
            out.append((i, _json_text))
        elif isinstance(type_, Boolean):
            out.append((i, int))
    return out


def _json_text(value: Any) -> str:
    return orjson.dumps(value).decode()
