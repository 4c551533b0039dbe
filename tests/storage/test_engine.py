"""The SQLite engine's one-hop cursor (app/storage/sqlite/fastpath/dialect.py `OneHopCursor`): what
SQLAlchemy reads from a statement is what its own aiosqlite cursor gave, in one call to
aiosqlite's thread; and the private aiosqlite call it relies on still behaves as assumed."""

import asyncio
import inspect
import sqlite3
import threading
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, bindparam, event, select, text
from sqlalchemy.engine.interfaces import CacheStats
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.storage.sqlite.engines import SqliteEngines, sqlite_engine
from app.storage.sqlite.fastpath import compiled as engine_module
from app.storage.sqlite.fastpath.compiled import fetch_rows
from app.storage.sqlite.fastpath.dialect import OneHopCursor as _OneHopCursor
from app.storage.sqlite.fastpath.on_thread import write_on_thread
from app.storage.transactions import read_rows, read_statement, read_transaction, write_transaction
from app.storage.types import UTCDateTime
from app.storage.unavailable import TenantUnavailable

pytestmark = pytest.mark.sqlite_only  # SQLite's driver adapter


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    engine = sqlite_engine(
        tmp_path / "t.db", synchronous="NORMAL", busy_timeout_ms=1000, pool_size=2
    )
    async with write_transaction(engine) as conn:
        await conn.exec_driver_sql("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)")
    yield engine
    await engine.dispose()


async def test_aiosqlite_private_execute_is_what_the_cursor_assumes(tmp_path: Path) -> None:
    """`aiosqlite.Connection._execute(fn, *args)`: a coroutine that runs fn(*args) on the
    connection's own thread and returns its result or raises its exception. If aiosqlite
    changes it, this fails (and _OneHopCursor must change with it)."""
    assert inspect.iscoroutinefunction(aiosqlite.Connection._execute)
    params = list(inspect.signature(aiosqlite.Connection._execute).parameters)
    assert params[:2] == ["self", "fn"] and "args" in params, params
    async with aiosqlite.connect(tmp_path / "a.db") as conn:
        loop_thread = threading.get_ident()

        def probe(c: sqlite3.Connection, x: int) -> tuple[int, int]:
            return threading.get_ident(), c.execute("SELECT ?", (x,)).fetchone()[0]

        worker, value = await conn._execute(probe, conn._conn, 7)
        assert value == 7 and worker != loop_thread
        assert worker == conn._thread.ident  # the thread sqlite3's connection belongs to

        def fail(c: sqlite3.Connection) -> None:
            c.execute("SELECT * FROM no_such_table")

        with pytest.raises(sqlite3.OperationalError, match="no such table"):
            await conn._execute(fail, conn._conn)
    with pytest.raises(ValueError, match="no active connection"):
        _ = conn._conn  # the closed-connection error the cursor relies on


async def test_one_thread_hop_per_statement(engine: AsyncEngine) -> None:
    hops = 0
    async with read_statement(engine) as conn:  # no BEGIN: only the statements hop
        raw = await conn.get_raw_connection()
        assert isinstance(raw.dbapi_connection.cursor(), _OneHopCursor)  # type: ignore[union-attr]
        driver = raw.driver_connection
        original = driver._execute  # type: ignore[union-attr]

        async def counting(fn: Any, *args: Any, **kwargs: Any) -> Any:
            nonlocal hops
            hops += 1
            return await original(fn, *args, **kwargs)

        driver._execute = counting  # type: ignore[union-attr]
        try:
            await conn.exec_driver_sql("INSERT INTO t (v) VALUES ('a')")
            assert hops == 1
            assert (await conn.exec_driver_sql("SELECT v FROM t")).all() == [("a",)]
            assert hops == 2
        finally:
            del driver._execute  # type: ignore[union-attr]


