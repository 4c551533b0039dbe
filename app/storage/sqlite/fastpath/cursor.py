"""SQLAlchemy's aiosqlite cursor adapter, re-implemented with one thread hop per
statement; relies on aiosqlite's private `Connection._execute`, `_conn` and SQLAlchemy's
adapter internals (`_adapt_connection`, `_execute_mutex`, `_handle_exception`)."""

import collections
from collections.abc import Sequence
from typing import Any

import aiosqlite
from sqlalchemy.connectors.asyncio import AsyncAdapt_dbapi_connection
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.util import EMPTY_DICT
from sqlalchemy.util.concurrency import await_

from app.storage.sqlite.fastpath.statement import Outcome, run_inline, run_statement


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
