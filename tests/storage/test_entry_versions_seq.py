"""memory_entry_versions.seq (tenant migration 0014): bigint on PostgreSQL, so an update's
copy can draw it on a Citus worker; stored versions keep their seq, new ones come after
them, and the migration goes down and up again. On every backend."""

from app.deps import Container
from app.services import entries
from app.services.data_rights import history
from app.services.records import EntryIn, EntryPatch, Scope
from app.storage.tenants import TenantDb
from tests.storage.test_entries_revision import migrate_to
from tests.support.raw_sql import run_sql

ENTRY = EntryIn(Scope.ENTITY, "ent_acme", "ROAS decision", "Acme targets ROAS 4.0.")
# A version as written before 0014, by a statement that names no seq.
OLD_VERSION = (
    "INSERT INTO memory_entry_versions (entry_id, version, scope, scope_ref, title, summary,"
    " tags, importance, source, created_at, updated_at, change, changed_at, changed_by)"
    " VALUES ('mem_old', {v}, 'entity', 'ent_acme', 'Old', 'kept', '[]', 3, 'agent',"
    " '2026-11-30 00:00:00.000000', '2026-11-30 00:00:00.000000', 'update',"
    " '2026-11-30 00:00:00.000000', 'key_old')"
)
TYPES = (
    "SELECT c.data_type, s.data_type FROM information_schema.columns c"
    " JOIN information_schema.sequences s ON s.sequence_schema = c.table_schema"
    " AND s.sequence_name = pg_get_serial_sequence('memory_entry_versions', 'seq')::regclass::text"
    " WHERE c.table_schema = current_schema() AND c.table_name = 'memory_entry_versions'"
    " AND c.column_name = 'seq'"
)


async def seqs(container: Container, db: TenantDb, entry_id: str) -> list[int]:
    sql = f"SELECT seq FROM memory_entry_versions WHERE entry_id = '{entry_id}' ORDER BY version"
    (rows,) = await run_sql(container, db.tenant_id, sql)
    return [int(r[0]) for r in rows]


async def types(container: Container, db: TenantDb) -> tuple[str, str] | None:
    if container.settings.database_url is None:
        return None  # SQLite: the 64-bit rowid, untouched by the migration
    ((row,),) = await run_sql(container, db.tenant_id, TYPES)
    return (row[0], row[1])


async def test_stored_versions_keep_their_seq_and_new_ones_come_after(
    container: Container, db: TenantDb
) -> None:
    on_postgres = container.settings.database_url is not None
    await migrate_to(db, "0012")
    await run_sql(container, db.tenant_id, OLD_VERSION.format(v=1), OLD_VERSION.format(v=2))
    old = await seqs(container, db, "mem_old")
    assert len(old) == 2
    if on_postgres:
        assert await types(container, db) == ("integer", "integer")

    await migrate_to(db, "head")
    assert await seqs(container, db, "mem_old") == old
    if on_postgres:
        assert await types(container, db) == ("bigint", "bigint")
    await migrate_to(db, "0012")  # down: integer again, the rows kept
    assert await seqs(container, db, "mem_old") == old
    if on_postgres:
        assert await types(container, db) == ("integer", "integer")
    await migrate_to(db, "head")

    e = await entries.create_entry(db, ENTRY)
    for importance in (4, 5):
        await entries.update_entry(db, e.id, EntryPatch(importance=importance), by="key_test")
    new = await seqs(container, db, e.id)
    assert len(new) == 2 and min(new) > max(old) and new[0] != new[1]
    page = await history.versions(db, e.id, first=5, after=None)
    assert [edge.node.importance for edge in page.edges] == [4, 3]  # newest first
