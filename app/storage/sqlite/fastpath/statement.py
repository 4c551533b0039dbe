"""One statement on a plain sqlite3 connection, start to finish, optionally within a time
budget (SQLite's progress handler interrupts it): the core of the one-hop cursor and of
the inline reads."""

import sqlite3
import time
from collections.abc import Callable
from typing import Any, TypeVar

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
