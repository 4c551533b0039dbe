"""Each SQLite short cut (app/storage/sqlite/fastpath) against the stock path on real data:
a tenant database filled through the services, read and written both by the short cut and
by a stock SQLAlchemy + aiosqlite engine on the same file (or its twin), with equal
results required. A SQLAlchemy or aiosqlite upgrade that changes what a short cut relies
on (a compiled form, a processor, a cursor attribute, a private call) fails here."""

import functools
import sqlite3
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.deps import Container
from app.services import cursors, entries, events
from app.services.records import (
    EntryFilter,
    EntryIn,
    Event,
    EventIn,
    Scope,
)
from app.services.search import keywords, page_cache
from app.storage import event_log
from app.storage.search import spec
from app.storage.sqlite.engines import sqlite_engine
from app.storage.sqlite.fastpath import appends
from app.storage.sqlite.fastpath import compiled as statement_module
from app.storage.sqlite.fastpath import search as fast_search
from app.storage.sqlite.fastpath.compiled import fetch_rows
from app.storage.sqlite.fastpath.dialect import OneHopDialect
from app.storage.sqlite.fastpath.on_thread import read_on_thread, write_on_thread
from app.storage.tenants import TenantDb
from app.storage.transactions import read_rows, read_statement, write_transaction
from tests.conftest import migrate_tenant

pytestmark = pytest.mark.sqlite_only

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
async def fast(db: TenantDb) -> TenantDb:
    """The tenant database with the fast path, filled with events and entries."""
    if not db.fast_path:
        pytest.skip("compares the fast path with the stock path (JET_SQLITE_FAST_PATH=0)")
    batch = [
        EventIn(
            scope=(Scope.ENTITY, Scope.TEAM)[i % 2],
            scope_ref=f"ref-{i % 3}",
            kind=("call_summary", "decision", "note")[i % 3],
            body=f"event {i}: ünïcode budget, 'quotes' 😀",
            source=None if i % 4 else "crm",
            source_ref=None if i % 5 else f"crm-{i}",
            occurred_at=T0 + timedelta(minutes=i // 2, microseconds=7 * (i % 3)),
            idempotency_key=None if i % 6 else f"key-{i}",
        )
        for i in range(80)
    ]
    await events.append_events(db, batch)
    for i in range(30):
        await entries.create_entry(
            db,
            EntryIn(
                scope=(Scope.ENTITY, Scope.INSTITUTIONAL)[i % 2],
                scope_ref=None if i % 2 else f"ref-{i % 3}",
                title=f"Budget decision {i}",
                summary=f"The ROAS budget moved {i}% (ünïcode).",
                tags=[("pricing", "q3", "ops")[i % 3], "all"],
                importance=1 + i % 5,
            ),
        )
    return db


@pytest.fixture
async def stock(fast: TenantDb) -> AsyncIterator[AsyncEngine]:
    """A stock SQLAlchemy + aiosqlite engine on the same file."""
    assert fast.engine.url.database is not None
    engine = sqlite_engine(
        Path(fast.engine.url.database),
        synchronous="NORMAL",
        busy_timeout_ms=5000,
        pool_size=2,
        fast_path=False,
    )
    assert not isinstance(engine.dialect, OneHopDialect)
    yield engine
    await engine.dispose()


def _statements() -> list[tuple[Select[Any], dict[str, Any]]]:
    """The app's statements that the short cuts run, with values."""
    out: list[tuple[Select[Any], dict[str, Any]]] = []
    at = T0 + timedelta(minutes=20)
    for names, values in (
        (("limit",), {"limit": 200}),
        (("kinds", "limit"), {"kinds": ["decision", "note"], "limit": 200}),
        (("scope", "scope_ref", "limit"), {"scope": "entity", "scope_ref": "ref-1", "limit": 9}),
        (("occurred_after", "limit"), {"occurred_after": at, "limit": 200}),
        (("at", "eid", "limit"), {"at": at, "eid": "evt_zzz", "limit": 5}),
    ):
        for compressed in (None, False):
            out.append((events._list_statement(names, compressed), values))
    out.append((event_log.BY_KEYS, {"keys": ["key-0", "key-6", "nope"]}))
    out.append((page_cache.REVISION, {}))
    for flt in (
        EntryFilter(search="budget roas"),
        EntryFilter(search="decision", scope=Scope.ENTITY, scope_ref="ref-1"),
        EntryFilter(search="budget", tags=["pricing"], min_importance=2),
        EntryFilter(search="budget", sources=[], scope_ref="ref-2"),
    ):
        for after in (None, "later"):
            stmt, values, _, _, _ = keywords.search_query(
                spec.Target("sqlite"), flt, 7, None if after is None else _cursor()
            )
            out.append((stmt, values))
    return out


def _cursor() -> str:
    return cursors.encode("entries-search", [10_000, 3])


async def _stock_rows(
    engine: AsyncEngine, stmt: Select[Any], values: Mapping[str, Any]
) -> list[tuple[Any, ...]]:
    async with read_statement(engine) as conn:
        return [tuple(r) for r in (await conn.execute(stmt, dict(values))).all()]


def _fetch(conn: sqlite3.Connection, *, stmt: Any, values: Any) -> list[Any]:
    return fetch_rows(conn, stmt, values)


def _tuples(rows: Sequence[Any]) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in rows]


