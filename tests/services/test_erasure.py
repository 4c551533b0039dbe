"""Erasure through its service: a subject's or one event's data gone in one transaction,
summaries erased and their other events released, receipts, and no trace in the files."""

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, func, select, text

from app.adapters.summarisers.builtin import BuiltinSummariser
from app.config import Settings
from app.errors import InvalidInput, NotFound, TooLarge
from app.services import compaction, entries, events
from app.services.data_rights import erasure, history
from app.services.policies import TenantPolicy
from app.services.records import EntryFilter, EntryIn, EntryPatch, EventFilter, EventIn, Scope
from app.storage.models import changes_table as ch
from app.storage.models import entry_sources_table as src
from app.storage.models import entry_versions_table as ve
from app.storage.models import events_table as ev
from app.storage.models import webhook_deliveries_table as wd
from app.storage.models import webhook_endpoints_table as we
from app.storage.tenants import TenantDb
from app.storage.transactions import read_rows, write_transaction
from app.storage.types import utcnow
from tests.support.pooled import pooled_pragmas

NOW = datetime(2026, 6, 1, tzinfo=UTC)


async def seed(db: TenantDb, ref: str, bodies: list[str], *, days_ago: float = 200) -> list[str]:
    batch = [
        EventIn(Scope.ENTITY, ref, "call_summary", b, occurred_at=NOW - timedelta(days=days_ago))
        for b in bodies
    ]
    return [a.event.id for a in await events.append_events(db, batch)]


async def compact(db: TenantDb, settings: Settings) -> None:
    await compaction.run_compaction(
        db,
        policy=TenantPolicy(db.tenant_id),
        summariser=BuiltinSummariser(),
        settings=settings.model_copy(update={"compaction_min_events": 2}),
        trigger="cli",
        dry_run=False,
        now=NOW,
    )


async def count(db: TenantDb, table: object, *conds: object) -> int:
    rows = await read_rows(db.engine, select(func.count()).select_from(table).where(*conds))  # type: ignore[arg-type]
    return int(rows[0][0])


async def test_erase_subject_takes_everything_of_it_and_nothing_else(
    db: TenantDb, settings: Settings
) -> None:
    await seed(db, "ent_a", [f"Acme call {i} about pricing" for i in range(4)])
    kept = await seed(db, "ent_b", [f"Beta call {i} about pricing" for i in range(3)])
    await compact(db, settings)  # one summary per subject
    own = await entries.create_entry(db, EntryIn(Scope.ENTITY, "ent_a", "Acme note", "x"))
    await entries.update_entry(db, own.id, EntryPatch(summary="y"), by="key_1")
    gone = await entries.create_entry(db, EntryIn(Scope.ENTITY, "ent_a", "Old note", "z"))
    await entries.delete_entry(db, gone.id, by="key_1")  # history outlives the entry
    b_entries = await entries.list_entries(db, EntryFilter(scope_ref="ent_b"), first=10, after=None)

    receipt = await erasure.erase_subject(db, Scope.ENTITY, "ent_a", by="key_1")

    assert (receipt.target, receipt.scope, receipt.scope_ref, receipt.requested_by) == (
        "subject",
        Scope.ENTITY,
        "ent_a",
        "key_1",
    )
    assert (receipt.events, receipt.entries, receipt.versions, receipt.released) == (4, 2, 2, 0)
    assert await count(db, ev, ev.c.scope_ref == "ent_a") == 0
    assert await count(db, ve, ve.c.scope_ref == "ent_a") == 0
    left = await entries.list_entries(db, EntryFilter(scope_ref="ent_a"), first=10, after=None)
    assert left.edges == []
    found = await entries.list_entries(db, EntryFilter(search="Acme pricing"), first=10, after=None)
    assert all(e.node.scope_ref == "ent_b" for e in found.edges)
    page = await events.list_events(db, EventFilter(search="Acme"), first=10, after=None)
    assert page.edges == []
    # ent_b untouched: its events still folded into its summary
    rows: Any = await read_rows(
        db.engine, select(ev.c.id, ev.c.compressed_into).where(ev.c.scope_ref == "ent_b")
    )
    assert sorted(r[0] for r in rows) == sorted(kept) and all(r[1] for r in rows)
    after = await entries.list_entries(db, EntryFilter(scope_ref="ent_b"), first=10, after=None)
    assert after.edges == b_entries.edges
    # the receipt is listed, newest first
    listed = await erasure.list_erasures(db, first=10, after=None)
    assert [e.node for e in listed.edges] == [receipt]


