"""GraphQL operations through `schema.execute`: payload errors, query errors, masking."""

import logging
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import insert, update

from app.deps import Container
from app.graphql.request_context import Context
from app.graphql.schema import schema
from app.services import entries
from app.services.records import EntryIn, EntrySource, Scope
from app.storage.models import entry_sources_table, events_table
from app.storage.tenants import TenantDb
from app.storage.transactions import write_transaction

# Beside each query error's code, the class gateways read (app/graphql/errors.py).
CLIENT_ERROR = {"classification": "BAD_USER_INPUT"}


@pytest.fixture
def run(container: Container, db: TenantDb) -> Any:
    async def execute(query: str, **variables: Any) -> Any:
        ctx = Context(container=container, db=db, request_id="test-request")
        return await schema.execute(query, variable_values=variables, context_value=ctx)

    return execute


APPEND = """
mutation($input: AppendMemoryEventInput!) {
  appendMemoryEvent(input: $input) {
    event { id scope scopeRef kind body occurredAt recordedAt compressedAt compressedInto { id } }
    replayed
    errors { field code message }
  }
}"""


async def test_append_replay_and_conflict(run: Any) -> None:
    payload = {
        "scope": "ENTITY",
        "scopeRef": "ent_acme",
        "kind": "decision",
        "body": "Raise ROAS target to 4.0",
        "idempotencyKey": "k1",
    }
    first = (await run(APPEND, input=payload)).data["appendMemoryEvent"]
    assert first["errors"] == [] and first["replayed"] is False
    assert first["event"]["scope"] == "ENTITY" and first["event"]["compressedInto"] is None
    again = (await run(APPEND, input=payload)).data["appendMemoryEvent"]
    assert again["replayed"] is True and again["event"] == first["event"]
    clash = (await run(APPEND, input={**payload, "body": "other"})).data["appendMemoryEvent"]
    assert clash["event"] is None
    assert clash["errors"] == [
        {
            "field": ["input", "idempotencyKey"],
            "code": "CONFLICT",
            "message": "idempotencyKey 'k1' was already used for a different event",
        }
    ]


async def test_validation_errors_come_back_in_payloads(run: Any) -> None:
    bad = {"scope": "INSTITUTIONAL", "scopeRef": "x", "kind": "decision", "body": "b"}
    r = (await run(APPEND, input=bad)).data["appendMemoryEvent"]
    assert r["errors"][0]["field"] == ["input", "scopeRef"] and r["errors"][0]["code"] == "INVALID"
    batch = """mutation($input: [AppendMemoryEventInput!]!) {
      appendMemoryEvents(input: $input) { events { id } errors { field code } } }"""
    good = {"scope": "TEAM", "scopeRef": "u1", "kind": "note", "body": "fine"}
    r = (await run(batch, input=[good, {**good, "kind": "Not A Kind"}, good])).data
    assert r["appendMemoryEvents"] == {
        "events": [],
        "errors": [{"field": ["input", "1", "kind"], "code": "INVALID"}],
    }
    r = (await run(batch, input=[good, good])).data["appendMemoryEvents"]
    assert len(r["events"]) == 2 and r["errors"] == []


CREATE = """mutation($input: CreateMemoryEntryInput!) {
  createMemoryEntry(input: $input) {
    entry { id title tags importance source version sourceEvents { edges { node { id } } } }
    errors { field code message } } }"""


