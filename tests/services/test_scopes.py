"""memoryScopes through its service: the per-scope summary agrees with counting the tables
after every kind of write (appends, concurrent appends, entries, compaction, erasure,
import), pages by cursor within its limits, and is rebuilt by its migration."""

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, literal, select, text, union_all

from app.adapters.summarisers.builtin import BuiltinSummariser
from app.config import Settings
from app.errors import InvalidInput
from app.services import compaction, entries, events, scopes
from app.services.data_rights import erasure
from app.services.policies import TenantPolicy
from app.services.records import EntryIn, EntryPatch, EventFilter, EventIn, Scope
from app.storage import postgres
from app.storage.models import entries_table as en
from app.storage.models import events_table as ev
from app.storage.scopes import COUNT_EVENTS_SQL
from app.storage.tenants import TenantDb
from app.storage.transactions import read_rows, write_transaction
from tests.conftest import migrate_tenant

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def event(ref: str | None, body: str = "a call", *, days_ago: float = 0) -> EventIn:
    scope = Scope.INSTITUTIONAL if ref is None else Scope.ENTITY
    return EventIn(scope, ref, "call_summary", body, occurred_at=NOW - timedelta(days=days_ago))


async def summary(db: TenantDb) -> dict[tuple[str, str | None], tuple[int, int]]:
    page = await scopes.list_scopes(db, scope=None, first=100, after=None)
    assert not page.has_next_page
    return {
        (e.node.scope.value, e.node.scope_ref): (e.node.event_count, e.node.entry_count)
        for e in page.edges
    }


async def truth(db: TenantDb) -> dict[tuple[str, str | None], tuple[int, int]]:
    """What counting the tables says (the GROUP BY the summary saves every call)."""
    counted = union_all(
        select(ev.c.scope, ev.c.scope_ref, func.count().label("n"), literal(0).label("m")).group_by(
            ev.c.scope, ev.c.scope_ref
        ),
        select(en.c.scope, en.c.scope_ref, literal(0), func.count()).group_by(
            en.c.scope, en.c.scope_ref
        ),
    )
    out: dict[tuple[str, str | None], tuple[int, int]] = {}
    rows: Any = await read_rows(db.engine, select(counted.subquery()))
    for scope, ref, n, m in rows:
        a, b = out.get((scope, ref), (0, 0))
        out[(scope, ref)] = (a + int(n), b + int(m))
    return out


async def test_the_summary_follows_every_write(db: TenantDb, settings: Settings) -> None:
    assert await summary(db) == {}
    await events.append_event(db, event("ent_a"))
    await events.append_events(db, [event("ent_a"), event("ent_b"), event(None)])
    await events.append_events(
        db, [event("ent_a", f"old call {i}", days_ago=200) for i in range(3)]
    )
    assert (
        await summary(db)
        == await truth(db)
        == {
            ("entity", "ent_a"): (5, 0),
            ("entity", "ent_b"): (1, 0),
            ("institutional", None): (1, 0),
        }
    )
    note = await entries.create_entry(db, EntryIn(Scope.TEAM, "usr_1", "Team note", "x"))
    await entries.update_entry(db, note.id, EntryPatch(summary="y"), by="key_1")
    other = await entries.create_entry(db, EntryIn(Scope.ENTITY, "ent_b", "B note", "z"))
    await entries.delete_entry(db, other.id, by="key_1")
    await compaction.run_compaction(
        db,
        policy=TenantPolicy(db.tenant_id),
        summariser=BuiltinSummariser(),
        settings=settings.model_copy(update={"compaction_min_events": 2}),
        trigger="cli",
        dry_run=False,
        now=NOW,
    )
    assert await summary(db) == await truth(db)
    assert (await summary(db))[("entity", "ent_a")] == (5, 1)  # the compactor's summary
    assert (await summary(db))[("team", "usr_1")] == (0, 1)

    # Erasure: one event, then a whole subject (its row goes once nothing is left).
    b_event = (await events.append_event(db, event("ent_b", "second"))).event
    await erasure.erase_event(db, b_event.id, by="key_1")
    assert (await summary(db))[("entity", "ent_b")] == (1, 0)
    await erasure.erase_subject(db, Scope.ENTITY, "ent_a", by="key_1")
    assert await summary(db) == await truth(db)
    assert ("entity", "ent_a") not in await summary(db)