async def test_the_log_refuses_any_other_delete(db: TenantDb) -> None:
    await seed(db, "ent_a", ["one"])
    with pytest.raises(Exception, match="append-only"):
        async with write_transaction(db.engine) as conn:
            await conn.execute(delete(ev))
    assert await count(db, ev) == 1


async def test_erase_event_erases_its_summary_and_releases_the_others(
    db: TenantDb, settings: Settings
) -> None:
    ids = await seed(db, "ent_a", ["Acme wants ROAS 4", "Acme SSN 123-45-6789 zqxpii", "Acme paid"])
    await compact(db, settings)
    summary_id = (await events.get_event(db, ids[0])).compressed_into  # type: ignore[union-attr]
    assert summary_id is not None
    await entries.update_entry(db, summary_id, EntryPatch(importance=5), by="key_1")

    receipt = await erasure.erase_event(db, ids[1], by="key_9")

    assert (receipt.target, receipt.event_id, receipt.scope_ref) == ("event", ids[1], "ent_a")
    assert (receipt.events, receipt.entries, receipt.versions, receipt.released) == (1, 1, 1, 2)
    assert await events.get_event(db, ids[1]) is None
    assert await entries.get_entry(db, summary_id) is None
    assert (await history.versions(db, summary_id, first=10, after=None)).edges == []
    assert await count(db, src, src.c.entry_id == summary_id) == 0
    for other in (ids[0], ids[2]):
        e = await events.get_event(db, other)
        assert e is not None and e.compressed_at is None and e.compressed_into is None
    await compact(db, settings)  # the next run summarises the two without the erased one
    again = await entries.list_entries(db, EntryFilter(scope_ref="ent_a"), first=10, after=None)
    assert len(again.edges) == 1 and "zqxpii" not in again.edges[0].node.summary
    assert "ROAS" in again.edges[0].node.summary

    with pytest.raises(NotFound):
        await erasure.erase_event(db, ids[1], by="key_9")


async def test_limits_and_bad_input(db: TenantDb) -> None:
    await seed(db, "ent_a", ["a", "b", "c"])
    with pytest.raises(TooLarge) as info:
        await erasure.erase_subject(db, Scope.ENTITY, "ent_a", by="k", max_events=2)
    assert info.value.field == ["scopeRef"] and "at most 2" in info.value.message
    assert await count(db, ev) == 3  # nothing half-done
    with pytest.raises(InvalidInput) as bad:
        await erasure.erase_subject(db, Scope.ENTITY, None, by="k")
    assert bad.value.field == ["scopeRef"]
    with pytest.raises(InvalidInput):
        await erasure.erase_subject(db, Scope.INSTITUTIONAL, "x", by="k")
    empty = await erasure.erase_subject(db, Scope.TEAM, "nobody", by="k")
    assert (empty.events, empty.entries, empty.versions) == (0, 0, 0)
    with pytest.raises(InvalidInput):
        await erasure.list_erasures(db, first=10, after="garbage")


async def test_institutional_subject(db: TenantDb) -> None:
    await events.append_events(db, [EventIn(Scope.INSTITUTIONAL, None, "note", "house rule")])
    await seed(db, "ent_a", ["a"])
    receipt = await erasure.erase_subject(db, Scope.INSTITUTIONAL, None, by="k")
    assert receipt.events == 1 and await count(db, ev) == 1


def _raw(path: Path) -> bytes:
    data = b""
    for suffix in ("", "-wal", "-journal"):
        p = Path(str(path) + suffix)
        if p.exists():
            data += p.read_bytes()
    return data


async def test_no_trace_in_the_database_files(db: TenantDb, settings: Settings) -> None:
    if db.engine.dialect.name != "sqlite":
        pytest.skip("reads the SQLite file's bytes (PostgreSQL: docs/erasure.md)")
    marker = "zqxmarkerq7w3"
    ids = await seed(db, "ent_a", [f"Acme call {i}: budget" for i in range(3)])
    pii = await seed(db, "ent_a", [f"Caller gave card {marker} by mistake"])
    await seed(db, "ent_b", [f"Beta call {i}" for i in range(50)])
    await compact(db, settings)  # the summary quotes the marker too
    summary = (await events.get_event(db, pii[0])).compressed_into  # type: ignore[union-attr]
    assert summary is not None
    await entries.update_entry(db, summary, EntryPatch(title=f"About {marker}"), by="key_1")
    await entries.update_entry(db, summary, EntryPatch(title="About the calls"), by="key_1")
    path = Path(str(db.engine.url.database))
    assert marker.encode() in _raw(path)

    await erasure.erase_event(db, pii[0], by="key_1")

    assert marker.encode() not in _raw(path)
    assert marker.encode() not in _raw(path).lower()
    async with write_transaction(db.engine) as conn:  # nor in any index, by any query
        for table in ("memory_events_fts", "memory_entries_fts"):
            hit = await conn.execute(
                text(f"SELECT count(*) FROM {table} WHERE {table} MATCH :m"), {"m": marker}
            )
            assert hit.scalar_one() == 0
    assert all([await events.get_event(db, i) is not None for i in ids])


