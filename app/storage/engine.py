"""SQLite engines: the PRAGMAs every connection needs, and transactions we control.

pysqlite's legacy transaction handling defers BEGIN and cannot take a write lock up
front; we switch it off and emit BEGIN ourselves, so a write transaction starts with
BEGIN IMMEDIATE (waits on busy_timeout instead of failing on a lock upgrade) and
migrations are transactional.
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite
from sqlalchemy import event
from sqlalchemy.dialects import registry
from sqlalchemy.dialects.sqlite.aiosqlite import SQLiteDialect_aiosqlite
from sqlalchemy.engine import Connection, ExceptionContext
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import AsyncAdaptedQueuePool

from app.storage.unavailable import TenantUnavailable, classify

_BEGIN_OPTION = "jet_begin"
_NO_BEGIN = ""  # read_statement: no BEGIN, SQLite runs the one statement in autocommit


class JetAiosqliteDialect(SQLiteDialect_aiosqlite):
    """aiosqlite, minus the ROLLBACKs that have nothing to roll back.

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


def sqlite_engine(
    path: Path, *, synchronous: str, busy_timeout_ms: int, pool_size: int
) -> AsyncEngine:
    # Memory is private: the file (and so its -wal and -shm, which SQLite creates with the
    # same mode) is readable by this user alone.
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
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
        # handle_error hook below like any other DBAPI error.
        conn = await aiosqlite.connect(path, isolation_level=None)
        try:
            await conn.executescript(pragmas)
        except BaseException:
            await conn.close()
            raise
        return conn

    engine = create_async_engine(
        f"sqlite+jet_aiosqlite:///{path}",
        async_creator=connect,
        # Bound values (event bodies, key hashes, gateway keys) never reach exception
        # messages, so no traceback or log line can carry them.
        hide_parameters=True,
        poolclass=AsyncAdaptedQueuePool,
        pool_size=pool_size,
        max_overflow=0,
        pool_timeout=30,
    )

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


@asynccontextmanager
async def write_transaction(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """One write transaction: BEGIN IMMEDIATE, commit on success, roll back on error."""
    async with engine.connect() as conn:
        conn = await conn.execution_options(**{_BEGIN_OPTION: "BEGIN IMMEDIATE"})
        async with conn.begin():
            yield conn


@asynccontextmanager
async def read_transaction(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """One read transaction: a consistent snapshot across the statements inside it."""
    async with engine.connect() as conn, conn.begin():
        yield conn


@asynccontextmanager
async def read_statement(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A connection for a read of ONE statement, without BEGIN/COMMIT: SQLite runs a lone
    statement in a transaction of its own (autocommit), so it already reads one consistent
    snapshot, and the two extra round trips to aiosqlite's thread are saved. Reads of more
    than one statement that must agree use `read_transaction`.

    On PostgreSQL (no BEGIN listener there) this is a plain connection: SQLAlchemy's
    autobegun transaction, rolled back on close, as before."""
    async with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            conn = await conn.execution_options(**{_BEGIN_OPTION: _NO_BEGIN})
        yield conn