async def test_the_inline_reader_reads_what_the_stock_engine_reads(
    fast: TenantDb, stock: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(statement_module, "INLINE_BUDGET_S", 60.0)  # a busy machine's pace
    reader = fast.inline_reader()
    assert reader is not None
    answered = 0
    for stmt, values in _statements():
        rows = reader.rows(stmt, values)
        assert rows is not None, stmt
        expected = await _stock_rows(stock, stmt, values)
        assert _tuples(rows) == expected, stmt
        answered += len(rows) > 0
    assert answered >= 10  # the data really was read


async def test_fetch_rows_on_the_thread_reads_what_the_stock_engine_reads(
    fast: TenantDb, stock: AsyncEngine
) -> None:
    for stmt, values in _statements():
        rows: list[Any] = await read_on_thread(
            fast.engine, functools.partial(_fetch, stmt=stmt, values=values)
        )
        assert _tuples(rows) == await _stock_rows(stock, stmt, values), stmt


async def test_the_one_hop_dialect_reads_what_the_stock_engine_reads(
    fast: TenantDb, stock: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast dialect (one-hop cursor, shared dialect and compiled cache, inline reads)
    against the stock one: rows, column names, and the same rows read inline."""
    assert isinstance(fast.engine.dialect, OneHopDialect)
    monkeypatch.setattr(statement_module, "INLINE_BUDGET_S", 60.0)  # a busy machine's pace
    for stmt, values in _statements():
        inline = await read_rows(fast.engine, stmt, values)  # on the loop's thread
        assert _tuples(inline) == await _stock_rows(stock, stmt, values), stmt
        async with read_statement(fast.engine) as conn:
            result = await conn.execute(stmt, values)
            keys, rows = list(result.keys()), _tuples(result.all())
        async with read_statement(stock) as conn:
            expected = await conn.execute(stmt, values)
            assert keys == list(expected.keys())
            assert rows == _tuples(expected.all()), stmt


async def _writes(engine: AsyncEngine) -> list[Any]:
    """What a series of writes reports (rowcount, lastrowid, RETURNING, errors)."""
    out: list[Any] = []
    async with write_transaction(engine) as conn:
        await conn.exec_driver_sql("CREATE TABLE w (id INTEGER PRIMARY KEY, v TEXT UNIQUE)")
        one = await conn.execute(text("INSERT INTO w (v) VALUES ('a')"))
        out.append((one.rowcount, one.lastrowid))
        many = await conn.execute(text("INSERT INTO w (v) VALUES (:v)"), [{"v": "b"}, {"v": "c"}])
        out.append(many.rowcount)
        upd = await conn.execute(text("UPDATE w SET v = v || '!' WHERE id >= 2"))
        out.append(upd.rowcount)
        ret = await conn.execute(text("UPDATE w SET v = v || '?' WHERE id <= 2 RETURNING id, v"))
        out.append((sorted(_tuples(ret.all())), ret.rowcount))
    try:
        async with write_transaction(engine) as conn:
            await conn.execute(text("INSERT INTO w (v) VALUES ('z')"))
            await conn.execute(text("INSERT INTO w (v) VALUES ('a?')"))
    except IntegrityError as exc:
        out.append(type(exc.orig).__name__)
    async with read_statement(engine) as conn:
        out.append(_tuples((await conn.execute(text("SELECT * FROM w ORDER BY id"))).all()))
    return out


async def test_the_one_hop_cursor_writes_as_the_stock_cursor(tmp_path: Path) -> None:
    reports = []
    for fast_path in (True, False):
        engine = sqlite_engine(
            tmp_path / f"{fast_path}.db",
            synchronous="NORMAL",
            busy_timeout_ms=1000,
            pool_size=2,
            fast_path=fast_path,
        )
        try:
            reports.append(await _writes(engine))
        finally:
            await engine.dispose()
    assert reports[0] == reports[1]
    assert reports[0][-2] == "IntegrityError"  # and the failed transaction rolled back
    assert len(reports[0][-1]) == 3


async def test_the_search_routing_reads_what_the_stock_engine_reads(
    fast: TenantDb, stock: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(statement_module, "INLINE_BUDGET_S", 60.0)
    searches = [(s, v) for s, v in _statements() if "fts_match" in v]
    assert searches
    for inline_matches in (-1, 10**9):  # all on aiosqlite's thread, then all inline
        monkeypatch.setattr(fast_search, "INLINE_SEARCH_MATCHES", inline_matches)
        counts = fast_search.WordCounts()
        for stmt, values in searches:
            for _ in range(2):  # the first counts the words, the second may read inline
                rows = await fast_search.search_rows(
                    fast.engine,
                    fast.inline_reader(),
                    counts,
                    stmt,
                    values,
                    ["budget", "roas", "decision"],
                    alone=True,
                )
                assert _tuples(rows) == await _stock_rows(stock, stmt, values)


def _dump(path: str) -> tuple[list[Any], list[Any]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT * FROM memory_events ORDER BY seq").fetchall()
        index = conn.execute(
            "SELECT rowid, body, kind, filters FROM memory_events_fts ORDER BY rowid"
        ).fetchall()
    conn.close()
    return rows, index


@pytest.mark.parametrize("size", [5, appends.JSON_INSERT_ROWS + 20])
async def test_appends_on_the_thread_store_what_the_stock_insert_stores(
    container: Container, settings: Any, size: int
) -> None:
    """The group commit's plain-sqlite3 insert (executemany, or one JSON statement) and
    its search index, against SQLAlchemy's insert of the same events on a stock engine."""
    if not settings.sqlite_fast_path:
        pytest.skip("compares the fast path with the stock path (JET_SQLITE_FAST_PATH=0)")
    now = T0 + timedelta(days=1)
    batch = [
        Event(
            f"evt_{i:04d}",
            (Scope.ENTITY, Scope.INSTITUTIONAL)[i % 2],
            None if i % 2 else f"ref ü {i % 3}",
            ("decision", "note")[i % 2],
            f"body {i} ünïcode 'q' 😀",
            None if i % 3 else "crm",
            None,
            T0 + timedelta(seconds=i, microseconds=i),
            now,
            None,
            None,
            None if i % 4 else f"key-{i}",
        )
        for i in range(size)
    ]
    paths = []
    for fast_path in (True, False):
        path = settings.tenants_dir / f"twin-{fast_path}.db"
        engine = sqlite_engine(
            path, synchronous="NORMAL", busy_timeout_ms=5000, pool_size=2, fast_path=fast_path
        )
        try:
            async with write_transaction(engine) as conn:
                await conn.run_sync(lambda c: _migrate(c))
            if fast_path:
                await write_on_thread(
                    engine,
                    lambda c: appends.insert_rows(
                        c, event_log._sqlite_rows(batch), event_log._INSERT_COLUMNS
                    ),
                )
            else:
                async with write_transaction(engine) as conn:
                    await event_log.insert_events(conn, batch)
        finally:
            await engine.dispose()
        paths.append(str(path))
    fast_dump, stock_dump = _dump(paths[0]), _dump(paths[1])
    assert fast_dump == stock_dump
    assert len(fast_dump[0]) == len(fast_dump[1]) == size


def _migrate(conn: Any) -> None:
    migrate_tenant(conn, "head")