async def test_last_activity_moves_with_appends_and_entry_writes(db: TenantDb) -> None:
    first = (await events.append_event(db, event("ent_a"))).event
    page = await scopes.list_scopes(db, scope=None, first=10, after=None)
    assert page.edges[0].node.last_activity_at == first.recorded_at
    entry = await entries.create_entry(db, EntryIn(Scope.ENTITY, "ent_a", "Note", "x"))
    updated = await entries.update_entry(db, entry.id, EntryPatch(summary="y"), by="key_1")
    page = await scopes.list_scopes(db, scope=None, first=10, after=None)
    assert page.edges[0].node.last_activity_at == max(updated.updated_at, first.recorded_at)


async def test_concurrent_appends_are_all_counted(db: TenantDb) -> None:
    refs = [f"ent_{i}" for i in range(4)]

    async def writer(n: int) -> None:
        for j in range(10):
            if j % 3 == 0:
                await events.append_events(db, [event(refs[(n + k) % 4]) for k in range(3)])
            else:
                await events.append_event(db, event(refs[(n + j) % 4]))

    await asyncio.gather(*(writer(n) for n in range(8)))
    counted = await summary(db)
    assert counted == await truth(db)
    assert sum(n for n, _ in counted.values()) == 8 * (4 * 3 + 6)


async def test_pages_by_cursor_and_filters_by_scope(db: TenantDb) -> None:
    await events.append_events(db, [event(f"ent_{i:02}") for i in range(7)] + [event(None)])
    await entries.create_entry(db, EntryIn(Scope.PROJECT, "prj_1", "Plan", "x"))
    seen: list[tuple[str, str | None]] = []
    after = None
    while True:
        page = await scopes.list_scopes(db, scope=None, first=3, after=after)
        seen += [(e.node.scope.value, e.node.scope_ref) for e in page.edges]
        if not page.has_next_page:
            break
        after = page.end_cursor
    assert seen == sorted(await truth(db), key=lambda k: (k[0], k[1] or ""))
    assert len(seen) == 9
    only = await scopes.list_scopes(db, scope=Scope.PROJECT, first=10, after=None)
    assert [(e.node.scope, e.node.scope_ref) for e in only.edges] == [(Scope.PROJECT, "prj_1")]


@pytest.mark.parametrize(
    ("first", "after", "field", "message"),
    [
        (101, None, "first", "first is capped at 100, got 101"),
        (-1, None, "first", "first must not be negative"),
        (10, "not-a-cursor", "after", "after is not a valid cursor"),
    ],
)
async def test_limits_and_bad_cursors_are_named(
    db: TenantDb, first: int, after: str | None, field: str, message: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        await scopes.list_scopes(db, scope=None, first=first, after=after)
    assert caught.value.field == [field]
    assert message in str(caught.value)


async def test_a_cursor_of_another_list_is_refused(db: TenantDb) -> None:
    await events.append_events(db, [event("ent_a"), event("ent_b")])
    page = await events.list_events(db, EventFilter(), first=1, after=None)
    with pytest.raises(InvalidInput, match="not a cursor of this list"):
        await scopes.list_scopes(db, scope=None, first=1, after=page.end_cursor)


async def migrate_to(db: TenantDb, to: str) -> None:
    async with write_transaction(db.engine) as conn:
        if conn.dialect.name == "postgresql":
            schema = postgres.schema_of(conn)
            await conn.execute(text(f'SET LOCAL search_path TO "{schema}"'))
        await conn.run_sync(migrate_tenant, to)


async def test_the_migration_counts_existing_memory(db: TenantDb) -> None:
    await events.append_events(db, [event("ent_a"), event("ent_a"), event(None)])
    await entries.create_entry(db, EntryIn(Scope.ENTITY, "ent_a", "Note", "x"))
    await entries.create_entry(db, EntryIn(Scope.TEAM, "usr_1", "Team", "x"))
    before: Any = await summary(db)
    await migrate_to(db, "-1")
    await migrate_to(db, "head")
    assert await summary(db) == before == await truth(db)


async def test_the_writers_count_reads_only_the_new_rows(db: TenantDb) -> None:
    """SQLite: the summary's upsert reads the inserted rows by seq, never the whole log."""
    if db.engine.dialect.name != "sqlite":
        pytest.skip("the statement is SQLite's")
    async with write_transaction(db.engine) as conn:
        plan = (
            await conn.exec_driver_sql(
                "EXPLAIN QUERY PLAN " + COUNT_EVENTS_SQL.replace(":after", "0")
            )
        ).all()
    details = [row[-1] for row in plan]
    assert any("INTEGER PRIMARY KEY (rowid>?)" in d for d in details), details
    assert not any(d.startswith("SCAN memory_events") for d in details), details
