"""The outbox (memory_changes, tenant migration 0008): every change is announced by the
transaction that made it, whoever writes (the append group commit on either SQLite path,
entries, the compactor, another process), a rolled-back one never; ids only grow; never
memory text. On both backends."""

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert

from app import ids
from app.adapters.summarisers.builtin import BuiltinSummariser
from app.config import Settings
from app.deps import Container, build
from app.services import compaction, entries, events
from app.services.changes import change_events
from app.services.changes.change_events import ChangeType
from app.services.policies import TenantPolicy
from app.services.records import EntryIn, EntryPatch, Event, EventIn, Scope
from app.storage import event_log
from app.storage.tenants import TenantDb
from app.storage.transactions import write_transaction
from tests.conftest import make_tenant
from tests.support.raw_sql import run_sql

SECRET = "Acme's ROAS target is 4.0, confidential"


async def test_every_kind_of_change_is_announced_in_order_without_text(
    container: Container, db: TenantDb
) -> None:
    start = await change_events.last_change_id(db)
    one = await events.append_event(db, EventIn(Scope.ENTITY, "ent_acme", "note", SECRET))
    batch = await events.append_events(
        db, [EventIn(Scope.PROJECT, f"prj_{i}", "note", SECRET) for i in range(3)]
    )
    e = await entries.create_entry(db, EntryIn(Scope.TEAM, "usr_1", "ROAS", SECRET))
    await entries.update_entry(db, e.id, EntryPatch(importance=5), by="key_outbox")
    await entries.update_entry(
        db, e.id, EntryPatch(), by="key_outbox"
    )  # changes nothing: no announcement
    await entries.delete_entry(db, e.id, by="key_outbox")
    seen = await change_events.changes_after(db, start, limit=100)
    assert [(c.type, c.scope, c.scope_ref, c.object_id, c.version) for c in seen] == [
        (ChangeType.EVENT_APPENDED, Scope.ENTITY, "ent_acme", one.event.id, 1),
        *[
            (ChangeType.EVENT_APPENDED, Scope.PROJECT, f"prj_{i}", a.event.id, 1)
            for i, a in enumerate(batch)
        ],
        (ChangeType.ENTRY_CREATED, Scope.TEAM, "usr_1", e.id, 1),
        (ChangeType.ENTRY_UPDATED, Scope.TEAM, "usr_1", e.id, 2),
        (ChangeType.ENTRY_DELETED, Scope.TEAM, "usr_1", e.id, 2),
    ]
    ids = [c.id for c in seen]
    assert ids == sorted(set(ids))
    assert all(c.time.tzinfo is not None for c in seen)
    assert seen[0].time == one.event.recorded_at
    assert all("ROAS" not in str(c.payload()) for c in seen)
    assert seen[0].payload() == {
        "id": str(seen[0].id),
        "type": "event.appended",
        "time": one.event.recorded_at.isoformat().replace("+00:00", "Z"),
        "scope": "entity",
        "scopeRef": "ent_acme",
        "objectId": one.event.id,
        "version": 1,
    }
    # A replay (same idempotency key, same content) stores nothing and announces nothing.
    keyed = EventIn(Scope.ENTITY, "ent_acme", "note", "x", idempotency_key="k1")
    await events.append_event(db, keyed)
    last = await change_events.last_change_id(db)
    await events.append_event(db, keyed)
    assert await change_events.last_change_id(db) == last


async def test_concurrent_appends_sharing_a_group_commit_each_get_one_change(
    db: TenantDb,
) -> None:
    start = await change_events.last_change_id(db)
    appended = await asyncio.gather(
        *(
            events.append_event(db, EventIn(Scope.ENTITY, f"ent_{i % 7}", "n", "b"))
            for i in range(200)
        )
    )
    seen = await change_events.changes_after(db, start, limit=1000)
    assert sorted(c.object_id for c in seen) == sorted(a.event.id for a in appended)


@pytest.mark.sqlite_only
@pytest.mark.parametrize("fast_path", [True, False])
async def test_both_sqlite_paths_announce_appends(settings: Settings, fast_path: bool) -> None:
    container = await build(settings.model_copy(update={"sqlite_fast_path": fast_path}))
    try:
        tenant = await make_tenant(container, "paths")
        async with container.tenants.lease(tenant.id) as db:
            small = await events.append_events(
                db, [EventIn(Scope.ENTITY, "ent_a", "n", "b") for _ in range(3)]
            )
            large = await events.append_events(  # the fast path's one-statement JSON insert
                db, [EventIn(Scope.ENTITY, "ent_b", "n", "b") for _ in range(150)]
            )
            seen = await change_events.changes_after(db, 0, limit=1000)
        assert [c.object_id for c in seen] == [a.event.id for a in [*small, *large]]
    finally:
        await container.aclose()


