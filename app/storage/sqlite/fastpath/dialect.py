"""The SQLAlchemy dialect of the fast path: aiosqlite with the one-hop cursor, inline
execution on request (INLINE_OPTION), and no ROLLBACK when SQLite has no transaction open.
Subclasses SQLiteDialect_aiosqlite and overrides `import_dbapi`, `do_execute`,
`do_execute_no_params` and `do_rollback`."""

import sqlite3
from typing import Any

import aiosqlite
from sqlalchemy.dialects import registry
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_dbapi,
    SQLiteDialect_aiosqlite,
)

from app.storage.sqlite.fastpath.cursor import OneHopDBAPI

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
