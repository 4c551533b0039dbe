"""A SQLAlchemy statement run by plain sqlite3: its SQL, bind and result conversions taken
from SQLAlchemy's compiler and column types once per statement object (`compile`,
`positiontup`, `binds`, `bind_processor`, `result_processor`, `dialect_impl`), then only
sqlite3's execute and fetchall; and one statement on a plain sqlite3 connection, start to
finish, optionally within a time budget (SQLite's progress handler interrupts it): the core
of the one-hop cursor and of the inline reads."""

import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import Select
from sqlalchemy.dialects.sqlite.pysqlite import SQLiteDialect_pysqlite
from sqlalchemy.types import TypeEngine

# An inline read's budget: SQLite calls the progress handler every INLINE_STEP
# virtual-machine instructions, and a statement still running after INLINE_BUDGET_S
# seconds is interrupted there (and run again on aiosqlite's thread). An events page of 50
# (an index range) never even sees the handler.
INLINE_STEP = 1_000
INLINE_BUDGET_S = 0.002

_T = TypeVar("_T")

# What `run_statement` returns: description, rows (None when the statement has no result
# columns), rowcount, lastrowid.
Outcome = tuple[Any, list[Any] | None, int, int | None]


def run_statement(conn: sqlite3.Connection, operation: str, parameters: Any, many: bool) -> Outcome:
    """One statement, start to finish: what SQLAlchemy's adapter does in four hops
    (cursor, execute, fetchall, close), as one."""
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


def run_inline(conn: sqlite3.Connection, operation: str, parameters: Any) -> Outcome | None:
    """`run_statement` on the calling thread, or None (nothing done) when the statement
    ran past its time budget and was interrupted by SQLite."""
    return within_budget(conn, run_statement, conn, operation, parameters, False)


def within_budget(conn: sqlite3.Connection, fn: Callable[..., _T], *args: Any) -> _T | None:
    """fn(*args), a statement on `conn`, or None when SQLite interrupted it because it ran
    past `INLINE_BUDGET_S` (an autocommit read leaves no trace of it)."""
    deadline = time.perf_counter() + INLINE_BUDGET_S
    over = False

    def tick() -> bool:
        nonlocal over
        over = time.perf_counter() > deadline
        return over  # True: SQLite interrupts the statement

    conn.set_progress_handler(tick, INLINE_STEP)
    try:
        return fn(*args)
    except sqlite3.OperationalError:
        if over:
            return None
        raise
    finally:
        conn.set_progress_handler(None, 0)


# statement -> (SQL, [(bind name, its converter, its fixed value or _GIVEN)], [(column
# index, its converter)]), or () for a statement this does not take (expanding "IN"
# lists).
Compiled = tuple[str, list[tuple[str, Any, Any]], list[tuple[int, Any]]] | tuple[()]
_GIVEN = object()
_COMPILED: dict[Select[Any], Compiled] = {}
_PYSQLITE = SQLiteDialect_pysqlite()  # "?" placeholders, and SQLite's type processing


def compiled(statement: Select[Any]) -> Compiled:
    """`_compile(statement)`, once per statement object (InlineReader and fetch_rows)."""
    found = _COMPILED.get(statement)
    if found is None:
        found = _COMPILED[statement] = _compile(statement)
    return found


def _compile(statement: Select[Any]) -> Compiled:
    result = statement.compile(dialect=_PYSQLITE)
    names = result.positiontup or []
    if any(result.binds[name].expanding for name in names):
        return ()
    binds = []
    for name in names:
        bind = result.binds[name]
        # Values given per call (bindparam without a value), or fixed in the statement.
        fixed = _GIVEN if bind.value is None and bind.callable is None else bind.effective_value
        binds.append((name, _processor(bind.type).bind_processor(_PYSQLITE), fixed))
    results = [
        (i, convert)
        for i, column in enumerate(statement.selected_columns)
        if (convert := _processor(column.type).result_processor(_PYSQLITE, None)) is not None
    ]
    return result.string, binds, results


def _processor(type_: TypeEngine[Any]) -> TypeEngine[Any]:
    # The type as the dialect runs it (SQLite's DATETIME, with its string format, inside a
    # TypeDecorator): what SQLAlchemy's own execution takes the processors from.
    return type_.dialect_impl(_PYSQLITE)


def fetch(conn: sqlite3.Connection, sql: str, parameters: Sequence[Any]) -> list[Any]:
    return conn.execute(sql, parameters).fetchall()


def parameters(binds: list[tuple[str, Any, Any]], values: Mapping[str, Any]) -> list[Any]:
    """The statement's positional parameters: `values` by name (or the statement's fixed
    values), each through its type's bind processor."""
    return [
        v if convert is None else convert(v)
        for name, convert, fixed in binds
        for v in (values[name] if fixed is _GIVEN else fixed,)
    ]


def converted(rows: list[Any], results: list[tuple[int, Any]]) -> list[Any]:
    """The rows with each column through its type's result processor."""
    if not results:
        return rows
    out = []
    for row in rows:
        row_values = list(row)
        for i, convert in results:
            row_values[i] = convert(row_values[i])
        out.append(row_values)
    return out


def fetch_rows(
    conn: sqlite3.Connection, statement: Select[Any], values: Mapping[str, Any]
) -> list[Any]:
    """The rows of `statement` on a plain sqlite3 connection (inside `write_on_thread`'s
    function), bound and converted as SQLAlchemy would. The statement is compiled once
    and kept, so it must be built once (a module constant), and it may not use expanding
    IN lists (app/storage/lists.py binds a list as one parameter instead)."""
    found = compiled(statement)
    if not found:
        raise ValueError("fetch_rows takes no expanding IN list")
    sql, binds, results = found
    return converted(fetch(conn, sql, parameters(binds, values)), results)
