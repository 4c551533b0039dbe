"""The SQLAlchemy dialect of the fast path: aiosqlite with a cursor adapter re-implemented
with one thread hop per statement, inline execution on request (INLINE_OPTION), and no
ROLLBACK when SQLite has no transaction open. Subclasses SQLiteDialect_aiosqlite and
overrides `import_dbapi`, `do_execute`, `do_execute_no_params` and `do_rollback`; relies on
aiosqlite's private `Connection._execute`, `_conn` and SQLAlchemy's adapter internals
(`_adapt_connection`, `_execute_mutex`, `_handle_exception`)."""

import collections
import sqlite3
from collections.abc import Sequence
from typing import Any

import aiosqlite
from sqlalchemy.connectors.asyncio import AsyncAdapt_dbapi_connection
from sqlalchemy.dialects import registry
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
    SQLiteDialect_aiosqlite,
)
from sqlalchemy.util import EMPTY_DICT
from sqlalchemy.util.concurrency import await_

from app.storage.sqlite.fastpath.compiled import Outcome, run_inline, run_statement


class OneHopCursor(AsyncAdapt_aiosqlite_cursor):
    """SQLAlchemy's aiosqlite cursor adapter, one thread hop per statement instead of four.

    SQLAlchemy's AsyncAdapt_dbapi_cursor awaits aiosqlite for each of cursor(), execute(),
    fetchall() and close(): every await is a hand-off to the connection's thread and back
    (a GIL switch, tens of µs under load). Here execute/executemany run `run_statement` on
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
    before; SQLAlchemy invalidates the connection (see OneHopDialect), and its close
    is queued behind the statement.
    """

    __slots__ = ("_description", "_rowcount", "_lastrowid", "_arraysize")

    def __init__(self, adapt_connection: AsyncAdapt_dbapi_connection) -> None:
        # No aiosqlite cursor (the parent's __init__ would await one): `run_statement`
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
            outcome = run_inline(driver._conn, operation, parameters)
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
                run_statement, driver._conn, operation, parameters, many
            )
        self._keep(outcome)

    def _keep(self, outcome: Outcome) -> None:
        description, rows, rowcount, lastrowid = outcome
        self._description = description
        self._rowcount = rowcount
        self._lastrowid = lastrowid
        self._rows = collections.deque(rows) if rows is not None else collections.deque()


class OneHopConnection(AsyncAdapt_aiosqlite_connection):
    __slots__ = ()
    _cursor_cls = OneHopCursor


class OneHopDBAPI(AsyncAdapt_aiosqlite_dbapi):
    def connect(self, *arg: Any, **kw: Any) -> OneHopConnection:
        # The parent's connect (the async_creator call, the thread's daemon flag) wrapped
        # in its own adapter class; the same aiosqlite connection, re-wrapped in ours.
        adapted = super().connect(*arg, **kw)
        return OneHopConnection(self, adapted._connection)


# The URL scheme of the dialect (`sqlite+aiosqlite_onehop://`), registered below.
DRIVER = "sqlite.aiosqlite_onehop"
SCHEME = "sqlite+aiosqlite_onehop"
# An execution option: run the statement on the event loop's thread (see `read_rows` in
# app/storage/transactions.py).
INLINE_OPTION = "fastpath_inline"


class OneHopDialect(SQLiteDialect_aiosqlite):
    """aiosqlite, minus the ROLLBACKs that have nothing to roll back, and with one thread
    hop per statement (`OneHopCursor`, through `import_dbapi`).

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
        # The adapter module with our one-hop cursor (OneHopCursor); otherwise SQLAlchemy's.
        return OneHopDBAPI(aiosqlite, sqlite3)

    def do_execute(self, cursor: Any, statement: Any, parameters: Any, context: Any = None) -> None:
        if context is not None and context.execution_options.get(INLINE_OPTION):
            cursor.execute_inline(statement, parameters)
        else:
            cursor.execute(statement, parameters)

    def do_execute_no_params(self, cursor: Any, statement: Any, context: Any = None) -> None:
        if context is not None and context.execution_options.get(INLINE_OPTION):
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
registry.register(DRIVER, __name__, "OneHopDialect")