async def _queue_every_change(db: TenantDb) -> None:
    """One endpoint with a delivery of every change so far (as the worker's fan-out queues)."""
    now = utcnow()
    async with write_transaction(db.engine) as conn:
        await conn.execute(
            we.insert().values(
                id="whk_1",
                url="https://hooks.example.com/x",
                types=[],
                secret="s",
                status="enabled",
                created_at=now,
                updated_at=now,
                cursor=0,
            )
        )
        rows = (await conn.execute(select(ch.c.id, ch.c.type))).all()
        await conn.execute(
            wd.insert(),
            [
                {
                    "id": f"dlv_{i}",
                    "endpoint_id": "whk_1",
                    "change_id": i,
                    "scope_key": "k",
                    "type": t,
                    "payload": "{}",
                    "status": "pending",
                    "attempts": 0,
                    "next_attempt_at": now,
                    "created_at": now,
                }
                for i, t in rows
            ],
        )


async def test_erasure_takes_the_change_feed_rows_naming_what_it_erased(
    db: TenantDb, settings: Settings
) -> None:
    a = await seed(db, "ent_a", [f"Acme call {i}" for i in range(3)])
    b = await seed(db, "ent_b", [f"Beta call {i}" for i in range(3)])
    await compact(db, settings)
    own = await entries.create_entry(db, EntryIn(Scope.ENTITY, "ent_a", "Acme note", "x"))
    await entries.update_entry(db, own.id, EntryPatch(summary="y"), by="key_1")
    summary_a = (await events.get_event(db, a[0])).compressed_into  # type: ignore[union-attr]
    summary_b = (await events.get_event(db, b[0])).compressed_into  # type: ignore[union-attr]
    await _queue_every_change(db)
    kept_b = await count(db, ch, ch.c.scope_ref == "ent_b")
    assert await count(db, ch, ch.c.object_id.in_([*a, own.id, summary_a])) == 6

    await erasure.erase_subject(db, Scope.ENTITY, "ent_a", by="key_1")

    rows: Any = await read_rows(
        db.engine, select(ch.c.type, ch.c.object_id).where(ch.c.scope_ref == "ent_a")
    )
    # only the erasure's own announcements are left: they tell listeners to drop copies
    assert sorted(rows) == sorted([("entry.deleted", own.id), ("entry.deleted", summary_a)])
    assert await count(db, ch, ch.c.object_id.in_(a)) == 0
    assert await count(db, ch, ch.c.scope_ref == "ent_b") == kept_b
    delivered: Any = await read_rows(db.engine, select(wd.c.change_id))
    left = {r[0] for r in await read_rows(db.engine, select(ch.c.id))}
    assert delivered and {r[0] for r in delivered} <= left

    await erasure.erase_event(db, b[1], by="key_1")  # its summary goes with it
    assert await count(db, ch, ch.c.object_id == b[1]) == 0
    assert await count(db, ch, ch.c.object_id == summary_b, ch.c.type != "entry.deleted") == 0
    assert await count(db, ch, ch.c.object_id.in_([b[0], b[2]])) == 2
    assert await count(db, wd, wd.c.change_id.notin_(select(ch.c.id))) == 0


async def test_the_erasing_connection_goes_back_to_the_pool_as_it_came(db: TenantDb) -> None:
    """The erasure raises its connection's page cache and turns secure_delete on; both are
    set back, so no pooled connection keeps a large cache or pays secure_delete afterwards."""
    if db.engine.dialect.name != "sqlite":
        pytest.skip("PRAGMAs of SQLite connections")

    before = await pooled_pragmas(db.engine, "cache_size", "secure_delete")
    await seed(db, "ent_a", ["Acme call: budget"])
    await erasure.erase_subject(db, Scope.ENTITY, "ent_a", by="key_1")
    assert await pooled_pragmas(db.engine, "cache_size", "secure_delete") == before