async def test_entry_lifecycle(run: Any) -> None:
    new = {"scope": "ENTITY", "scopeRef": "ent_acme", "title": "ROAS target", "summary": "4.0"}
    made = (await run(CREATE, input=new)).data["createMemoryEntry"]
    entry = made["entry"]
    assert entry["importance"] == 3 and entry["source"] == "MANUAL" and entry["tags"] == []
    assert entry["sourceEvents"] == {"edges": []}
    forbidden = (
        await run(
            CREATE,
            input={
                "scope": "ENTITY",
                "scopeRef": "e",
                "title": "t",
                "summary": "s",
                "source": "COMPACTOR",
            },
        )
    ).data["createMemoryEntry"]
    assert forbidden["errors"][0]["code"] == "FORBIDDEN"
    assert forbidden["errors"][0]["field"] == ["input", "source"]

    update = """mutation($id: ID!, $input: UpdateMemoryEntryInput!) {
      updateMemoryEntry(id: $id, input: $input) { entry { version title importance }
      errors { field code } } }"""
    r = (await run(update, id=entry["id"], input={"importance": 5, "expectedVersion": 1})).data
    assert r["updateMemoryEntry"]["entry"] == {
        "version": 2,
        "title": "ROAS target",
        "importance": 5,
    }
    r = (await run(update, id=entry["id"], input={"title": "x", "expectedVersion": 1})).data
    assert r["updateMemoryEntry"]["errors"] == [
        {"field": ["input", "expectedVersion"], "code": "CONFLICT"}
    ]
    r = (await run(update, id=entry["id"], input={"importance": 9})).data
    assert r["updateMemoryEntry"]["errors"] == [
        {"field": ["input", "importance"], "code": "INVALID"}
    ]

    delete = "mutation($id: ID!) { deleteMemoryEntry(id: $id) { deletedId errors { code } } }"
    assert (await run(delete, id=entry["id"])).data["deleteMemoryEntry"] == {
        "deletedId": entry["id"],
        "errors": [],
    }
    assert (await run(delete, id=entry["id"])).data["deleteMemoryEntry"] == {
        "deletedId": None,
        "errors": [{"code": "NOT_FOUND"}],
    }
    gone = await run("query($id: ID!) { memoryEntry(id: $id) { id } }", id=entry["id"])
    assert gone.data == {"memoryEntry": None}


async def test_query_errors_name_the_argument(run: Any) -> None:
    r = await run("{ memoryEvents(first: 101) { edges { cursor } } }")
    assert r.errors[0].message == "first is capped at 100, got 101"
    assert r.errors[0].extensions == {"code": "INVALID", "field": ["first"], **CLIENT_ERROR}
    r = await run('{ memoryEntries(after: "nope") { edges { cursor } } }')
    assert r.errors[0].extensions == {"code": "INVALID", "field": ["after"], **CLIENT_ERROR}
    r = await run('{ memoryEntries(filter: {search: "%s"}) { edges { score } } }' % ("x" * 1001))
    assert r.errors[0].extensions["code"] == "TOO_LARGE"
    r = await run("{ memoryEntries(first: null) { pageInfo { hasNextPage } } }")
    assert r.errors is None  # null means the default page size


async def test_unexpected_errors_are_masked_and_logged(
    run: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def boom(*_: object, **__: object) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(entries, "get_entry", boom)
    with caplog.at_level(logging.ERROR, logger="app.graphql.schema"):
        r = await run('{ memoryEntry(id: "mem_x") { id } }')
    assert [e.message for e in r.errors] == ["Internal server error"]
    assert "secret internals" not in str(r.errors[0].formatted)
    [record] = caplog.records
    assert "test-request" in record.getMessage() and record.exc_info is not None


async def test_compressed_into_and_source_events(run: Any, db: TenantDb) -> None:
    ids = []
    for i in range(3):
        r = await run(
            APPEND,
            input={
                "scope": "ENTITY",
                "scopeRef": "ent_acme",
                "kind": "decision",
                "body": f"event {i}",
            },
        )
        ids.append(r.data["appendMemoryEvent"]["event"]["id"])
    now = datetime.now(UTC)
    async with write_transaction(db.engine) as conn:  # what the compactor writes
        summary = await entries.insert_entry(
            conn,
            EntryIn(
                Scope.ENTITY,
                "ent_acme",
                "Summary",
                "three events",
                importance=4,
                source=EntrySource.COMPACTOR,
            ),
            now=now,
        )
        await conn.execute(
            insert(entry_sources_table),
            [{"entry_id": summary.id, "event_id": e, "position": i} for i, e in enumerate(ids)],
        )
        await conn.execute(
            update(events_table).values(compressed_at=now, compressed_into=summary.id)
        )
    r = await run("""{ memoryEvents(filter: {compressed: true}) { edges { node {
        id compressedInto { id source sourceEvents(first: 2) { edges { node { id } }
        pageInfo { hasNextPage } } } } } } }""")
    nodes = [e["node"] for e in r.data["memoryEvents"]["edges"]]
    assert {n["id"] for n in nodes} == set(ids)
    for n in nodes:
        into = n["compressedInto"]
        assert into["id"] == summary.id and into["source"] == "COMPACTOR"
        assert [e["node"]["id"] for e in into["sourceEvents"]["edges"]] == ids[:2]
        assert into["sourceEvents"]["pageInfo"]["hasNextPage"] is True
    r = await run(
        "{ memoryEntries { edges { node { sourceEvents(first: 500) { edges { cursor } } } } } }"
    )
    assert r.errors[0].extensions["field"] == ["first"]
