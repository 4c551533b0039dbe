"""Per-tenant databases: one SQLite file each (or, on PostgreSQL, one schema each),
opened on demand, kept in a bounded LRU.

The only way to reach a tenant's memory is `TenantDatabases.lease(tenant_id)`, with a
tenant id that the edge took from a verified API key. A database is migrated to head the
first time a process opens it. Evicted databases close once their last lease ends, so
10,000 tenants never means 10,000 open files. On PostgreSQL every tenant shares the
process's connection pool (app/storage/postgres.py); the LRU then bounds the per-tenant
helpers (group committers) held in memory.
"""

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from app.config import Settings
from app.storage import migrate, postgres
from app.storage.group_commit import GroupCommitter
from app.storage.sqlite.engines import SqliteEngines
from app.storage.sqlite.fastpath import InlineReader, OneHopDialect, WordCounts
from app.storage.sqlite.writer_lock import SUFFIX as WRITER_LOCK_SUFFIX
from app.storage.transactions import read_statement, write_transaction

log = logging.getLogger(__name__)

EMPTY: Mapping[str, object] = MappingProxyType({})


class TenantDb:
    """An open tenant database. Services get it from a lease and never keep it.

    Its per-database helpers live as long as it, each made at first use by its user and
    closed (`aclose`) before the engine."""

    def __init__(
        self,
        tenant_id: str,
        engine: AsyncEngine,
        *,
        owns_engine: bool = True,
        shared: Mapping[str, object] = EMPTY,
    ) -> None:
        self.tenant_id = tenant_id
        self.engine = engine
        self._owns_engine = owns_engine  # False: a view of the shared PostgreSQL pool
        self.leases = 0
        self.evicted = False
        # The SQLite short cuts (app/storage/sqlite/fastpath) serve this database: its
        # engine has their dialect (Settings.sqlite_fast_path).
        self.fast_path = owns_engine and isinstance(engine.dialect, OneHopDialect)
        # The group commit of event appends (app/services/events.py, via event_log).
        self.event_appends: GroupCommitter[Any, Any] | None = None
        # The compactor's group commit of its writes (app/services/compaction/).
        self.compaction_writer: GroupCommitter[Any, Any] | None = None
        # How many entries a word matches, for the fast path's search routing.
        self.word_counts = WordCounts()
        self._reader: InlineReader | None = None
        # The process's helpers for every tenant (TenantDatabases' `shared`), never closed
        # with the database.
        self.shared = shared

    def inline_reader(self) -> InlineReader | None:
        """The database's InlineReader (the SQLite fast path; else None), made at first
        use and closed with the database."""
        if self._reader is None and self.fast_path:
            database = self.engine.url.database
            assert database is not None
            self._reader = InlineReader(Path(database))
        return self._reader

    async def close(self) -> None:
        for helper in (self.event_appends, self.compaction_writer, self._reader):
            if helper is not None:
                await helper.aclose()
        if self._owns_engine:
            await self.engine.dispose()


