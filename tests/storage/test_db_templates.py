"""Templates of new databases (tests/support/db_templates.py): a tenant made from one is the
same database as one migrated from 0001, at head, private, and separate from every other;
a template never overwrites a database nor skips a migration; on PostgreSQL, two processes
opening one new tenant use one spare schema."""

import asyncio
import hashlib
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select, text

from app.config import Settings
from app.deps import Container, build
from app.services import events
from app.services.records import EventIn, Scope
from app.storage import migrate, postgres
from app.storage.models import events_table as ev
from app.storage.tenants import TenantDatabases
from app.storage.transactions import read_transaction, write_transaction
from tests.conftest import make_tenant, migrate_tenant
from tests.support import db_templates as templates

NOTE = EventIn(scope=Scope.TEAM, scope_ref="u1", kind="note", body="hello")


def _schema(path: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
        return [(t, n, s or "") for t, n, s in rows]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def _count(dbs: TenantDatabases, tenant_id: str) -> int:
    async with dbs.lease(tenant_id) as db, read_transaction(db.engine) as conn:
        return int((await conn.execute(select(func.count()).select_from(ev))).scalar_one())


@pytest.mark.sqlite_only
async def test_a_tenant_copied_from_the_template_is_one_migrated_from_0001(
    tmp_path: Path,
) -> None:
    made = await templates.make_sqlite_templates(tmp_path)
    assert made.tenant_file is not None and made.control_file is not None
    before = _digest(made.tenant_file)
    settings = Settings(_env_file=None, data_dir=tmp_path / "data")  # type: ignore[call-arg]
    copied = await build(settings, new_databases=made)
    plain = TenantDatabases(
        Settings(_env_file=None, data_dir=tmp_path / "plain")  # type: ignore[call-arg]
    )
    try:
        a = await make_tenant(copied, "a")
        b = await make_tenant(copied, "b")
        await plain.create("ten_plain")
        path = copied.tenants.path(a.id)
        assert _schema(path) == _schema(plain.path("ten_plain"))
        assert path.stat().st_mode & 0o777 == 0o600
        assert settings.control_db_path.stat().st_mode & 0o777 == 0o600
        async with copied.tenants.lease(a.id) as db:
            await events.append_event(db, NOTE)
            async with read_transaction(db.engine) as conn:
                assert (await conn.execute(text("PRAGMA journal_mode"))).scalar() == "wal"
                assert await migrate.current_revision(conn) == migrate.head_revision("tenant")
        # Each copy is a database of its own; the template is never written.
        assert await _count(copied.tenants, a.id) == 1
        assert await _count(copied.tenants, b.id) == 0
        assert _digest(made.tenant_file) == before
    finally:
        await copied.aclose()
        await plain.aclose()


@pytest.mark.sqlite_only
def test_a_copy_never_replaces_a_database_nor_uses_a_template_of_another_head(
    tmp_path: Path,
) -> None:
    made = asyncio.run(templates.make_sqlite_templates(tmp_path / "t"))
    assert made.tenant_file is not None
    existing = tmp_path / "ten_x.db"
    existing.write_bytes(b"someone else's")
    assert templates.copy_sqlite(made.tenant_file, existing, "tenant") is False
    assert existing.read_bytes() == b"someone else's"
    # A template named for another head (an older migration set) is not copied.
    stale = tmp_path / "tenant-0001.db"
    stale.write_bytes(made.tenant_file.read_bytes())
    assert templates.copy_sqlite(stale, tmp_path / "ten_y.db", "tenant") is False
    assert not (tmp_path / "ten_y.db").exists()
    assert templates.copy_sqlite(made.tenant_file, tmp_path / "ten_z.db", "tenant") is True
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["t", "ten_x.db", "ten_z.db", "tenant-0001.db"]


@pytest.mark.sqlite_only
async def test_a_template_behind_head_is_migrated_after_the_copy(tmp_path: Path) -> None:
    """Even a template file not at head (named for the head by mistake) leaves a database
    at head: the copy is opened and migrated as usual."""
    made = await templates.make_sqlite_templates(tmp_path / "t")
    assert made.tenant_file is not None
    behind = tmp_path / "behind" / made.tenant_file.name
    behind.parent.mkdir()
    behind.write_bytes(made.tenant_file.read_bytes())
    engine = create_engine(f"sqlite:///{behind}")
    try:
        with engine.begin() as conn:
            migrate_tenant(conn, "0009")  # before memory_scopes (0010), whatever the head
    finally:
        engine.dispose()
    assert "memory_scopes" not in {name for _, name, _ in _schema(behind)}
    settings = Settings(_env_file=None, data_dir=tmp_path / "data")  # type: ignore[call-arg]
    dbs = TenantDatabases(settings, new_databases=templates.DatabaseTemplates(tenant_file=behind))
    try:
        async with dbs.lease("ten_behind") as db, read_transaction(db.engine) as conn:
            assert await migrate.current_revision(conn) == migrate.head_revision("tenant")
            assert (await conn.execute(text("SELECT count(*) FROM memory_scopes"))).scalar() == 0
        assert _schema(dbs.path("ten_behind")) == _schema(made.tenant_file)
    finally:
        await dbs.aclose()


async def _spares(container: Container) -> list[str]:
    async with write_transaction(container.control.engine) as conn:
        rows = await conn.execute(
            text("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'jet_spare_%' ORDER BY 1")
        )
        return [r[0] for r in rows]


@pytest.mark.postgres_only
async def test_new_tenants_take_spare_schemas_then_migrate(container: Container) -> None:
    spares = await _spares(container)
    assert spares and all(s.startswith(templates.spare_prefix()) for s in spares)
    made = [await make_tenant(container, f"t{i}") for i in range(len(spares) + 1)]
    assert await _spares(container) == []  # the last one was migrated from 0001
    async with container.tenants.lease(made[0].id) as db:
        await events.append_event(db, NOTE)
    for i, tenant in enumerate(made):
        schema = postgres.tenant_schema(tenant.id)
        async with container.tenants.lease(tenant.id) as db, read_transaction(db.engine) as conn:
            assert await migrate.current_revision(conn, schema) == migrate.head_revision("tenant")
        assert await _count(container.tenants, tenant.id) == (1 if i == 0 else 0)


@pytest.mark.postgres_only
async def test_two_processes_opening_a_new_tenant_take_one_spare(
    settings: Settings, container: Container
) -> None:
    spares = await _spares(container)
    with_spares = templates.DatabaseTemplates(spares=True)
    first = TenantDatabases(settings, new_databases=with_spares)
    second = TenantDatabases(settings, new_databases=with_spares)
    tenant_id = "ten_01JSPARECONCURRENT000000000"
    try:
        async with asyncio.TaskGroup() as group:
            for dbs in (first, second):
                group.create_task(dbs.create(tenant_id))
        assert await _spares(container) == spares[1:]
        async with first.lease(tenant_id) as db:
            await events.append_event(db, NOTE)
        assert await _count(second, tenant_id) == 1
    finally:
        await first.aclose()
        await second.aclose()
