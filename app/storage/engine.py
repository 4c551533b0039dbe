"""SQLite engines: the PRAGMAs every connection needs, and transactions we control.

pysqlite's legacy transaction handling defers BEGIN and cannot take a write lock up
front; we switch it off and emit BEGIN ourselves, so a write transaction starts with
BEGIN IMMEDIATE (waits on busy_timeout instead of failing on a lock upgrade) and
migrations are transactional.
"""

import asyncio
import collections
import sqlite3
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
from sqlalchemy import Executable, Row, Select, event
from sqlalchemy.connectors.asyncio import AsyncAdapt_dbapi_connection
from sqlalchemy.dialects import registry
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
    SQLiteDialect_aiosqlite,
)
from sqlalchemy.dialects.sqlite.pysqlite import SQLiteDialect_pysqlite
from sqlalchemy.engine import Connection, Engine, ExceptionContext, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import AsyncAdaptedQueuePool, NullPool
from sqlalchemy.types import TypeEngine
from sqlalchemy.util import EMPTY_DICT, LRUCache
from sqlalchemy.util.concurrency import await_

from app.storage.unavailable import TenantUnavailable, classify

_BEGIN_OPTION = "jet_begin"
_NO_BEGIN = ""  # read_statement: no BEGIN, SQLite runs the one statement in autocommit
_INLINE_OPTION = "jet_inline"  # read_rows: run on the event loop's thread

# An inline read's budget: SQLite calls the progress handler every _INLINE_STEP
# virtual-machine instructions, and a statement still running after _INLINE_BUDGET_S
# seconds is interrupted there (and run again on aiosqlite's thread). An events page of 50
# (an index range) takes ~900 instructions, so it never even sees the handler.
_INLINE_STEP = 1_000
_INLINE_BUDGET_S = 0.002


_T = TypeVar("_T")

# What `_run_statement` returns: description, rows (None when the statement has no result
# columns), rowcount, lastrowid.
_Outcome = tuple[Any, list[Any] | None, int, int | None]


def _run_statement(
    conn: sqlite3.Connection, operation: str, parameters: Any, many: bool
) -> _Outcome:
    """One statement, start to finish, on aiosqlite's thread: what SQLAlchemy's adapter
    does in four hops (cursor, execute, fetchall, close), as one."""
    cursor = conn.cursor()
    try:
        if many:
            cursor.executemany(operation, parameters)
        elif parameters is None:
            cursor.execute(operation)
        else:
            cursor.execute(operation, parameters)
        description = cursor.description
        # As AsyncAdapt_dbapi_cursor: the rows of a statement with columns, fetched at once
        # (not after executemany). rowcount and lastrowid are read after the fetch, as
        # SQLAlchemy reads them (an UPDATE ... RETURNING counts its rows as they are
        # stepped).
        rows = cursor.fetchall() if description and not many else None
        return description, rows, cursor.rowcount, cursor.lastrowid
    finally:
        cursor.close()


def _run_inline(conn: sqlite3.Connection, operation: str, parameters: Any) -> _Outcome | None:
    """`_run_statement` on the calling thread, or None (nothing done) when the statement
    ran past its time budget and was interrupted by SQLite."""
    return _within_budget(conn, _run_statement, conn, operation, parameters, False)


def _within_budget(conn: sqlite3.Connection, fn: Callable[..., _T], *args: Any) -> _T | None:
    """fn(*args), a statement on `conn`, or None when SQLite interrupted it because it ran
    past `_INLINE_BUDGET_S` (an autocommit read leaves no trace of it)."""
    deadline = time.perf_counter() + _INLINE_BUDGET_S
    over = False

    def tick() -> bool:
        nonlocal over
        over = time.perf_counter() > deadline
        return over  # True: SQLite interrupts the statement

    conn.set_progress_handler(tick, _INLINE_STEP)
    try:
        return fn(*args)
    except sqlite3.OperationalError:
        if over:
            return None
        raise
    finally:
        conn.set_progress_handler(None, 0)