async def test_rowcount_lastrowid_description_rows(engine: AsyncEngine) -> None:
    async with write_transaction(engine) as conn:
        first = await conn.execute(text("INSERT INTO t (v) VALUES ('a')"))
        assert first.lastrowid == 1
        second = await conn.execute(text("INSERT INTO t (v) VALUES ('b')"))
        assert second.lastrowid == 2
        many = await conn.execute(text("INSERT INTO t (v) VALUES (:v)"), [{"v": "c"}, {"v": "d"}])
        assert many.rowcount == 2
        updated = await conn.execute(text("UPDATE t SET v = v || '!' WHERE id <= 3"))
        assert updated.rowcount == 3
        none = await conn.execute(text("UPDATE t SET v = 'x' WHERE id = 99"))
        assert none.rowcount == 0
        returned = await conn.execute(text("UPDATE t SET v = v || '?' WHERE id >= 3 RETURNING id"))
        assert sorted(returned.scalars()) == [3, 4]
        assert returned.rowcount == 2
    async with read_statement(engine) as conn:
        result = await conn.execute(text("SELECT id, v FROM t ORDER BY id"))
        assert list(result.keys()) == ["id", "v"]
        assert result.all() == [(1, "a!"), (2, "b!"), (3, "c!?"), (4, "d?")]
        empty = await conn.execute(text("SELECT id AS n FROM t WHERE id > 99"))
        assert list(empty.keys()) == ["n"] and empty.all() == []
        # Rows fetched one by one and in chunks, as the adapter's buffered cursor allows.
        partial = await conn.execute(text("SELECT id FROM t ORDER BY id"))
        assert partial.fetchone() == (1,)
        assert partial.fetchmany(2) == [(2,), (3,)]
        assert partial.fetchall() == [(4,)]


async def test_transactions_and_errors(engine: AsyncEngine) -> None:
    with pytest.raises(IntegrityError) as info:
        async with write_transaction(engine) as conn:
            await conn.execute(text("INSERT INTO t (v) VALUES ('a')"))
            await conn.execute(text("INSERT INTO t (v) VALUES ('a')"))
    assert isinstance(info.value.orig, sqlite3.IntegrityError)
    async with read_transaction(engine) as conn:  # rolled back: the first insert is gone
        assert (await conn.execute(text("SELECT count(*) FROM t"))).scalar() == 0
        raw = await conn.get_raw_connection()
        assert raw.driver_connection.in_transaction  # type: ignore[union-attr]  # BEGIN ran
    with pytest.raises(OperationalError) as error:
        async with read_statement(engine) as conn:
            await conn.execute(text("SELECT * FROM no_such_table"))
    assert isinstance(error.value.orig, sqlite3.OperationalError)
    async with write_transaction(engine) as conn:
        await conn.execute(text("INSERT INTO t (v) VALUES ('b')"))
    async with read_statement(engine) as conn:
        assert (await conn.execute(text("SELECT v FROM t"))).scalars().all() == ["b"]


async def test_a_cancelled_statement_invalidates_its_connection(engine: AsyncEngine) -> None:
    """The statement keeps running on aiosqlite's thread after its task is cancelled; the
    connection must not go back to the pool (it is invalidated and closed), and the engine
    keeps working."""
    started, release = threading.Event(), threading.Event()
    invalidated: list[object] = []

    def block() -> int:
        started.set()
        release.wait(30)
        return 1

    @event.listens_for(engine.sync_engine, "connect")
    def _connect(dbapi_connection: Any, _: Any) -> None:
        dbapi_connection.create_function("block", 0, block)

    @event.listens_for(engine.sync_engine, "invalidate")
    def _invalidate(dbapi_connection: Any, *_: Any) -> None:
        invalidated.append(dbapi_connection)

    await engine.dispose()  # connections made from now on have block()

    async def blocked() -> None:
        async with read_statement(engine) as conn:
            await conn.execute(text("SELECT block()"))

    task = asyncio.create_task(blocked())
    assert await asyncio.to_thread(started.wait, 30)
    task.cancel()
    await asyncio.sleep(0)  # the cancellation reaches the task; the statement still runs
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(invalidated) == 1
    async with read_statement(engine) as conn:
        assert (await conn.execute(text("SELECT block()"))).scalar() == 1


