"""Reads of one statement on a tenant's database, the way each backend serves them best:
an index-bounded read, and a page of the entry search. With the SQLite fast path, both
skip SQLAlchemy's execution layers (app/storage/sqlite/fastpath); otherwise they run
through the engine. Rows are read by position either way."""

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Select

from app.storage import tenants
from app.storage.sqlite import fastpath
from app.storage.tenants import TenantDb
from app.storage.transactions import read_rows, read_statement


async def index_rows(
    db: TenantDb, statement: Select[Any], values: Mapping[str, Any]
) -> Sequence[Any]:
    """The rows of ONE statement bounded by an index (a page of an index range, a
    one-row table), `statement` built once and kept: on the event loop by the
    InlineReader when it answers, else `read_rows`."""
    reader = db.inline_reader()
    rows = None if reader is None else reader.rows(statement, values)
    if rows is None:
        return await read_rows(db.engine, statement, values)
    return rows


async def search_rows(
    db: TenantDb, statement: Select[Any], values: Mapping[str, Any], words: Sequence[str]
) -> Sequence[Any]:
    """The rows of an entry search's page (`statement` built once and kept, one statement:
    it reads one snapshot on its own), `words` being the question's words."""
    if db.fast_path:
        return await fastpath.search_rows(
            db.engine,
            db.inline_reader(),
            db.word_counts,
            statement,
            values,
            words,
            alone=tenants.leased() <= 1,  # no other request for the loop to get on with
        )
    async with read_statement(db.engine) as conn:
        rows: Sequence[Any] = (await conn.execute(statement, dict(values))).all()
        return rows