class InlineReader:
    """A plain sqlite3 connection to one database, of the event loop's thread, for the
    hottest read (a page of the event log): the statement's SQL and value conversions,
    taken from SQLAlchemy's compiler and column types once per statement, and then only
    sqlite3's execute and fetchall. SQLAlchemy's connection, pool, greenlet and result
    layers around a read cost ~2x the read itself for a page of 50 (`read_rows` ~480 µs
    against ~200 µs here, rows made into events included); this is the part of SQLAlchemy
    the hot path does by hand, for that reason alone.

    Read-only (`query_only`), and it never waits: busy_timeout 0, and the same 2 ms budget
    as `read_rows`. `rows` returns None when this connection will not answer (a statement
    it does not take, over the budget, busy, any SQLite error); the caller then reads
    through the engine, on aiosqlite's thread, where errors are classified
    (app/storage/unavailable.py) as for any other statement. Opened at the first read;
    `aclose` (TenantDb closes its extras before the engine) closes it."""

    def __init__(self, path: Path) -> None:
        self._uri = path.resolve().as_uri() + "?mode=rw"  # never creates the file
        self._conn: sqlite3.Connection | None = None

    def rows(self, statement: Select[Any], values: Mapping[str, Any]) -> list[Any] | None:
        """The rows of `statement` (a statement built once and kept, e.g. per filter
        shape: compiled forms are cached by the statement object) with `values` bound,
        converted as SQLAlchemy's result would convert them; or None (see above)."""
        compiled = _compiled(statement)
        if not compiled:
            return None
        sql, binds, results = compiled
        try:
            conn = self._conn
            if conn is None:
                conn = sqlite3.connect(self._uri, uri=True, isolation_level=None)
                conn.executescript("PRAGMA busy_timeout = 0; PRAGMA query_only = ON;")
                self._conn = conn
            rows = _within_budget(conn, _fetch, conn, sql, _parameters(binds, values))
        except sqlite3.Error:
            return None
        return rows if rows is None else _converted(rows, results)

    async def aclose(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


# statement -> (SQL, [(bind name, its converter, its fixed value or _GIVEN)], [(column
# index, its converter)]), or () for a statement InlineReader does not take (expanding
# "IN" lists).
_Compiled = tuple[str, list[tuple[str, Any, Any]], list[tuple[int, Any]]] | tuple[()]
_GIVEN = object()
_COMPILED: dict[Select[Any], _Compiled] = {}
_PYSQLITE = SQLiteDialect_pysqlite()  # "?" placeholders, and SQLite's type processing


def _compiled(statement: Select[Any]) -> _Compiled:
    """`_compile(statement)`, once per statement object (InlineReader and fetch_rows)."""
    compiled = _COMPILED.get(statement)
    if compiled is None:
        compiled = _COMPILED[statement] = _compile(statement)
    return compiled


def _compile(statement: Select[Any]) -> _Compiled:
    compiled = statement.compile(dialect=_PYSQLITE)
    names = compiled.positiontup or []
    if any(compiled.binds[name].expanding for name in names):
        return ()
    binds = []
    for name in names:
        bind = compiled.binds[name]
        # Values given per call (bindparam without a value), or fixed in the statement.
        fixed = _GIVEN if bind.value is None and bind.callable is None else bind.effective_value
        binds.append((name, _processor(bind.type).bind_processor(_PYSQLITE), fixed))
    results = [
        (i, convert)
        for i, column in enumerate(statement.selected_columns)
        if (convert := _processor(column.type).result_processor(_PYSQLITE, None)) is not None
    ]
    return compiled.string, binds, results


def _processor(type_: TypeEngine[Any]) -> TypeEngine[Any]:
    # The type as the dialect runs it (SQLite's DATETIME, with its string format, inside a
    # TypeDecorator): what SQLAlchemy's own execution takes the processors from.
    return type_.dialect_impl(_PYSQLITE)


def _fetch(conn: sqlite3.Connection, sql: str, parameters: Sequence[Any]) -> list[Any]:
    return conn.execute(sql, parameters).fetchall()


def _parameters(binds: list[tuple[str, Any, Any]], values: Mapping[str, Any]) -> list[Any]:
    """The statement's positional parameters: `values` by name (or the statement's fixed
    values), each through its type's bind processor."""
    return [
        v if convert is None else convert(v)
        for name, convert, fixed in binds
        for v in (values[name] if fixed is _GIVEN else fixed,)
    ]


def _converted(rows: list[Any], results: list[tuple[int, Any]]) -> list[Any]:
    """The rows with each column through its type's result processor."""
    if not results:
        return rows
    out = []
    for row in rows:
        converted = list(row)
        for i, convert in results:
            converted[i] = convert(converted[i])
        out.append(converted)
    return out


def fetch_rows(
    conn: sqlite3.Connection, statement: Select[Any], values: Mapping[str, Any]
) -> list[Any]:
    """The rows of `statement` on a plain sqlite3 connection (inside `write_on_thread`'s
    function), bound and converted as SQLAlchemy would (see InlineReader). The statement
    is compiled once and kept, so it must be built once (a module constant), and it may
    not use expanding IN lists (json_each(:param) does that job in one fixed statement)."""
    compiled = _compiled(statement)
    if not compiled:
        raise ValueError("fetch_rows takes no expanding IN list")
    sql, binds, results = compiled
    return _converted(_fetch(conn, sql, _parameters(binds, values)), results)


class _OneHopCursor(AsyncAdapt_aiosqlite_cursor):
    """SQLAlchemy's aiosqlite cursor adapter, one thread hop per statement instead of four.

    SQLAlchemy's AsyncAdapt_dbapi_cursor awaits aiosqlite for each of cursor(), execute(),
    fetchall() and close(): every await is a hand-off to the connection's thread and back
    (a GIL switch, tens of µs under load). Here execute/executemany run `_run_statement` on
    that thread in one call and keep what SQLAlchemy reads afterwards (description,
    rowcount, lastrowid, the rows); the sqlite3 cursor is closed before the call returns,
    so there is nothing left to close. Buffered (client-side) results only, as before: the
    server-side cursor class of the adapter is left as it is (not used by this app).

    aiosqlite has no public "run this function on the connection's thread": its
    `execute_fetchall` is one hop but loses the description, rowcount and lastrowid that
    SQLAlchemy needs. So this uses `aiosqlite.Connection._execute(fn, *args)` (private,
    aiosqlite 0.22: queue `fn(*args)` for the thread, await its result or exception), the
    very call aiosqlite's own Cursor methods make, and SQLAlchemy's adapter reaches into
    aiosqlite's privates likewise (`_tx`, `_conn`). tests/storage/test_engine.py fails
    loudly if that signature or behaviour changes.

    Errors and cancellation are unchanged: sqlite3's exceptions come back through the same
    future, are re-raised through the adapter's `_handle_exception` (ValueError of a closed
    connection becomes OperationalError, a disconnect), and reach the engine's
    `handle_error` hook. A cancelled await leaves the statement running on the thread, as
    before; SQLAlchemy invalidates the connection (see JetAiosqliteDialect), and its close
    is queued behind the statement.
    """

    __slots__ = ("_description", "_rowcount", "_lastrowid", "_arraysize")

    def __init__(self, adapt_connection: AsyncAdapt_dbapi_connection) -> None:
        # No aiosqlite cursor (the parent's __init__ would await one): `_run_statement`
        # makes a sqlite3 cursor per statement on the thread.
        self._adapt_connection = adapt_connection
        self._connection = adapt_connection._connection
        self._cursor = None  # type: ignore[assignment]
        self._soft_closed_memoized = EMPTY_DICT
        self._rows = collections.deque()
        self._description: Any = None
        self._rowcount = -1
        self._lastrowid: int | None = None
        self._arraysize = 1  # sqlite3.Cursor's default

    @property
    def description(self) -> Any:
        return self._description

    @property
    def rowcount(self) -> int:
        return self._rowcount

    @property
    def lastrowid(self) -> int:
        return self._lastrowid  # type: ignore[return-value]

    @property
    def arraysize(self) -> int:
        return self._arraysize

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._arraysize = value

    async def _async_soft_close(self) -> None:
        """Nothing to close: the sqlite3 cursor was closed on the thread, and the
        description is kept."""

    def close(self) -> None:
        self._rows.clear()

    def execute(self, operation: Any, parameters: Any = None) -> Any:
        try:
            return await_(self._run(operation, parameters, False))
        except Exception as error:
            self._adapt_connection._handle_exception(error)

    def executemany(self, operation: Any, seq_of_parameters: Sequence[Any]) -> Any:
        try:
            return await_(self._run(operation, seq_of_parameters, True))
        except Exception as error:
            self._adapt_connection._handle_exception(error)

    def execute_inline(self, operation: Any, parameters: Any = None) -> Any:
        """execute() on the event loop's thread (see `read_rows`). A statement over its
        budget goes to the connection's thread, as does one on a connection whose thread
        is busy (not expected: a connection is checked out by one task at a time, and one
        left with a statement running after a cancellation is invalidated, never reused)."""
        driver: aiosqlite.Connection = self._connection  # type: ignore[assignment]
        if self._adapt_connection._execute_mutex.locked():
            return self.execute(operation, parameters)
        try:
            # `driver._conn` raises ValueError("no active connection") once the connection
            # is closed; _handle_exception makes it the same error as on the thread.
            outcome = _run_inline(driver._conn, operation, parameters)
        except Exception as error:
            self._adapt_connection._handle_exception(error)
        if outcome is None:
            return self.execute(operation, parameters)
        self._keep(outcome)
        return None

    async def _run(self, operation: Any, parameters: Any, many: bool) -> None:
        driver: aiosqlite.Connection = self._connection  # type: ignore[assignment]
        async with self._adapt_connection._execute_mutex:
            # `driver._conn` raises ValueError("no active connection") once the connection
            # is closed, as aiosqlite's cursor() did when it was evaluated here.
            outcome = await driver._execute(  # type: ignore[no-untyped-call]  # aiosqlite leaves it unannotated
                _run_statement, driver._conn, operation, parameters, many
            )
        self._keep(outcome)

    def _keep(self, outcome: _Outcome) -> None:
        description, rows, rowcount, lastrowid = outcome
        self._description = description
        self._rowcount = rowcount
        self._lastrowid = lastrowid
        self._rows = collections.deque(rows) if rows is not None else collections.deque()


class _OneHopConnection(AsyncAdapt_aiosqlite_connection):
    __slots__ = ()
    _cursor_cls = _OneHopCursor


class _OneHopDBAPI(AsyncAdapt_aiosqlite_dbapi):
    def connect(self, *arg: Any, **kw: Any) -> _OneHopConnection:
        # The parent's connect (the async_creator call, the thread's daemon flag) wrapped
        # in its own adapter class; the same aiosqlite connection, re-wrapped in ours.
        adapted = super().connect(*arg, **kw)
        return _OneHopConnection(self, adapted._connection)


class JetAiosqliteDialect(SQLiteDialect_aiosqlite):
    """aiosqlite, minus the ROLLBACKs that have nothing to roll back, and with one thread
    hop per statement (`_OneHopCursor`, through `import_dbapi`).

    Every aiosqlite call is a hop to the connection's thread and back. SQLAlchemy rolls
    back when a connection returns to the pool and when a Connection closes with the
    autobegun transaction of a `read_statement`, although no SQLite transaction is open
    then (we BEGIN ourselves; between transactions the connection is in autocommit).
    `skip_autocommit_rollback=True` (SQLAlchemy's feature for this) cannot be used: it
    trusts `isolation_level is None`, which is always true here, so it would skip the
    ROLLBACK of a failed write transaction too. We ask SQLite instead: `in_transaction`
    (sqlite3_get_autocommit, no thread hop) is True whenever a transaction is open, so a
    rollback is only skipped when it would be a no-op. It is read while we hold the
    connection and nothing runs on its thread: a statement (BEGIN and COMMIT included)
    interrupted by a cancellation or timeout, which could still be running there, makes
    SQLAlchemy invalidate the connection (an "exit exception" counts as a disconnect), so
    it is closed, never rolled back and reused.
    """

    supports_statement_cache = True

    @classmethod
    def import_dbapi(cls) -> AsyncAdapt_aiosqlite_dbapi:
        # The adapter module with our one-hop cursor (_OneHopCursor); otherwise SQLAlchemy's.
        return _OneHopDBAPI(aiosqlite, sqlite3)

    def do_execute(self, cursor: Any, statement: Any, parameters: Any, context: Any = None) -> None:
        if context is not None and context.execution_options.get(_INLINE_OPTION):
            cursor.execute_inline(statement, parameters)
        else:
            cursor.execute(statement, parameters)

    def do_execute_no_params(self, cursor: Any, statement: Any, context: Any = None) -> None:
        if context is not None and context.execution_options.get(_INLINE_OPTION):
            cursor.execute_inline(statement)
        else:
            cursor.execute(statement)

    def do_rollback(self, dbapi_connection: Any) -> None:
        driver = dbapi_connection.driver_connection
        try:
            idle = driver is not None and not driver.in_transaction
        except ValueError:  # aiosqlite: the connection is closed; let the default decide
            idle = False
        if not idle:
            super().do_rollback(dbapi_connection)  # type: ignore[no-untyped-call]


# The supported way to use a dialect subclass: a URL scheme of its own.
registry.register("sqlite.jet_aiosqlite", __name__, "JetAiosqliteDialect")


def _prepare_file(path: Path) -> None:
    # Memory is private: the file (and so its -wal and -shm, which SQLite creates with the
    # same mode) is readable by this user alone.
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)