def _record_threads(engine: AsyncEngine) -> list[int]:
    """SQL function whoami(): appends the thread that runs it to the returned list."""
    threads: list[int] = []

    def whoami() -> int:
        threads.append(threading.get_ident())
        return 1

    @event.listens_for(engine.sync_engine, "connect")
    def _connect(dbapi_connection: Any, _: Any) -> None:
        dbapi_connection.create_function("whoami", 0, whoami)

    return threads


async def test_read_rows_runs_on_the_event_loops_thread(engine: AsyncEngine) -> None:
    threads = _record_threads(engine)
    await engine.dispose()  # connections made from now on have whoami()
    async with write_transaction(engine) as conn:
        await conn.execute(text("INSERT INTO t (v) VALUES ('a'), ('b')"))
    rows = await read_rows(engine, text("SELECT whoami(), v FROM t ORDER BY id"))
    assert [tuple(r) for r in rows] == [(1, "a"), (1, "b")]
    assert rows[0].v == "a"  # Rows, as conn.execute(...).all() gives
    assert threads and set(threads) == {threading.get_ident()}
    by_key = await read_rows(engine, text("SELECT v FROM t WHERE id = :id"), {"id": 2})
    assert [tuple(r) for r in by_key] == [("b",)]
    assert await read_rows(engine, text("SELECT v FROM t WHERE id = 99")) == []
    # Errors are SQLAlchemy's, as on the thread, and the connection keeps working.
    with pytest.raises(OperationalError) as error:
        await read_rows(engine, text("SELECT * FROM no_such_table"))
    assert isinstance(error.value.orig, sqlite3.OperationalError)
    assert len(await read_rows(engine, text("SELECT v FROM t"))) == 2


async def test_read_rows_over_its_budget_moves_to_aiosqlites_thread(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A statement still running when the progress handler runs past the budget is
    interrupted on the loop and run again, whole, on the connection's thread."""
    threads = _record_threads(engine)
    await engine.dispose()
    monkeypatch.setattr(engine_module, "INLINE_BUDGET_S", 0.0)  # over at the first tick
    loop_thread = threading.get_ident()
    # Short enough never to reach the handler (every _INLINE_STEP instructions): inline.
    assert [tuple(r) for r in await read_rows(engine, text("SELECT whoami()"))] == [(1,)]
    assert threads == [loop_thread]
    threads.clear()
    counted = text(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) "
        "SELECT count(*) FROM n WHERE whoami() = 1"
    )
    assert [tuple(r) for r in await read_rows(engine, counted)] == [(20000,)]
    on_loop = threads.count(loop_thread)
    assert 0 < on_loop < 20000  # begun on the loop, interrupted there
    assert len(threads) - on_loop == 20000  # then the whole statement on the thread
    assert threads[-1] != loop_thread
    # The connection is fine afterwards, and short reads are inline again.
    threads.clear()
    assert len(await read_rows(engine, text("SELECT whoami()"))) == 1
    assert threads == [loop_thread]