class TenantDatabases:
    def __init__(
        self,
        settings: Settings,
        *,
        shared: Mapping[str, object] = EMPTY,
        new_databases: migrate.NewDatabases | None = None,
    ) -> None:
        """`shared`: helpers of the process that every leased TenantDb carries as
        `db.shared`, such as the entry search cache (app/services/search/page_cache.py), which
        the composition root (app/deps.py) makes: storage knows no services. `new_databases`:
        how a new tenant's database is made before it is migrated (migrate.NewDatabases)."""
        self._settings = settings
        self._shared_helpers = shared
        self._new_databases = new_databases
        self._open: OrderedDict[str, TenantDb] = OrderedDict()
        self._opening: dict[str, asyncio.Lock] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._shared: AsyncEngine | None = None
        if settings.database_url is not None:
            self._shared = postgres.engine(
                settings.database_url.get_secret_value(), pool_size=settings.postgres_pool_size
            )
        else:
            settings.tenants_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._engines = SqliteEngines(
            synchronous=settings.sqlite_synchronous,
            busy_timeout_ms=settings.sqlite_busy_timeout_ms,
            pool_size=settings.tenant_pool_size,
            fast_path=settings.sqlite_fast_path,
        )

    def path(self, tenant_id: str) -> Path:
        # Tenant ids are generated (ten_ + ULID), never user text: safe as a file name.
        if not tenant_id.isascii() or not tenant_id.replace("_", "").isalnum():
            raise ValueError("not a tenant id")
        return self._settings.tenants_dir / f"{tenant_id}.db"

    @property
    def open_count(self) -> int:
        return len(self._open)

    def lease(self, tenant_id: str) -> "_Lease":
        """`async with tenants.lease(id) as db`: the tenant's open database, which is not
        closed (if evicted meanwhile) before the lease ends."""
        return _Lease(self, tenant_id)

    def open_ids(self) -> list[str]:
        """The tenants open in this process now, least recently used first."""
        return list(self._open)

    @contextlib.asynccontextmanager
    async def visit(self, tenant_id: str) -> AsyncIterator[TenantDb]:
        """`async with tenants.visit(id) as db`: for background passes over many tenants.
        An open tenant is leased where it is in the LRU (a pass does not reorder it); one
        that is not open is opened apart and closed at the end, so a pass never evicts
        the tenants requests are using."""
        db = self._open.get(tenant_id)
        if db is None:
            db = await self._open_db(tenant_id)
            db.evicted = True  # never in the cache: closed as an evicted one when let go
        self._hold(db)
        try:
            yield db
        finally:
            self._release(db)

    def _hold(self, db: TenantDb) -> None:
        global _leased
        _leased += 1
        db.leases += 1

    def _release(self, db: TenantDb) -> None:
        global _leased
        _leased -= 1
        db.leases -= 1
        if db.evicted and db.leases == 0:
            self._close_later(db)

    async def create(self, tenant_id: str) -> None:
        """Create and migrate a new tenant's database file."""
        async with self.lease(tenant_id):
            pass

    async def migrate(self, tenant_id: str) -> bool:
        """Migrate one tenant database to head now; True when a migration ran."""
        if self._shared is not None:
            async with write_transaction(self._shared) as conn:
                return await migrate.upgrade(conn, "tenant", postgres.tenant_schema(tenant_id))
        engine = await self._engine(tenant_id)
        try:
            async with write_transaction(engine) as conn:
                return await migrate.upgrade(conn, "tenant")
        finally:
            await engine.dispose()

    async def drop(self, tenant_id: str) -> str:
        """Close the tenant's database if open here, and delete it: the SQLite file with
        its -wal and -shm, or the PostgreSQL schema. What was dropped; nothing if gone."""
        db = self._open.pop(tenant_id, None)
        if db is not None:
            await db.close()
        if self._shared is not None:
            schema = postgres.tenant_schema(tenant_id)
            async with write_transaction(self._shared) as conn:
                await conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            return f"postgresql schema {schema}"
        path = self.path(tenant_id)
        await asyncio.to_thread(_unlink_database, path)
        return f"sqlite file {path.name}"

    async def aclose(self) -> None:
        dbs = list(self._open.values())
        self._open.clear()
        for db in dbs:
            await db.close()
        if self._closing:
            await asyncio.gather(*self._closing)
        if self._shared is not None:
            await self._shared.dispose()

    async def _engine(self, tenant_id: str) -> AsyncEngine:
        return await self._engines.engine(self.path(tenant_id))

    async def _get(self, tenant_id: str) -> TenantDb:
        db = self._open.get(tenant_id)
        if db is not None:
            self._open.move_to_end(tenant_id)
            return db
        lock = self._opening.setdefault(tenant_id, asyncio.Lock())
        async with lock:
            db = self._open.get(tenant_id)
            if db is None:
                db = await self._open_db(tenant_id)
                self._open[tenant_id] = db
                self._evict()
        self._opening.pop(tenant_id, None)
        return db

    async def _open_db(self, tenant_id: str) -> TenantDb:
        if self._shared is not None:
            schema = postgres.tenant_schema(tenant_id)
            async with write_transaction(self._shared) as conn:
                if self._new_databases is not None:
                    await self._new_databases.postgres_schema(conn, schema)
                if await migrate.upgrade(conn, "tenant", schema):
                    log.info("migrated tenant schema", extra={"tenant_id": tenant_id})
            return TenantDb(
                tenant_id,
                postgres.for_schema(self._shared, schema),
                owns_engine=False,
                shared=self._shared_helpers,
            )
        if self._new_databases is not None and not self.path(tenant_id).exists():
            await asyncio.to_thread(self._new_databases.sqlite_file, "tenant", self.path(tenant_id))
        engine = await self._engine(tenant_id)
        try:
            # Almost every open finds the database at head: one plain read says so (and,
            # WAL, is not blocked by another process's write lock, so reads of a tenant
            # whose file is locked go on). Otherwise the check is repeated under BEGIN
            # IMMEDIATE, so two processes opening a new tenant at once migrate it once.
            async with read_statement(engine) as conn:
                current = await migrate.current_revision(conn)
            if current != migrate.head_revision("tenant"):
                async with write_transaction(engine) as conn:
                    if await migrate.upgrade(conn, "tenant"):
                        log.info("migrated tenant database", extra={"tenant_id": tenant_id})
        except BaseException:
            await engine.dispose()
            raise
        return TenantDb(tenant_id, engine, shared=self._shared_helpers)

    def _evict(self) -> None:
        while len(self._open) > self._settings.tenant_cache_size:
            _, db = self._open.popitem(last=False)
            db.evicted = True
            if db.leases == 0:
                self._close_later(db)

    def _close_later(self, db: TenantDb) -> None:
        task = asyncio.get_running_loop().create_task(db.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)


def _unlink_database(path: Path) -> None:
    for suffix in ("-wal", "-shm", "-journal", WRITER_LOCK_SUFFIX, ""):
        Path(str(path) + suffix).unlink(missing_ok=True)


# Leases held in this process now, of every tenant: the requests being served.
_leased = 0


def leased() -> int:
    """How many tenant leases this process holds now (about: the requests in flight)."""
    return _leased


class _Lease:
    """TenantDatabases.lease's context manager: a class rather than an
    @asynccontextmanager generator, whose wrapper objects and generator steps cost a
    measurable share of every request (docs/benchmarks.md)."""

    __slots__ = ("_db", "_dbs", "_tenant_id")

    def __init__(self, dbs: TenantDatabases, tenant_id: str) -> None:
        self._dbs = dbs
        self._tenant_id = tenant_id
        self._db: TenantDb | None = None

    async def __aenter__(self) -> TenantDb:
        db = await self._dbs._get(self._tenant_id)
        self._dbs._hold(db)
        self._db = db
        return db

    async def __aexit__(self, *_: object) -> None:
        db, self._db = self._db, None
        if db is not None:
            self._dbs._release(db)