async def test_a_rolled_back_write_is_never_announced(db: TenantDb) -> None:
    start = await change_events.last_change_id(db)
    now = datetime.now(UTC)
    event = Event(
        id=ids.new_id("evt"),
        scope=Scope.ENTITY,
        scope_ref="ent_acme",
        kind="n",
        body="b",
        source=None,
        source_ref=None,
        occurred_at=now,
        recorded_at=now,
        compressed_at=None,
        compressed_into=None,
        idempotency_key=None,
    )
    with pytest.raises(RuntimeError):
        async with write_transaction(db.engine) as conn:
            await event_log.insert_events(conn, [event])
            raise RuntimeError("crash before commit")
    assert await change_events.changes_after(db, start, limit=10) == []


async def test_another_process_writing_entries_is_announced(
    container: Container, db: TenantDb
) -> None:
    start = await change_events.last_change_id(db)
    await run_sql(
        container,
        db.tenant_id,
        "INSERT INTO memory_entries (id, scope, scope_ref, title, summary, tags, importance,"
        " source, created_at, updated_at, version) VALUES ('mem_raw', 'institutional', NULL,"
        " 't', 's', '[]', 3, 'manual', '2026-11-30 00:00:00.000000',"
        " '2026-11-30 00:00:00.000000', 1)",
    )
    await run_sql(container, db.tenant_id, "DELETE FROM memory_entries WHERE id = 'mem_raw'")
    seen = await change_events.changes_after(db, start, limit=10)
    assert [(c.type, c.scope, c.object_id) for c in seen] == [
        (ChangeType.ENTRY_CREATED, Scope.INSTITUTIONAL, "mem_raw"),
        (ChangeType.ENTRY_DELETED, Scope.INSTITUTIONAL, "mem_raw"),
    ]


async def test_a_compaction_announces_its_entries_and_its_end(
    db: TenantDb, settings: Settings
) -> None:
    now = datetime.now(UTC)
    old = [now - timedelta(days=200 + i) for i in range(4)]
    await events.append_events(
        db, [EventIn(Scope.ENTITY, "ent_acme", "call", "call", occurred_at=at) for at in old]
    )
    start = await change_events.last_change_id(db)
    run = await compaction.run_compaction(
        db,
        policy=TenantPolicy(db.tenant_id),
        summariser=BuiltinSummariser(),
        settings=settings,
        trigger="cli",
        dry_run=False,
        now=now,
    )
    seen = await change_events.changes_after(db, start, limit=10)
    assert [(c.type, c.object_id) for c in seen] == [
        *[(ChangeType.ENTRY_CREATED, entry_id) for entry_id in run.entries_created],
        (ChangeType.COMPACTION_FINISHED, run.id),
    ]
    assert seen[-1].scope is None and seen[0].scope is Scope.ENTITY
    # A dry run changes nothing and announces nothing.
    start = await change_events.last_change_id(db)
    await compaction.run_compaction(
        db,
        policy=TenantPolicy(db.tenant_id),
        summariser=BuiltinSummariser(),
        settings=settings,
        trigger="cli",
        dry_run=True,
        now=now,
    )
    assert await change_events.changes_after(db, start, limit=10) == []


async def test_tenants_have_their_own_changes(container: Container, db: TenantDb) -> None:
    other = await make_tenant(container, "globex")
    await events.append_event(db, EventIn(Scope.ENTITY, "ent_acme", "n", "b"))
    async with container.tenants.lease(other.id) as odb:
        assert await change_events.changes_after(odb, 0, limit=10) == []


async def test_old_changes_are_pruned_in_batches(db: TenantDb) -> None:
    await events.append_events(db, [EventIn(Scope.ENTITY, "e", "n", "b") for _ in range(5)])
    assert await change_events.prune_changes(db, keep=timedelta(days=1)) == 0
    assert await change_events.prune_changes(db, keep=timedelta(seconds=-1), batch=2) == 5
    assert await change_events.changes_after(db, 0, limit=10) == []
    # Ids keep growing after every row went.
    await events.append_event(db, EventIn(Scope.ENTITY, "e", "n", "b"))
    [after] = await change_events.changes_after(db, 0, limit=10)
    assert after.id > 5


@pytest.mark.postgres_only
async def test_postgres_numbers_changes_in_commit_order(container: Container, db: TenantDb) -> None:
    """A second writer waits for the first's commit before its rows are numbered, so a
    reader that saw id n never sees a smaller id appear later."""
    from app.storage.models import changes_table

    row = {
        "type": "entry.created",
        "at": datetime.now(UTC),
        "scope": None,
        "scope_ref": None,
        "object_id": "mem_x",
        "version": 1,
    }
    async with write_transaction(db.engine) as first:
        await first.execute(insert(changes_table), [row])

        async def second() -> None:
            async with write_transaction(db.engine) as conn:
                await conn.execute(insert(changes_table), [{**row, "object_id": "mem_y"}])

        task = asyncio.create_task(second())
        await asyncio.sleep(0.3)
        assert not task.done()  # waiting for the first to commit
    await asyncio.wait_for(task, 10)
    seen = await change_events.changes_after(db, 0, limit=10)
    assert [c.object_id for c in seen] == ["mem_x", "mem_y"]
