"""Engines for many SQLite files (one per tenant) that share one dialect, and with it one
cache of compiled statements; relies on `Engine(...)`'s constructor, the adapter module's
`connect(async_creator_fn=...)` and `dialect.on_connect()`, as `create_async_engine` uses
them."""

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiosqlite
from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import AsyncAdaptedQueuePool, NullPool
from sqlalchemy.util import LRUCache

from app.storage.sqlite.fastpath.dialect import SCHEME, OneHopDialect


class SharedDialectEngines:
    """`create_async_engine` makes a new dialect for every engine, and SQLAlchemy keys its
    compiled-statement cache by the dialect instance, so every newly opened tenant would
    compile each statement again and run the dialect's
    first-connect `initialize` (a PRAGMA round trip to aiosqlite's thread). Here the
    engine is assembled from its parts instead (the pool, `Engine`, `AsyncEngine`, what
    `create_async_engine` does after making the dialect) around one dialect, initialised
    once on a throwaway in-memory database, with the compiled cache passed through the
    public `compiled_cache` execution option. The dialect's own per-connection setup
    (`on_connect`: SQLite's regexp and floor functions) is still run on every new
    connection, as `create_engine` would.
    """

    def __init__(self, *, pool_size: int, cache_size: int = 1000) -> None:
        self._pool_size = pool_size
        # Bounded like an engine's own (query_cache_size): the statements are the app's,
        # the same for every tenant.
        self._cache: LRUCache[Any, Any] = LRUCache(cache_size)
        self._dialect: OneHopDialect | None = None
        self._lock = asyncio.Lock()

    async def _shared_dialect(self) -> OneHopDialect:
        async with self._lock:
            if self._dialect is None:
                probe = create_async_engine(f"{SCHEME}://", poolclass=NullPool)
                try:
                    async with probe.connect():  # the first connect initialises the dialect
                        pass
                finally:
                    await probe.dispose()
                self._dialect = probe.sync_engine.dialect  # type: ignore[assignment]
            assert self._dialect is not None
            return self._dialect

    async def engine(
        self, path: Path, connect: Callable[[], Awaitable[aiosqlite.Connection]]
    ) -> AsyncEngine:
        """The engine of the file at `path`, its connections made by `connect`."""
        dialect = await self._shared_dialect()
        dbapi = dialect.loaded_dbapi
        pool = AsyncAdaptedQueuePool(
            # What create_async_engine's async_creator wraps: the adapter's connect.
            lambda: dbapi.connect(async_creator_fn=connect),
            pool_size=self._pool_size,
            max_overflow=0,
            timeout=30,
            dialect=dialect,
        )
        on_connect = dialect.on_connect()
        if on_connect is not None:

            def setup(dbapi_connection: Any, _record: Any) -> None:
                on_connect(dbapi_connection)

            event.listen(pool, "connect", setup)
        sync_engine = Engine(
            pool,
            dialect,
            make_url(f"{SCHEME}:///{path}"),
            # As every engine here: no bound value in an exception message.
            hide_parameters=True,
            query_cache_size=0,  # the shared cache below instead
            execution_options={"compiled_cache": self._cache},
        )
        return AsyncEngine(sync_engine)
