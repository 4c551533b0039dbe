"""SQLite engines: the PRAGMAs every connection needs, the BEGIN we emit ourselves, and
errors classified (app/storage/unavailable.py). PostgreSQL's engine is app/storage/postgres.py.

pysqlite's legacy transaction handling defers BEGIN and cannot take a write lock up
front; we switch it off and emit BEGIN ourselves (the `begin` event below), so a write
transaction starts with BEGIN IMMEDIATE (waits on busy_timeout instead of failing on a
lock upgrade) and migrations are transactional. `fast_path` picks the dialect: the fenced
short cuts of app/storage/sqlite/fastpath, or stock SQLAlchemy + aiosqlite.
"""

from collections.abc import Awaitable, Callable
from pathlib import Path

import aiosqlite
from sqlalchemy import event
from sqlalchemy.engine import Connection, ExceptionContext
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import AsyncAdaptedQueuePool

from app.storage.sqlite.fastpath import SCHEME, SharedDialectEngines
from app.storage.unavailable import TenantUnavailable, classify

# An execution option: the statement that opens a transaction ("BEGIN" by default).
BEGIN_OPTION = "sqlite_begin"
NO_BEGIN = ""  # read_statement: no BEGIN, SQLite runs the one statement in autocommit
_STOCK_SCHEME = "sqlite+aiosqlite"


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
        # handle_error hook below like any other DBAPI error. check_same_thread=False: the
        # fast path's `read_rows` runs statements on the event loop's thread too, one
        # statement at a time per connection (SQLAlchemy's checkout, the adapter's mutex),
        # and the sqlite3 module serialises calls on a connection anyway.
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
        begin = conn.get_execution_options().get(BEGIN_OPTION, "BEGIN")
        if begin:
            conn.exec_driver_sql(begin)

    return engine


def _stock_engine(
    path: Path, connect: Callable[[], Awaitable[aiosqlite.Connection]], *, pool_size: int
) -> AsyncEngine:
    return create_async_engine(
        f"{_STOCK_SCHEME}:///{path}",
        async_creator=connect,
        # Bound values (event bodies, key hashes, gateway keys) never reach exception
        # messages, so no traceback or log line can carry them.
        hide_parameters=True,
        poolclass=AsyncAdaptedQueuePool,
        pool_size=pool_size,
        max_overflow=0,
        pool_timeout=30,
    )


def sqlite_engine(
    path: Path, *, synchronous: str, busy_timeout_ms: int, pool_size: int, fast_path: bool = True
) -> AsyncEngine:
    """One SQLite database's engine (the control database; tests)."""
    _prepare_file(path)
    connect = _async_creator(path, synchronous=synchronous, busy_timeout_ms=busy_timeout_ms)
    engine = create_async_engine(
        f"{SCHEME if fast_path else _STOCK_SCHEME}:///{path}",
        async_creator=connect,
        hide_parameters=True,  # as in _stock_engine
        poolclass=AsyncAdaptedQueuePool,
        pool_size=pool_size,
        max_overflow=0,
        pool_timeout=30,
    )
    return _listen(engine)


class SqliteEngines:
    """Engines for many SQLite files (one per tenant): with `fast_path`, sharing one
    dialect and compiled cache (fastpath.shared_dialect); else one stock engine each."""

    def __init__(
        self, *, synchronous: str, busy_timeout_ms: int, pool_size: int, fast_path: bool = True
    ) -> None:
        self._synchronous = synchronous
        self._busy_timeout_ms = busy_timeout_ms
        self._pool_size = pool_size
        self._shared = SharedDialectEngines(pool_size=pool_size) if fast_path else None

    async def engine(self, path: Path) -> AsyncEngine:
        _prepare_file(path)
        connect = _async_creator(
            path, synchronous=self._synchronous, busy_timeout_ms=self._busy_timeout_ms
        )
        if self._shared is None:
            return _listen(_stock_engine(path, connect, pool_size=self._pool_size))
        return _listen(await self._shared.engine(path, connect))
