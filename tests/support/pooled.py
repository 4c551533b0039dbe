"""What a tenant engine's pooled SQLite connections hold: a bulk write (an import, an
erasure) changes its own connection's PRAGMAs and must hand it back as it found it."""

from contextlib import AsyncExitStack

from sqlalchemy.ext.asyncio import AsyncEngine


async def pooled_pragmas(engine: AsyncEngine, *names: str) -> set[tuple[object, ...]]:
    """The values of `names` on every connection of the pool, checked out at once."""
    async with AsyncExitStack() as stack:
        conns = [
            await stack.enter_async_context(engine.connect())
            for _ in range(engine.pool.size())  # type: ignore[attr-defined]
        ]
        found = set()
        for conn in conns:
            values = [(await conn.exec_driver_sql(f"PRAGMA {n}")).scalar_one() for n in names]
            await conn.rollback()
            found.add(tuple(values))
        return found