async def test_tenant_engines_share_one_dialect_and_compiled_cache(tmp_path: Path) -> None:
    """SqliteEngines: a statement compiled for one tenant's engine is reused by the next
    (a newly opened tenant no longer compiles every statement again), each engine still
    has its own file and pool, and the dialect's per-connection setup still runs."""
    engines = SqliteEngines(synchronous="NORMAL", busy_timeout_ms=1000, pool_size=2)
    first, second = await engines.engine(tmp_path / "a.db"), await engines.engine(tmp_path / "b.db")
    try:
        assert first.dialect is second.dialect
        assert first.dialect.server_version_info is not None  # initialised once, up front
        assert first.pool is not second.pool
        stmt = text("SELECT count(*) FROM sqlite_master WHERE name = :n")
        hits = []
        for engine, table in ((first, "only_in_a"), (second, "only_in_b")):
            async with write_transaction(engine) as conn:
                await conn.exec_driver_sql(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY)")
            async with read_statement(engine) as conn:
                result = await conn.execute(stmt, {"n": "only_in_a"})
                hits.append(result.context.cache_hit)
                assert result.scalar_one() == (1 if engine is first else 0)  # its own file
        # Compiled once, by the first engine's first use.
        assert hits == [CacheStats.CACHE_MISS, CacheStats.CACHE_HIT], hits
        async with read_statement(second) as conn:
            # SQLite's dialect registers REGEXP on every connection (its on_connect).
            assert (await conn.execute(text("SELECT 'abc' REGEXP 'b'"))).scalar_one() == 1
        # Errors are still classified per engine (the handle_error listener).
        async with write_transaction(second) as conn:
            with pytest.raises(IntegrityError):
                await conn.exec_driver_sql("INSERT INTO only_in_b (id) VALUES (1), (1)")
    finally:
        await first.dispose()
        await second.dispose()


# -- write_on_thread: a whole write transaction as one call on aiosqlite's thread --------