def _async_creator(
    path: Path, *, synchronous: str, busy_timeout_ms: int
) -> Callable[[], Awaitable[aiosqlite.Connection]]:
    # Every connection's settings, run by SQLite in one call (one hop to aiosqlite's
    # thread, where a `connect` event's cursor would take one per PRAGMA and more).
    pragmas = (
        f"PRAGMA busy_timeout = {int(busy_timeout_ms)};"
        "PRAGMA journal_mode = WAL;"
        f"PRAGMA synchronous = {synchronous};"
        "PRAGMA foreign_keys = ON;"
    )

    async def connect() -> aiosqlite.Connection:
        # async_creator (SQLAlchemy's hook for a driver connection made by our code):
        # isolation_level=None at connect, as we emit BEGIN ourselves (see the module
        # docstring), instead of a setter call (another hop) after it. Errors reach the
        # handle_error hook below like any other DBAPI error. check_same_thread=False:
        # `read_rows` runs statements on the event loop's thread too, one statement at a
        # time per connection (SQLAlchemy's checkout, the adapter's mutex), and the sqlite3
        # module serialises calls on a connection anyway (sqlite3.threadsafety == 3).
        conn = await aiosqlite.connect(path, isolation_level=None, check_same_thread=False)
        try:
            await conn.executescript(pragmas)
        except BaseException:
            await conn.close()
            raise
        return conn

    return connect


