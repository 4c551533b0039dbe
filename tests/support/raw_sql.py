"""SQL on a tenant's database through a connection of its own, as another process (the
compactor's worker, another API replica, an operator's client) would run it: plain sqlite3
on the tenant's file, or a separate PostgreSQL engine in the tenant's schema."""

import contextlib
import sqlite3
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from app.deps import Container
from app.storage import postgres


async def run_sql(container: Container, tenant_id: str, *statements: str) -> list[list[Any]]:
    """Each statement in one transaction, committed; the rows each returned."""
    out: list[list[Any]] = []
    url = container.settings.database_url
    if url is None:
        path = container.tenants.path(tenant_id)
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
            conn.execute("BEGIN")
            for statement in statements:
                out.append(conn.execute(statement).fetchall())
            conn.execute("COMMIT")
        return out
    engine = create_async_engine(url.get_secret_value())
    try:
        async with engine.begin() as conn:
            schema = postgres.tenant_schema(tenant_id)
            await conn.execute(text(f'SET LOCAL search_path TO "{schema}"'))
            for statement in statements:
                result = await conn.execute(text(statement))
                out.append([tuple(r) for r in result] if result.returns_rows else [])
    finally:
        await engine.dispose()
    return out


async def revision(container: Container, tenant_id: str) -> int:
    """The tenant's entries revision, read by a connection of its own."""
    [[(n,)]] = await run_sql(container, tenant_id, "SELECT n FROM memory_entries_revision")
    return int(n)