async def test_write_on_thread_commits_in_one_hop_on_aiosqlites_thread(
    engine: AsyncEngine,
) -> None:
    loop_thread = threading.get_ident()
    hops = 0
    original = aiosqlite.Connection._execute

    async def counting(self: aiosqlite.Connection, fn: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal hops
        hops += 1
        return await original(self, fn, *args, **kwargs)

    def write(conn: sqlite3.Connection) -> tuple[int, bool]:
        conn.executemany("INSERT INTO t (v) VALUES (?)", [("a",), ("b",)])
        return threading.get_ident(), conn.in_transaction

    async with engine.connect() as warm:  # the pool's connection exists before counting
        await warm.exec_driver_sql("SELECT 1")
    aiosqlite.Connection._execute = counting  # type: ignore[method-assign]
    try:
        thread, in_transaction = await write_on_thread(engine, write)
    finally:
        aiosqlite.Connection._execute = original  # type: ignore[method-assign]
    assert hops == 1  # BEGIN IMMEDIATE, the function and COMMIT: one hand-off
    assert thread != loop_thread and in_transaction
    async with read_statement(engine) as conn:
        assert (await conn.exec_driver_sql("SELECT v FROM t ORDER BY id")).all() == [
            ("a",),
            ("b",),
        ]
        raw = await conn.get_raw_connection()
        assert not raw.driver_connection.in_transaction  # type: ignore[union-attr]  # committed


async def test_write_on_thread_takes_the_write_lock_up_front(engine: AsyncEngine) -> None:
    """BEGIN IMMEDIATE: the function runs holding SQLite's write lock, so another writer
    cannot slip a row in between its reads and its writes."""

    def probe(conn: sqlite3.Connection) -> str:
        other = sqlite3.connect(engine.url.database or "", timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            return str(exc)
        finally:
            other.close()
        return "not locked"

    assert await write_on_thread(engine, probe) == "database is locked"


@pytest.mark.parametrize("failure", ["constraint", "python"])
async def test_write_on_thread_rolls_back_what_fails(engine: AsyncEngine, failure: str) -> None:
    def write(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO t (v) VALUES ('a')")
        if failure == "constraint":
            conn.execute("INSERT INTO t (v) VALUES ('a')")
        raise ValueError("the function failed after its insert")

    if failure == "constraint":
        # As from a statement run through SQLAlchemy: its IntegrityError, sqlite3's inside.
        with pytest.raises(IntegrityError) as info:
            await write_on_thread(engine, write)
        assert isinstance(info.value.orig, sqlite3.IntegrityError)
    else:
        with pytest.raises(ValueError, match="failed after its insert"):
            await write_on_thread(engine, write)
    async with read_statement(engine) as conn:
        assert (await conn.exec_driver_sql("SELECT count(*) FROM t")).scalar() == 0
    # The connection went back to the pool outside any transaction, and works.
    assert (
        await write_on_thread(
            engine, lambda c: c.execute("INSERT INTO t (v) VALUES ('b')").rowcount
        )
        == 1
    )


async def test_write_on_thread_says_a_locked_database_is_unavailable(tmp_path: Path) -> None:
    engine = sqlite_engine(tmp_path / "l.db", synchronous="NORMAL", busy_timeout_ms=50, pool_size=1)
    try:
        await write_on_thread(engine, lambda c: c.execute("CREATE TABLE t (v TEXT)"))
        holder = sqlite3.connect(tmp_path / "l.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(TenantUnavailable) as info:
                await write_on_thread(engine, lambda c: c.execute("INSERT INTO t VALUES ('x')"))
            assert info.value.reason == "busy"
        finally:
            holder.close()
        assert (
            await write_on_thread(
                engine, lambda c: c.execute("INSERT INTO t VALUES ('y')").rowcount
            )
            == 1
        )
    finally:
        await engine.dispose()


async def test_a_cancelled_write_on_thread_finishes_and_invalidates_its_connection(
    engine: AsyncEngine,
) -> None:
    """Cancelling the wait cannot stop the function on aiosqlite's thread: it commits or
    rolls back there on its own, and its connection is closed after it, never reused."""
    started, release = threading.Event(), threading.Event()
    invalidated: list[object] = []

    @event.listens_for(engine.sync_engine, "invalidate")
    def _invalidate(dbapi_connection: Any, *_: Any) -> None:
        invalidated.append(dbapi_connection)

    def slow(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO t (v) VALUES ('late')")
        started.set()
        release.wait(30)

    task = asyncio.create_task(write_on_thread(engine, slow))
    assert await asyncio.to_thread(started.wait, 30)
    task.cancel()
    await asyncio.sleep(0)
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(invalidated) == 1
    async with read_statement(engine) as conn:  # it committed on its thread
        assert (await conn.exec_driver_sql("SELECT v FROM t")).scalars().all() == ["late"]


async def test_fetch_rows_converts_as_sqlalchemy_does(tmp_path: Path) -> None:
    """fetch_rows (a plain sqlite3 read inside write_on_thread) gives the values a read
    through the engine gives: timestamps as aware datetimes, not SQLite's text."""
    engine = sqlite_engine(
        tmp_path / "f.db", synchronous="NORMAL", busy_timeout_ms=1000, pool_size=1
    )
    meta = MetaData()
    table = Table(
        "f",
        meta,
        Column("id", Integer, primary_key=True),
        Column("at", UTCDateTime),
        Column("v", String),
    )
    at = datetime(2026, 11, 30, 5, 20, 1, 123456, tzinfo=UTC)
    try:
        async with write_transaction(engine) as conn:
            await conn.run_sync(meta.create_all)
            await conn.execute(
                table.insert(), [{"id": 1, "at": at, "v": "a"}, {"id": 2, "at": None, "v": "b"}]
            )
        statement = select(table).where(table.c.id >= bindparam("low")).order_by(table.c.id)
        async with read_statement(engine) as conn:
            expected = [tuple(r) for r in (await conn.execute(statement, {"low": 1})).all()]
        got = await write_on_thread(engine, lambda c: fetch_rows(c, statement, {"low": 1}))
        assert [tuple(r) for r in got] == expected == [(1, at, "a"), (2, None, "b")]
        with pytest.raises(ValueError, match="expanding IN"):
            await write_on_thread(
                engine, lambda c: fetch_rows(c, select(table).where(table.c.id.in_([1, 2])), {})
            )
    finally:
        await engine.dispose()