def _listen(engine: AsyncEngine) -> AsyncEngine:
    @event.listens_for(engine.sync_engine, "handle_error")
    def _on_error(ctx: ExceptionContext) -> TenantUnavailable | None:
        # A lock held past busy_timeout, a corrupt file or a full disk: a clear error the
        # edge can answer (app/storage/unavailable.py), not an anonymous OperationalError.
        return classify(ctx.original_exception)

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        begin = conn.get_execution_options().get(_BEGIN_OPTION, "BEGIN")
        if begin:
            conn.exec_driver_sql(begin)

    return engine


def sqlite_engine(
    path: Path, *, synchronous: str, busy_timeout_ms: int, pool_size: int
) -> AsyncEngine:
    """One SQLite database's engine (the control database; tests)."""
    _prepare_file(path)
    engine = create_async_engine(
        f"sqlite+jet_aiosqlite:///{path}",
        async_creator=_async_creator(
            path, synchronous=synchronous, busy_timeout_ms=busy_timeout_ms
        ),
        # Bound values (event bodies, key hashes, gateway keys) never reach exception
        # messages, so no traceback or log line can carry them.
        hide_parameters=True,
        poolclass=AsyncAdaptedQueuePool,
        pool_size=pool_size,
        max_overflow=0,
        pool_timeout=30,
    )
    return _listen(engine)


