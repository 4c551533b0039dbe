"""The one path through the event log's delete guard: an erasing transaction, and what each
backend does so that nothing erased stays readable in the database's files.

SQLite: PRAGMA secure_delete on the erasing connection (freed pages and cells are zeroed),
the full-text indexes merged ('optimize': FTS5 keeps a deleted row's terms in its older
segments until they are merged), then a TRUNCATE checkpoint, so the WAL's copies of the
old pages are gone from the -wal file. PostgreSQL: the rows are deleted in one transaction;
their space is reclaimed by VACUUM (`vacuum_tenant`), the WAL and backups keep them until
recycled (docs/erasure.md).
"""

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import delete, insert, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.storage import postgres
from app.storage.models import erasure_pass_table
from app.storage.sqlite.engines import BEGIN_OPTION, NO_BEGIN
from app.storage.transactions import (
    BULK_CACHE_KIB,
    page_cache,
    pragma,
    pragma_while,
    write_transaction,
)

log = logging.getLogger(__name__)

_FTS_TABLES = ("memory_events_fts", "memory_entries_fts")


@asynccontextmanager
async def erasing_transaction(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A write transaction in which memory_events rows may be deleted; on SQLite, one that
    leaves no copy of the deleted text in the file or its WAL once it has committed."""
    if engine.dialect.name != "sqlite":
        async with write_transaction(engine) as conn:
            await conn.execute(insert(erasure_pass_table).values(id=1))
            yield conn
            await conn.execute(delete(erasure_pass_table))
        return
    async with (
        engine.connect() as conn,
        page_cache(conn, BULK_CACHE_KIB),
        # Set back after, as found: some builds of SQLite have secure_delete on by default.
        pragma_while(conn, "secure_delete", 1),
    ):
        await conn.execution_options(**{BEGIN_OPTION: "BEGIN IMMEDIATE"})
        async with conn.begin():
            await conn.execute(insert(erasure_pass_table).values(id=1))
            yield conn
            await conn.execute(delete(erasure_pass_table))
            for table in _FTS_TABLES:
                await conn.execute(text(f"INSERT INTO {table} ({table}) VALUES ('optimize')"))
        busy = await pragma(conn, "PRAGMA wal_checkpoint(TRUNCATE)")
        if busy:
            # A reader held an old snapshot past busy_timeout: the WAL is copied back
            # and truncated by the next checkpoint (SQLite's own, or the next erasure's).
            log.warning("erasure checkpoint incomplete: a reader held the WAL")


async def vacuum_tenant(engine: AsyncEngine) -> None:
    """Reclaim the space of deleted rows now (operators; PostgreSQL: VACUUM of the tenant's
    tables, SQLite: VACUUM of the file)."""
    async with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            conn = await conn.execution_options(**{BEGIN_OPTION: NO_BEGIN})
            await conn.exec_driver_sql("VACUUM")
            return
        schema = postgres.schema_of(conn)
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        for table in _VACUUMED:
            await conn.exec_driver_sql(f'VACUUM "{schema}".{table}')


_VACUUMED = ("memory_events", "memory_entries", "memory_entry_sources", "memory_entry_versions")
