"""Transactions, as storage opens them: a write (BEGIN IMMEDIATE on SQLite), a read of one
snapshot, a lone statement without BEGIN, and the rows of one index-bounded statement; the
writers serialised on a key inside a write transaction (a transaction-scoped advisory lock
on PostgreSQL, nothing on SQLite, where BEGIN IMMEDIATE already serialises every writer);
and the large page cache a bulk write (an import, an erasure) takes while it runs."""

import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import Any

from sqlalchemy import Executable, Row
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.storage import postgres
from app.storage.sqlite.engines import BEGIN_OPTION, NO_BEGIN
from app.storage.sqlite.fastpath import INLINE_OPTION, OneHopDialect

# A bulk write's page cache, in KiB (SQLite). With the default 2 MiB, a write that touches
# more of an index than that (an import's batch, an erasure's full-text merge) spills and
# re-reads pages mid-transaction. Pages are taken only as the work touches them and freed
# when the cache is set back.
BULK_CACHE_KIB = 256 * 1024


@asynccontextmanager
async def write_transaction(
    engine: AsyncEngine, *, bulk: bool = False
) -> AsyncIterator[AsyncConnection]:
    """One write transaction: BEGIN IMMEDIATE, commit on success, roll back on error. A
    `bulk` one runs with the connection's page cache at BULK_CACHE_KIB (`page_cache`)."""
    async with engine.connect() as conn, page_cache(conn, BULK_CACHE_KIB if bulk else None):
        conn = await conn.execution_options(**{BEGIN_OPTION: "BEGIN IMMEDIATE"})
        async with conn.begin():
            yield conn


def page_cache(conn: AsyncConnection, kib: int | None) -> AbstractAsyncContextManager[None]:
    """SQLite: the connection's page cache at `kib` while the block runs, then set back to
    what it was, so the pooled connection does not keep it. None, or PostgreSQL: as is."""
    if kib is None or conn.dialect.name != "sqlite":
        return nullcontext()
    return pragma_while(conn, "cache_size", -int(kib))


@asynccontextmanager
async def pragma_while(conn: AsyncConnection, name: str, value: int) -> AsyncIterator[None]:
    """A SQLite connection's integer PRAGMA `name` at `value` while the block runs, then
    set back to what it was, so the pooled connection goes back as it came."""
    found = await pragma(conn, f"PRAGMA {name}")
    try:
        await pragma(conn, f"PRAGMA {name} = {int(value)}")
        yield
    finally:
        await pragma(conn, f"PRAGMA {name} = {int(found)}")


async def pragma(conn: AsyncConnection, sql: str) -> Any:
    """Run a SQLite PRAGMA outside any transaction; its first value, or None."""
    await conn.execution_options(**{BEGIN_OPTION: NO_BEGIN})
    result = await conn.exec_driver_sql(sql)
    value = result.first() if result.returns_rows else None  # a PRAGMA that sets answers none
    await conn.commit()
    return None if value is None else value[0]


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
    range), read as `read_statement` reads, but with the SQLite fast path on the event
    loop's thread itself rather than on aiosqlite's (fastpath.dialect's INLINE_OPTION).

    Such a read costs less than the hand-off (a queue, a thread wake-up, a future resolved
    through the loop's self-pipe), and the rows are made into Python objects under the GIL
    either way (docs/benchmarks.md has the figures). The loop is not held long: a statement
    still running after fastpath.statement.INLINE_BUDGET_S (2 ms) is interrupted by SQLite's
    progress handler, which leaves an autocommit read no trace, and is run again on
    aiosqlite's thread. One wait for the disk (a page not in the OS cache) cannot be
    interrupted: it holds the loop as long. Full-text searches stay on the thread
    (`read_statement`): FTS5 does its work inside a few virtual-table instructions, where
    the progress handler is not called, and on the thread SQLite overlaps the loop's work on
    the other CPU. A read in WAL mode takes no lock that a writer holds, so it does not wait
    on busy_timeout.

    `run_sync`, not `execute`: AsyncConnection.execute insists that the statement awaited
    something (SQLAlchemy's check for a driver that is not async), and an inline read
    does not. On PostgreSQL, or with the fast path off, this is `read_statement`."""
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
        plain = engine.execution_options(**{BEGIN_OPTION: NO_BEGIN})
        on_loop = (
            engine.execution_options(**{BEGIN_OPTION: NO_BEGIN, INLINE_OPTION: True})
            if isinstance(engine.dialect, OneHopDialect)
            else plain
        )
        derived = _statement_engines[engine] = {False: plain, True: on_loop}
    return derived[inline]


async def serialize(conn: AsyncConnection, *keys: str) -> None:
    """Until the transaction ends, no other writer holding any of `keys` runs (keys are
    scoped to the tenant; taken in a fixed order, so two writers never deadlock)."""
    await postgres.advisory_lock(conn, *keys)