class SqliteEngines:
    """Engines for many SQLite files (one per tenant) that share one dialect, and with it
    one cache of compiled statements.

    `create_async_engine` makes a new dialect for every engine, and SQLAlchemy keys its
    compiled-statement cache by the dialect instance, so every newly opened tenant used to
    compile each statement again (~0.5 ms for an event page) and ran the dialect's
    first-connect `initialize` (a PRAGMA round trip to aiosqlite's thread). Here the
    engine is assembled from its public parts instead (the pool, `Engine`, `AsyncEngine`,
    what `create_async_engine` does after making the dialect) around one dialect,
    initialised once on a throwaway in-memory database, with the compiled cache passed
    through the public `compiled_cache` execution option. The dialect's own per-connection
    setup (`on_connect`: SQLite's regexp and floor functions) is still run on every new
    connection, as `create_engine` would.
    """

    def __init__(
        self, *, synchronous: str, busy_timeout_ms: int, pool_size: int, cache_size: int = 1000
    ) -> None:
        self._synchronous = synchronous
        self._busy_timeout_ms = busy_timeout_ms
        self._pool_size = pool_size
        # Bounded like an engine's own (query_cache_size): the statements are the app's,
        # the same for every tenant.
        self._cache: LRUCache[Any, Any] = LRUCache(cache_size)
        self._dialect: JetAiosqliteDialect | None = None
        self._lock = asyncio.Lock()

    async def _shared_dialect(self) -> JetAiosqliteDialect:
        async with self._lock:
            if self._dialect is None:
                probe = create_async_engine("sqlite+jet_aiosqlite://", poolclass=NullPool)
                try:
                    async with probe.connect():  # the first connect initialises the dialect
                        pass
                finally:
                    await probe.dispose()
                self._dialect = probe.sync_engine.dialect  # type: ignore[assignment]
            assert self._dialect is not None
            return self._dialect

    async def engine(self, path: Path) -> AsyncEngine:
        dialect = await self._shared_dialect()
        _prepare_file(path)
        connect = _async_creator(
            path, synchronous=self._synchronous, busy_timeout_ms=self._busy_timeout_ms
        )
        dbapi = dialect.loaded_dbapi
        pool = AsyncAdaptedQueuePool(
            # What create_async_engine's async_creator wraps: the adapter's connect.
            lambda: dbapi.connect(async_creator_fn=connect),
            pool_size=self._pool_size,
            max_overflow=0,
            timeout=30,
            dialect=dialect,
        )
        on_connect = dialect.on_connect()
        if on_connect is not None:

            def setup(dbapi_connection: Any, _record: Any) -> None:
                on_connect(dbapi_connection)

            event.listen(pool, "connect", setup)
        sync_engine = Engine(
            pool,
            dialect,
            make_url(f"sqlite+jet_aiosqlite:///{path}"),
            # As in sqlite_engine: no bound value in an exception message.
            hide_parameters=True,
            query_cache_size=0,  # the shared cache below instead
            execution_options={"compiled_cache": self._cache},
        )
        return _listen(AsyncEngine(sync_engine))


