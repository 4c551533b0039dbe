"""A tenant with every kind of record, for the export and import tests: events (some
with idempotency keys and source refs), manual entries, a compaction run that folded old
events into a summary (provenance, compressed events) and an LLM call; and files made by
hand from record lines."""

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import insert

from app import ids
from app.deps import Container
from app.services import compaction, entries, events
from app.services.compaction import RunTrigger
from app.services.context import loader
from app.services.data_rights import portability
from app.services.records import (
    EntryFilter,
    EntryIn,
    EntryPatch,
    EntrySource,
    EventFilter,
    EventIn,
    Scope,
)
from app.storage.models import llm_calls_table
from app.storage.tenants import TenantDb
from app.storage.transactions import write_transaction

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)

NOT_AN_ID = "mem_01m9nonexist00000000000000"  # the issue's: no ULID holds an o or an i
ABSENT = "mem_01m9zzzzzzzzzzzzzzzzzzzzzz"  # an entry id, of no entry


def version_line(entry_id: str, version: int = 1, change: str = "update") -> bytes:
    """An entry_version record line, made by hand."""
    record = {
        "record": "entry_version",
        "entry_id": entry_id,
        "version": version,
        "scope": "entity",
        "scope_ref": "ent_acme",
        "title": "Never was",
        "summary": "Invented.",
        "tags": [],
        "importance": 3,
        "source": "manual",
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
        "change": change,
        "changed_at": "2026-01-02T00:00:00Z",
        "changed_by": "compactor",
    }
    return orjson.dumps(record) + b"\n"


def rebuild(lines: list[bytes]) -> bytes:
    """A file of these record lines with a valid header and trailer (counts, checksum)."""
    counts: dict[str, int] = {}
    for line in lines:
        kind = orjson.loads(line)["record"]
        counts[kind] = counts.get(kind, 0) + 1
    digest = hashlib.sha256(b"".join(lines)).hexdigest()
    return portability.header(None, None) + b"".join(lines) + portability.trailer(counts, digest)


async def fill(
    container: Container, tenant_id: str, db: TenantDb, *, ref: str = "ent_acme"
) -> None:
    old = NOW - timedelta(days=200)
    batch = [
        EventIn(
            scope=Scope.ENTITY,
            scope_ref=ref,
            kind="call_summary",
            body=f"Call {i} with {ref}: ROAS target {i}.0, budget moves to search.",
            source="inbox",
            source_ref=f"msg_{i}",
            occurred_at=old + timedelta(hours=i),
            idempotency_key=f"{ref}-old-{i}",
        )
        for i in range(5)
    ]
    batch += [
        EventIn(
            scope=Scope.ENTITY,
            scope_ref=ref,
            kind="decision",
            body=f"Recent decision {i} for {ref} on the display budget.",
            occurred_at=NOW - timedelta(days=i),
        )
        for i in range(4)
    ]
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
    await entries.create_entry(
        db,
        EntryIn(
            scope=Scope.ENTITY,
            scope_ref=ref,
            title=f"{ref} ROAS target is 4.0",
            summary="Agreed on the quarterly call.",
            tags=["decision", "roas"],
            importance=4,
            source=EntrySource.CALL,
        ),
    )
    second = await entries.create_entry(
        db,
        EntryIn(
            scope=Scope.INSTITUTIONAL,
            scope_ref=None,
            title="Reports go out on Mondays",
            summary="Weekly cadence for every client.",
            tags=["process"],
            importance=3,
            source=EntrySource.MANUAL,
        ),
    )
    await entries.update_entry(
        db, second.id, EntryPatch(importance=5, tags=["process", "weekly"]), by="key_portability"
    )
    run = await compaction.compact_tenant(container, tenant_id, trigger=RunTrigger.CLI, now=NOW)
    assert run.events_compressed == 5, run
    async with write_transaction(db.engine) as conn:
        await conn.execute(
            insert(llm_calls_table).values(
                id=ids.new_id(ids.LLM_CALL),
                run_id=run.id,
                created_at=NOW,
                model="m",
                status="done",
                estimated_tokens=10,
                prompt_tokens=8,
                completion_tokens=2,
            )
        )


async def _all_pages(fetch: Any) -> list[Any]:
    out, after = [], None
    while True:
        page = await fetch(after)
        out.append([(e.cursor, e.node, e.score) for e in page.edges])
        if not page.has_next_page:
            return out
        after = page.end_cursor


async def answers(db: TenantDb, *, ref: str = "ent_acme") -> tuple[dict[str, Any], dict[str, Any]]:
    """What the tenant answers to the queries of every surface: (those that are the same on
    every backend, those that rank by full-text relevance, the same only on one backend)."""
    plain: dict[str, Any] = {}
    ranked: dict[str, Any] = {}
    for name, flt in {
        "events": EventFilter(),
        "events.scope": EventFilter(scope=Scope.ENTITY, scope_ref=ref),
        "events.raw": EventFilter(compressed=False),
        "events.kind": EventFilter(kinds=["decision"]),
    }.items():
        plain[name] = await _all_pages(
            lambda after, flt=flt: events.list_events(db, flt, first=3, after=after)
        )
    ranked["events.search"] = await _all_pages(
        lambda after: events.list_events(db, EventFilter(search="budget"), first=3, after=after)
    )
    for name, eflt in {
        "entries": EntryFilter(),
        "entries.scope": EntryFilter(scope=Scope.ENTITY, scope_ref=ref),
        "entries.tag": EntryFilter(tags=["process"]),
    }.items():
        plain[name] = await _all_pages(
            lambda after, eflt=eflt: entries.list_entries(db, eflt, first=2, after=after)
        )
    ranked["entries.search"] = await _all_pages(
        lambda after: entries.list_entries(db, EntryFilter(search="ROAS"), first=2, after=after)
    )
    page = await entries.list_entries(
        db, EntryFilter(sources=[EntrySource.COMPACTOR]), first=10, after=None
    )
    for edge in page.edges:
        plain[f"provenance {edge.node.id}"] = await _all_pages(
            lambda after, i=edge.node.id: entries.source_events(db, i, first=2, after=after)
        )
    for query, into in ((None, plain), ("What is the ROAS target?", ranked)):
        into[f"context {query}"] = await loader.load_context(
            db,
            scope=Scope.ENTITY,
            scope_ref=ref,
            query=query,
            max_tokens=2000,
            include_institutional=True,
            now=NOW,
        )
    return plain, ranked
