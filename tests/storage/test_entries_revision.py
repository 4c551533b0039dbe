"""memory_entries_revision (tenant migration 0005): a number that database triggers change in
the same transaction as any insert, update or delete of an entry, whoever writes it, and
that nothing else changes; the migration goes down and up again. On both backends."""

import pytest
from sqlalchemy import delete, text

from app.deps import Container
from app.services import entries, events
from app.services.records import EntryFilter, EntryIn, EntryPatch, EventIn, Scope
from app.services.search import page_cache
from app.storage import migrate, postgres
from app.storage.models import entries_table
from app.storage.tenants import TenantDb
from app.storage.transactions import write_transaction
from tests.conftest import make_tenant, migrate_tenant
from tests.support.raw_sql import revision, run_sql

ENTRY = EntryIn(Scope.ENTITY, "ent_acme", "ROAS decision", "Acme targets ROAS 4.0.")
RAW_INSERT = (
    "INSERT INTO memory_entries (id, scope, scope_ref, title, summary, tags, importance,"
    " source, created_at, updated_at, version) VALUES ('mem_raw', 'entity', 'ent_acme',"
    " 'Raw ROAS', 'written by another process', '[]', 3, 'compactor',"
    " '2026-11-30 00:00:00.000000', '2026-11-30 00:00:00.000000', 1)"
)


async def test_every_write_to_entries_changes_it_and_nothing_else_does(
    container: Container, db: TenantDb
) -> None:
    seen = [await revision(container, db.tenant_id)]

    async def changed() -> bool:
        seen.append(await revision(container, db.tenant_id))
        return seen[-1] != seen[-2]

    e = await entries.create_entry(db, ENTRY)
    assert await changed()
    await entries.update_entry(db, e.id, EntryPatch(importance=5), by="key_test")
    assert await changed()
    # Reads, appends (all day long), a search and an update that changes nothing do not.
    await events.append_event(db, EventIn(Scope.ENTITY, "ent_acme", "note", "ROAS is fine"))
    await entries.list_entries(db, EntryFilter(search="ROAS"), first=5, after=None)
    await entries.update_entry(db, e.id, EntryPatch(), by="key_test")
    assert not await changed()
    await entries.delete_entry(db, e.id, by="key_test")
    assert await changed()
    # Another process's writes, through a connection of its own.
    await run_sql(container, db.tenant_id, RAW_INSERT)
    assert await changed()
    await run_sql(container, db.tenant_id, "UPDATE memory_entries SET importance = 1")
    assert await changed()
    await run_sql(container, db.tenant_id, "DELETE FROM memory_entries")
    assert await changed()
    assert len(set(seen)) == len(seen) - 1  # never back to an earlier number


async def test_it_changes_with_the_write_commit_never_before(
    container: Container, db: TenantDb
) -> None:
    before = await revision(container, db.tenant_id)
    async with write_transaction(db.engine) as conn:
        await entries.insert_entry(conn, ENTRY)
        # Inside the writer's transaction, another connection still reads the old number.
        assert await revision(container, db.tenant_id) == before
    after = await revision(container, db.tenant_id)
    assert after != before
    with pytest.raises(RuntimeError):
        async with write_transaction(db.engine) as conn:
            await entries.insert_entry(conn, ENTRY)
            raise RuntimeError("rolled back")
    assert await revision(container, db.tenant_id) == after


async def test_each_tenant_starts_at_a_random_number(container: Container) -> None:
    a, b = await make_tenant(container, "a"), await make_tenant(container, "b")
    assert await revision(container, a.id) != await revision(container, b.id)


async def migrate_to(db: TenantDb, to: str) -> None:
    async with write_transaction(db.engine) as conn:
        if conn.dialect.name == "postgresql":
            # What migrate.upgrade does: unqualified names in the migrations are the schema's.
            schema = postgres.schema_of(conn)
            await conn.execute(text(f'SET LOCAL search_path TO "{schema}"'))
        await conn.run_sync(migrate_tenant, to)


async def revision_objects(container: Container, tenant_id: str) -> set[str]:
    """Names of the tables, triggers and functions of migration 0005 in the tenant."""
    if container.settings.database_url is None:
        sql = ["SELECT name FROM sqlite_master WHERE name LIKE 'memory_entries_revision%'"]
    else:
        sql = [
            "SELECT table_name FROM information_schema.tables WHERE table_schema ="
            " current_schema() AND table_name LIKE 'memory_entries_revision%'",
            "SELECT tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN"
            " pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = current_schema()"
            " AND tgname LIKE 'memory_entries_revision%'",
            "SELECT proname FROM pg_proc p JOIN pg_namespace s ON s.oid = p.pronamespace"
            " WHERE s.nspname = current_schema() AND proname LIKE 'memory_entries_revision%'",
        ]
    return {row[0] for rows in await run_sql(container, tenant_id, *sql) for row in rows}


async def test_the_migration_goes_down_and_up(container: Container, db: TenantDb) -> None:
    at_head = await revision_objects(container, db.tenant_id)
    if container.settings.database_url is None:
        assert at_head == {"memory_entries_revision"} | {
            f"memory_entries_revision_{e}" for e in ("insert", "update", "delete")
        }
    else:
        assert at_head == {"memory_entries_revision", "memory_entries_revision_bump"}
    await entries.create_entry(db, ENTRY)
    old = await revision(container, db.tenant_id)

    await migrate_to(db, "0004")
    assert await revision_objects(container, db.tenant_id) == set()
    async with write_transaction(db.engine) as conn:
        assert await migrate.current_revision(conn, postgres.schema_of(conn)) == "0004"
    e = await entries.create_entry(db, ENTRY)  # entries are written as before 0005
    async with write_transaction(db.engine) as conn:  # no entry history before 0007
        await conn.execute(delete(entries_table).where(entries_table.c.id == e.id))

    await migrate_to(db, "head")
    assert await revision_objects(container, db.tenant_id) == at_head
    new = await revision(container, db.tenant_id)
    assert new != old  # started again at a random number, not where it was
    await entries.create_entry(db, ENTRY)
    assert await revision(container, db.tenant_id) != new
    assert await page_cache.read_revision(db) == await revision(container, db.tenant_id)
