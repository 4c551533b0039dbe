"""A whole SQLite transaction (or one read) as ONE call on a pooled connection's aiosqlite
thread, with plain sqlite3 inside; relies on aiosqlite's private `Connection._execute` and
`_conn`, and on SQLAlchemy's adapter `_connection` and `_execute_mutex`."""

import asyncio
import sqlite3
from collections.abc import Callable
from typing import TypeVar

import aiosqlite
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.storage.unavailable import classify

_T = TypeVar("_T")


async def write_on_thread(engine: AsyncEngine, fn: Callable[[sqlite3.Connection], _T]) -> _T:
    """One SQLite write transaction as ONE call on a pooled connection's aiosqlite thread:
    BEGIN IMMEDIATE, `fn(sqlite3 connection)`, COMMIT; rolled back if either raises.

    For the group commit of appends, the hottest write: through `write_transaction` a
    group took six hand-offs to the thread and back (BEGIN, the idempotency-key read,
    max(seq), the INSERT, the index statement, COMMIT), each through SQLAlchemy's
    connection, greenlet and result layers (docs/benchmarks.md). `fn` runs on the thread
    with plain sqlite3 calls (see compiled.fetch_rows); it must not touch the event loop.

    The connection is checked out of the engine's pool as for any statement (so the pool
    bounds it and hands it to one task at a time), and the adapter's mutex is held as
    `OneHopCursor` holds it. SQLite errors are classified as the engine's `handle_error`
    hook classifies them (a lock, corruption or full disk is TenantUnavailable); others
    are wrapped as SQLAlchemy wraps them (IntegrityError...). A cancelled wait leaves
    `fn` running on the thread: the connection is then invalidated (closed after it,
    never reused), as SQLAlchemy does for a statement interrupted that way."""
    return await _on_thread(engine, _write_transaction, fn)


async def read_on_thread(engine: AsyncEngine, fn: Callable[[sqlite3.Connection], _T]) -> _T:
    """`fn(sqlite3 connection)`, ONE read statement (see compiled.fetch_rows), as one call
    on a pooled connection's aiosqlite thread, without BEGIN/COMMIT: SQLite runs a lone
    statement in a transaction of its own, one consistent snapshot (as `read_statement`).

    For the entry search, whose rare-word pages take little SQLite time: SQLAlchemy's
    execution and result layers around it cost about as much again on the event loop
    (docs/benchmarks.md). Errors and cancellation as in `write_on_thread`."""
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
    # connection goes back to the pool (OneHopDialect.do_rollback sees it open).
    conn.execute("BEGIN IMMEDIATE")
    result = fn(conn)
    conn.execute("COMMIT")
    return result
