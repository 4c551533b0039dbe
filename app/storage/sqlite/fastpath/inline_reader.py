"""Index-bounded reads on the event loop's thread, by a plain sqlite3 connection of its
own (the statement compiled once by `compiled`): no SQLAlchemy connection, pool, greenlet
or result layer around the read."""

import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlalchemy import Select

from app.storage.sqlite.fastpath.compiled import (
    compiled,
    converted,
    fetch,
    parameters,
    within_budget,
)


class InlineReader:
    """A plain sqlite3 connection to one database, of the event loop's thread, for the
    hottest read (a page of the event log): the statement's SQL and value conversions,
    taken from SQLAlchemy's compiler and column types once per statement, and then only
    sqlite3's execute and fetchall. SQLAlchemy's connection, pool, greenlet and result
    layers around such a read cost more than the read itself (docs/benchmarks.md); this
    is the part of SQLAlchemy the hot path does by hand, for that reason alone.

    Read-only (`query_only`), and it never waits: busy_timeout 0, and the same 2 ms budget
    as `read_rows`. `rows` returns None when this connection will not answer (a statement
    it does not take, over the budget, busy, any SQLite error); the caller then reads
    through the engine, on aiosqlite's thread, where errors are classified
    (app/storage/unavailable.py) as for any other statement. Opened at the first read;
    `aclose` (TenantDb closes it before the engine) closes it."""

    def __init__(self, path: Path) -> None:
        self._uri = path.resolve().as_uri() + "?mode=rw"  # never creates the file
        self._conn: sqlite3.Connection | None = None

    def rows(self, statement: Select[Any], values: Mapping[str, Any]) -> list[Any] | None:
        """The rows of `statement` (a statement built once and kept, e.g. per filter
        shape: compiled forms are cached by the statement object) with `values` bound,
        converted as SQLAlchemy's result would convert them; or None (see above)."""
        found = compiled(statement)
        if not found:
            return None
        sql, binds, results = found
        try:
            conn = self._conn
            if conn is None:
                conn = sqlite3.connect(self._uri, uri=True, isolation_level=None)
                conn.executescript("PRAGMA busy_timeout = 0; PRAGMA query_only = ON;")
                self._conn = conn
            rows = within_budget(conn, fetch, conn, sql, parameters(binds, values))
        except sqlite3.Error:
            return None
        return rows if rows is None else converted(rows, results)

    async def aclose(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