@asynccontextmanager
async def write_transaction(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """One write transaction: BEGIN IMMEDIATE, commit on success, roll back on error."""
    async with engine.connect() as conn:
        conn = await conn.execution_options(**{_BEGIN_OPTION: "BEGIN IMMEDIATE"})
        async with conn.begin():
            yield conn


async def write_on_thread(engine: AsyncEngine, fn: Callable[[sqlite3.Connection], _T]) -> _T:
    """One SQLite write transaction as ONE call on a pooled connection's aiosqlite thread:
    BEGIN IMMEDIATE, `fn(sqlite3 connection)`, COMMIT; rolled back if either raises.

    For the group commit of appends, the hottest write: through `write_transaction` a
    group took six hand-offs to the thread and back (BEGIN, the idempotency-key read,
    max(seq), the INSERT, the index statement, COMMIT), each through SQLAlchemy's
    connection, greenlet and result layers, ~11% of the event loop's time in the append
    benchmark (py-spy of `http_bench --only append`, 2026-11-30). `fn` runs on the thread
    with plain sqlite3 calls (see `fetch_rows`); it must not touch the event loop.

    The connection is checked out of the engine's pool as for any statement (so the pool
    bounds it and hands it to one task at a time), and the adapter's mutex is held as
    `_OneHopCursor` holds it. SQLite errors are classified as the engine's `handle_error`
    hook classifies them (a lock, corruption or full disk is TenantUnavailable); others
    are wrapped as SQLAlchemy wraps them (IntegrityError...). A cancelled wait leaves
    `fn` running on the thread: the connection is then invalidated (closed after it,
    never reused), as SQLAlchemy does for a statement interrupted that way."""
    return await _on_thread(engine, _write_transaction, fn)


async def read_on_thread(engine: AsyncEngine, fn: Callable[[sqlite3.Connection], _T]) -> _T:
    """`fn(sqlite3 connection)`, ONE read statement (see `fetch_rows`), as one call on a
    pooled connection's aiosqlite thread, without BEGIN/COMMIT: SQLite runs a lone
    statement in a transaction of its own, one consistent snapshot (as `read_statement`).

    For the entry search, whose rare-word pages take ~0.6 ms of SQLite: SQLAlchemy's
    execution and result layers around it cost about as much again on the event loop
    (bench/http_bench.py --only search, 2026-11-30). Errors and cancellation as in
    `write_on_thread`."""
    return await _on_thread(engine, _call, fn)


def _call(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], _T]) -> _T:
    return fn(conn)


