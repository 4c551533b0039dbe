"""Per-tenant SQLite files: created by migrations, PRAGMAs, a bounded LRU of open files."""

import os
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text

from app.config import Settings
from app.deps import build
from app.services import events
from app.services.records import EventIn, Scope
from app.storage import migrate
from app.storage import tenants as tenants_module
from app.storage.control import ControlModel
from app.storage.models import TenantModel
from app.storage.tenants import TenantDatabases
from app.storage.transactions import read_transaction


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_each_tenant_has_its_own_file_with_pragmas(tmp_path: Path) -> None:
    dbs = TenantDatabases(Settings(_env_file=None, data_dir=tmp_path))  # type: ignore[call-arg]
    try:
        for tid in ("ten_a", "ten_b"):
            async with dbs.lease(tid) as db, read_transaction(db.engine) as conn:
                assert (await conn.execute(text("PRAGMA journal_mode"))).scalar() == "wal"
                assert (await conn.execute(text("PRAGMA foreign_keys"))).scalar() == 1
                assert (await conn.execute(text("PRAGMA busy_timeout"))).scalar() == 5000
                assert (await conn.execute(text("PRAGMA synchronous"))).scalar() == 2  # FULL
                version = await migrate.current_revision(conn)
                assert version == migrate.head_revision("tenant")
        assert sorted(p.name for p in (tmp_path / "tenants").glob("*.db")) == [
            "ten_a.db",
            "ten_b.db",
        ]
    finally:
        await dbs.aclose()


async def test_lru_bounds_open_databases_and_files(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path, tenant_cache_size=8)  # type: ignore[call-arg]
    dbs = TenantDatabases(settings)
    baseline = open_fds()
    try:
        for i in range(60):
            async with dbs.lease(f"ten_{i:03d}") as db:
                await events.append_event(db, EventIn(Scope.TEAM, "u1", "note", f"hello {i}"))
                # With the fast path, a read through the tenant's InlineReader: one more
                # connection, closed with the database when it is evicted.
                page = await events.list_events(db, events.EventFilter(), first=5, after=None)
                assert len(page.edges) == 1
                assert (db.inline_reader() is not None) == settings.sqlite_fast_path
            assert dbs.open_count <= 8
        # 8 open databases x (db + wal + shm) x (pool connections + the InlineReader's),
        # never 60 tenants' worth.
        assert open_fds() - baseline <= 8 * 3 * (settings.tenant_pool_size + 1) + 8
        # An evicted tenant reopens with its data intact.
        async with dbs.lease("ten_000") as db:
            page = await events.list_events(db, events.EventFilter(), first=5, after=None)
            assert [e.node.body for e in page.edges] == ["hello 0"]
    finally:
        await dbs.aclose()


async def test_a_leased_database_survives_eviction(tmp_path: Path) -> None:
    dbs = TenantDatabases(Settings(_env_file=None, data_dir=tmp_path, tenant_cache_size=1))  # type: ignore[call-arg]
    before = tenants_module.leased()  # the process's leases, of every tenant
    try:
        async with dbs.lease("ten_held") as held:
            async with dbs.lease("ten_other"):
                assert tenants_module.leased() == before + 2
                # evicts ten_held from the cache while it is leased
            assert held.evicted
            await events.append_event(held, EventIn(Scope.TEAM, "u1", "note", "still works"))
            assert held.leases == 1 and not dbs._closing
        # The lease ended: the evicted database is being closed now (in the background).
        assert held.leases == 0 and len(dbs._closing) == 1
        # A lease ended by an exception is released too.
        with pytest.raises(RuntimeError, match="inside"):
            async with dbs.lease("ten_other") as other:
                assert other.leases == 1
                raise RuntimeError("inside the lease")
        assert other.leases == 0 and tenants_module.leased() == before
    finally:
        await dbs.aclose()


def _diff(conn: object, metadata: object) -> list[object]:
    ctx = MigrationContext.configure(
        conn,  # type: ignore[arg-type]
        opts={
            "include_object": lambda o, n, t, r, c: not (t == "table" and migrate.is_fts_object(n)),
            "compare_type": True,
        },
    )
    return list(compare_metadata(ctx, metadata))  # type: ignore[arg-type]


async def test_migrations_match_the_models(tmp_path: Path) -> None:
    container = await build(Settings(_env_file=None, data_dir=tmp_path))  # type: ignore[call-arg]
    try:
        async with container.tenants.lease("ten_drift") as db, db.engine.connect() as conn:
            assert await conn.run_sync(_diff, TenantModel.metadata) == []
        async with container.control.engine.connect() as conn:
            assert await conn.run_sync(_diff, ControlModel.metadata) == []
    finally:
        await container.aclose()
