"""A tenant with every kind of record, for the export and import tests: events (some
with idempotency keys and source refs), manual entries, a compaction run that folded old
events into a summary (provenance, compressed events) and an LLM call."""

from datetime import UTC, datetime, timedelta

from sqlalchemy import insert

from app.deps import Container
from app.services import compaction, entries, events
from app.services.compaction import RunTrigger
from app.services.records import EntryIn, EntryPatch, EntrySource, EventIn, Scope
from app.storage.models import llm_calls_table
from app.storage.tenants import TenantDb
from app.storage.transactions import write_transaction

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


async def fill(
    container: Container, tenant_id: str, db: TenantDb, *, ref: str = "ent_acme"
) -> None:
    old = NOW - timedelta(days=200)
    batch = [
        EventIn(
            scope=Scope.ENTITY, scope_ref=ref, kind="call_summary",
            body=f"Call {i} with {ref}: ROAS target {i}.0, budget moves to search.",
            source="inbox", source_ref=f"msg_{i}",
            occurred_at=old + timedelta(hours=i), idempotency_key=f"{ref}-old-{i}",
        )
        for i in range(5)
    ]  # fmt: skip
    batch += [
        EventIn(scope=Scope.ENTITY, scope_ref=ref, kind="decision",
                body=f"Recent decision {i} for {ref} on the display budget.",
                occurred_at=NOW - timedelta(days=i))
        for i in range(4)
    ]  # fmt: skip
    batch.append(
        EventIn(
            scope=Scope.INSTITUTIONAL,
            scope_ref=None,
            kind="policy",
            body="Every client report goes out on Mondays.",
            occurred_at=NOW,
        )
    )
    await events.append_events(db, batch)
    await entries.create_entry(db, EntryIn(
        scope=Scope.ENTITY, scope_ref=ref, title=f"{ref} ROAS target is 4.0",
        summary="Agreed on the quarterly call.", tags=["decision", "roas"], importance=4,
        source=EntrySource.CALL,
    ))  # fmt: skip
    second = await entries.create_entry(db, EntryIn(
        scope=Scope.INSTITUTIONAL, scope_ref=None, title="Reports go out on Mondays",
        summary="Weekly cadence for every client.", tags=["process"], importance=3,
        source=EntrySource.MANUAL,
    ))  # fmt: skip
    await entries.update_entry(db, second.id, EntryPatch(importance=5, tags=["process", "weekly"]))
    run = await compaction.compact_tenant(container, tenant_id, trigger=RunTrigger.CLI, now=NOW)
    assert run.events_compressed == 5, run
    async with write_transaction(db.engine) as conn:
        await conn.execute(insert(llm_calls_table).values(
            id=f"llm_{ref}", run_id=run.id, created_at=NOW, model="m", status="done",
            estimated_tokens=10, prompt_tokens=8, completion_tokens=2,
        ))  # fmt: skip