async def _on_thread(
    engine: AsyncEngine,
    run: Callable[[sqlite3.Connection, Callable[[sqlite3.Connection], _T]], _T],
    fn: Callable[[sqlite3.Connection], _T],
) -> _T:
    async with engine.connect() as conn:
        raw = await conn.get_raw_connection()
        adapted = raw.dbapi_connection
        driver: aiosqlite.Connection = adapted._connection  # type: ignore[union-attr]
        async with adapted._execute_mutex:  # type: ignore[union-attr]
            try:
                return await driver._execute(  # type: ignore[no-untyped-call,no-any-return]  # aiosqlite leaves it unannotated
                    run, driver._conn, fn
                )
            except sqlite3.Error as exc:
                unavailable = classify(exc)
                if unavailable is not None:
                    raise unavailable from exc
                # As SQLAlchemy wraps a driver's error (IntegrityError for a constraint...),
                # so callers see the same exceptions as from a statement run through it.
                raise DBAPIError.instance(
                    None, None, exc, sqlite3.Error, hide_parameters=True, dialect=engine.dialect
                ) from exc
            except (asyncio.CancelledError, KeyboardInterrupt, SystemExit):
                await asyncio.shield(conn.invalidate())
                raise


def _write_transaction(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], _T]) -> _T:
    # No ROLLBACK here: a transaction left open by an error is rolled back when the
    # connection goes back to the pool (JetAiosqliteDialect.do_rollback sees it open).
    conn.execute("BEGIN IMMEDIATE")
    result = fn(conn)
    conn.execute("COMMIT")
    return result


@asynccontextmanager
async def read_transaction(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """One read transaction: a consistent snapshot across the statements inside it.

    SQLite gives that to any transaction. PostgreSQL's default (READ COMMITTED) takes a new
    snapshot per statement, so an entry deleted between the context loader's ranking and
    its read of the texts was a KeyError there: its transactions here are REPEATABLE READ
    (a read-only one never fails to serialise) and READ ONLY, set by their first
    statement."""
    async with engine.connect() as conn, conn.begin():
        if conn.dialect.name == "postgresql":
            await conn.exec_driver_sql(_PG_SNAPSHOT)
        yield conn


_PG_SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"


@asynccontextmanager
async def read_statement(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A connection for a read of ONE statement, without BEGIN/COMMIT: SQLite runs a lone
    statement in a transaction of its own (autocommit), so it already reads one consistent
    snapshot, and the two extra round trips to aiosqlite's thread are saved. Reads of more
    than one statement that must agree use `read_transaction`; reads bounded by an index
    use `read_rows`.

    On PostgreSQL (no BEGIN listener there) this is a plain connection: SQLAlchemy's
    autobegun transaction, rolled back on close, as before."""
    async with _statement_engine(engine, False).connect() as conn:
        yield conn


async def read_rows(
    engine: AsyncEngine, statement: Executable, parameters: Mapping[str, Any] | None = None
) -> Sequence[Row[Any]]:
    """The rows of ONE statement bounded by an index (a row by key, a page of an index
    range), read as `read_statement` reads, but on SQLite on the event loop's thread itself
    rather than on aiosqlite's.

    Such a read costs less than the hand-off (a queue, a thread wake-up, a future resolved
    through the loop's self-pipe), and the rows are made into Python objects under the GIL
    either way: with 16 requests in flight, pages read on four connection threads took
    ~2.3 ms of CPU each over HTTP, against ~1.5 ms inline (bench/http_bench.py --only
    events, 2026-11-30). The loop is not held long: a statement still running after
    `_INLINE_BUDGET_S` (2 ms) is interrupted by SQLite's progress handler, which leaves an
    autocommit read no trace, and is run again on aiosqlite's thread. One wait for the
    disk (a page not in the OS cache) cannot be interrupted: it holds the loop as long.
    Full-text searches stay on the thread (`read_statement`): FTS5 does its work inside a
    few virtual-table instructions, where the progress handler is not called, and on the
    thread SQLite overlaps the loop's work on the other CPU. A read in WAL mode takes no
    lock that a writer holds, so it does not wait on busy_timeout.

    `run_sync`, not `execute`: AsyncConnection.execute insists that the statement awaited
    something (SQLAlchemy's check for a driver that is not async), and an inline read
    does not. On PostgreSQL this is `read_statement` and `execute`."""
    async with _statement_engine(engine, True).connect() as conn:
        return await conn.run_sync(_all_rows, statement, parameters)


def _all_rows(
    conn: Connection, statement: Executable, parameters: Mapping[str, Any] | None
) -> Sequence[Row[Any]]:
    return conn.execute(statement, parameters).all()


# (SQLite engine, inline) -> the same engine with the no-BEGIN option, and with the inline
# one (SQLAlchemy's OptionEngine: the same pool, events and compiled cache), made once per
# engine: setting the options on each connection instead costs a greenlet round trip per
# read.
_statement_engines: weakref.WeakKeyDictionary[AsyncEngine, dict[bool, AsyncEngine]] = (
    weakref.WeakKeyDictionary()
)


def _statement_engine(engine: AsyncEngine, inline: bool) -> AsyncEngine:
    if engine.dialect.name != "sqlite":
        return engine
    derived = _statement_engines.get(engine)
    if derived is None:
        derived = _statement_engines[engine] = {
            False: engine.execution_options(**{_BEGIN_OPTION: _NO_BEGIN}),
            True: engine.execution_options(**{_BEGIN_OPTION: _NO_BEGIN, _INLINE_OPTION: True}),
        }
    return derived[inline]
