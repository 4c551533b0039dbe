"""Events are searchable the moment their append is acknowledged, through every path.

On SQLite the writer indexes its events with one statement per transaction
(app/storage/event_log.py with fulltext.INDEX_EVENTS_SQL; tenant migration 0004 dropped
the per-row trigger).
`assert_indexed` holds the index to exactly one row per event, with the event's rowid, text
and filter tokens (computed here by the Python twin, `filter_token`), so an unindexed
event, a duplicate, a wrong range or a drifted filter expression all fail. On PostgreSQL
the search column is generated: the searches below run on both backends.
"""

import asyncio
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import IntegrityError

from app.config import Settings
from app.deps import Container, build
from app.errors import Conflict, ExpectedErrors
from app.services import events, tenants
from app.services.records import EventFilter, EventIn, Scope
from app.storage.search import fulltext
from app.storage.sqlite.fastpath import appends
from app.storage.tenants import TenantDb
from app.storage.transactions import write_transaction
from tests.conftest import TenantFixture, migrate_tenant


def ev(body: str, **kw: Any) -> EventIn:
    base: dict[str, Any] = {
        "scope": Scope.ENTITY,
        "scope_ref": "ent_acme",
        "kind": "decision",
        "body": body,
    }
    base.update(kw)
    return EventIn(**base)


def expected_filters(scope: str, scope_ref: str | None) -> str:
    return " ".join(
        (
            fulltext.scope_token(scope, with_ref=False),
            fulltext.scope_token(scope, scope_ref, with_ref=True),
        )
    )


STORED = "SELECT seq, body, kind, scope, scope_ref FROM memory_events"
INDEXED = "SELECT rowid, body, kind, filters FROM memory_events_fts"
# FTS5's integrity-check: the index's own structure agrees with its content.
INTEGRITY = "INSERT INTO memory_events_fts (memory_events_fts) VALUES ('integrity-check')"


def compare(stored_rows: Any, indexed_rows: Any) -> int:
    """The FTS5 index of memory_events holds exactly one row per event, keyed by its seq,
    with its body, kind and filter tokens. Returns the number of events."""
    stored = {
        seq: (body, kind, expected_filters(scope, ref))
        for seq, body, kind, scope, ref in stored_rows
    }
    indexed = [tuple(r) for r in indexed_rows]
    assert len(indexed) == len({r[0] for r in indexed}), "an event indexed twice"
    assert {r[0]: r[1:] for r in indexed} == stored
    return len(stored)


def check_index(conn: sqlite3.Connection) -> int:
    n = compare(conn.execute(STORED), conn.execute(INDEXED))
    conn.execute(INTEGRITY)
    return n


async def assert_indexed(db: TenantDb) -> int | None:
    """check_index on a tenant's SQLite database (None on PostgreSQL)."""
    if db.engine.dialect.name == "postgresql":
        return None
    async with write_transaction(db.engine) as conn:
        n = compare(await conn.execute(text(STORED)), await conn.execute(text(INDEXED)))
        await conn.execute(text(INTEGRITY))
    return n


async def found(db: TenantDb, word: str, **flt: Any) -> list[str]:
    page = await events.list_events(db, EventFilter(search=word, **flt), first=50, after=None)
    return [e.node.body for e in page.edges]


async def test_every_service_path_indexes_each_event_once(db: TenantDb) -> None:
    # One append, then a batch: found at once, by text and by scope (the filter tokens).
    await events.append_event(db, ev("single walrus"))
    assert await found(db, "walrus") == ["single walrus"]
    assert await found(db, "walrus", scope=Scope.ENTITY, scope_ref="ent_acme") == ["single walrus"]
    assert await found(db, "walrus", scope=Scope.ENTITY, scope_ref="ent_other") == []
    await events.append_events(
        db,
        [
            ev("batch narwhal one", scope=Scope.TEAM, scope_ref="u/ü 1", kind="note"),
            ev("batch narwhal two", scope=Scope.INSTITUTIONAL, scope_ref=None),
            ev("batch narwhal three", idempotency_key="k-1"),
        ],
    )
    assert sorted(await found(db, "narwhal")) == [
        "batch narwhal one",
        "batch narwhal three",
        "batch narwhal two",
    ]
    assert await found(db, "narwhal", scope=Scope.TEAM, scope_ref="u/ü 1") == ["batch narwhal one"]
    assert await found(db, "narwhal", scope=Scope.INSTITUTIONAL) == ["batch narwhal two"]
    assert await assert_indexed(db) in (4, None)

    # Replays insert nothing, alone or inside a batch with new events.
    replay = await events.append_event(db, ev("batch narwhal three", idempotency_key="k-1"))
    assert replay.replayed
    mixed = await events.append_events(
        db,
        [
            ev("batch narwhal three", idempotency_key="k-1"),
            ev("after replay okapi", idempotency_key="k-2"),
            ev("after replay okapi", idempotency_key="k-2"),  # the same key twice in a batch
        ],
    )
    assert [a.replayed for a in mixed] == [True, False, True]
    assert await found(db, "okapi") == ["after replay okapi"]
    assert await assert_indexed(db) in (5, None)

    # A batch refused midway (validation, then a conflicting key) stores and indexes nothing.
    with pytest.raises(ExpectedErrors):
        await events.append_events(db, [ev("refused tapir"), ev("x", kind="Bad Kind"), ev("")])
    with pytest.raises(Conflict):
        await events.append_events(db, [ev("refused tapir"), ev("other", idempotency_key="k-1")])
    assert await found(db, "tapir") == []
    # The next append indexes its own events only: nothing of the refused ones appears.
    await events.append_events(db, [ev("later lemur")])
    assert await found(db, "tapir") == [] and await found(db, "lemur") == ["later lemur"]
    assert await assert_indexed(db) in (6, None)


@pytest.mark.parametrize("size", [5, appends.JSON_INSERT_ROWS, 300])
async def test_small_and_large_groups_store_every_value_exactly(
    db: TenantDb, size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group under JSON_INSERT_ROWS rows is inserted by executemany, a larger one by one
    INSERT ... SELECT over json_each (SQLite): every value comes back exactly as given, in
    order, and indexed."""
    awkward = ["é😀 \u2028 \\ \" ' \t", "[1, 2]", "null", "  padded  ", "\u00a0nbsp"]
    batch = [
        ev(
            f"row {i} walrus {awkward[i % len(awkward)]}",
            scope_ref=f"ref {i % 7}" if i % 11 else None,
            scope=Scope.ENTITY if i % 11 else Scope.INSTITUTIONAL,
            kind=f"kind_{i % 4}",
            source=None if i % 3 else "inbox",
            source_ref=f"m-{i}" if i % 2 else None,
            idempotency_key=f"key-{i}" if i % 5 == 0 else None,
            occurred_at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=i) if i % 4 else None,
        )
        for i in range(size)
    ]
    as_json: list[int] = []
    json_rows = appends._json_rows

    def spy(rows: Any) -> Any:
        as_json.append(len(rows))
        return json_rows(rows)

    monkeypatch.setattr(appends, "_json_rows", spy)
    appended = await events.append_events(db, batch)
    on_sqlite = db.fast_path
    assert as_json == ([size] if on_sqlite and size >= appends.JSON_INSERT_ROWS else [])
    for given, got in zip(batch, appended, strict=True):
        stored = await events.get_event(db, got.event.id)
        assert stored == got.event
        assert (stored.scope, stored.scope_ref, stored.kind, stored.body) == (
            given.scope,
            given.scope_ref,
            given.kind,
            given.body,
        )
        assert (stored.source, stored.source_ref, stored.idempotency_key) == (
            given.source,
            given.source_ref,
            given.idempotency_key,
        )
        assert stored.occurred_at == (given.occurred_at or stored.recorded_at)
    if on_sqlite:
        async with write_transaction(db.engine) as conn:
            order = (await conn.execute(text("SELECT id FROM memory_events ORDER BY seq"))).all()
        assert [r[0] for r in order] == [a.event.id for a in appended]  # seq in batch order
    assert await assert_indexed(db) in (size, None)
    assert len(await found(db, "walrus")) == min(size, 50)


async def test_concurrent_group_commits_index_every_event(db: TenantDb) -> None:
    singles = [
        events.append_event(db, ev(f"group {i % 150} ibex", idempotency_key=f"g-{i % 150}"))
        for i in range(200)
    ]
    batches = [
        events.append_events(db, [ev(f"group batch {i}.{j} ibex") for j in range(7)])
        for i in range(20)
    ]
    await asyncio.gather(*singles, *batches)
    assert db.event_appends is not None and db.event_appends.groups < 220  # they shared commits
    # 150 distinct keys (50 of the 200 appends were replays) and 140 batch events.
    assert await assert_indexed(db) in (290, None)
    page = await events.list_events(db, EventFilter(search="ibex"), first=100, after=None)
    assert len(page.edges) == 100 and page.has_next_page


async def test_a_failing_append_in_a_group_leaves_the_others_indexed(db: TenantDb) -> None:
    # Bypass validation so that the database refuses one row inside a shared group: the
    # group's transaction rolls back (its index rows with it) and each append is retried
    # alone, each indexing its own events.
    committer = events._committer(db, 2000)
    ok = [events.append_event(db, ev(f"neighbour {i} quokka")) for i in range(10)]
    batch = events.append_events(db, [ev(f"neighbour batch {j} quokka") for j in range(5)])
    bad = committer.submit(events._AppendRequest([ev("poison quokka", scope_ref=None)], False))
    outcome = await asyncio.gather(*ok, batch, bad, return_exceptions=True)
    assert all(not isinstance(o, BaseException) for o in outcome[:11])
    assert isinstance(outcome[11], IntegrityError)
    bodies = await found(db, "quokka")
    assert len(bodies) == 15 and "poison quokka" not in bodies
    assert await assert_indexed(db) in (15, None)


GQL_ONE = """mutation($input: AppendMemoryEventInput!) {
  appendMemoryEvent(input: $input) { event { id } replayed errors { code } } }"""
GQL_MANY = """mutation($input: [AppendMemoryEventInput!]!) {
  appendMemoryEvents(input: $input) { events { id } errors { code } } }"""
SEARCH = """query($s: String!) { memoryEvents(filter: {search: $s}, first: 50) {
  edges { node { body } } } }"""


async def test_rest_and_graphql_appends_are_searchable_when_acknowledged(
    client: httpx.AsyncClient, container: Container, tenant: TenantFixture
) -> None:
    h = tenant.headers
    rest = {"scope": "entity", "scopeRef": "ent_acme", "kind": "call_summary"}
    gql = {"scope": "TEAM", "scopeRef": "u1", "kind": "note"}

    async def gql_search(word: str) -> list[str]:
        r = await client.post(
            "/graphql", json={"query": SEARCH, "variables": {"s": word}}, headers=h
        )
        return [e["node"]["body"] for e in r.json()["data"]["memoryEvents"]["edges"]]

    async def rest_search(word: str) -> list[str]:
        r = await client.get("/memory/events", params={"search": word}, headers=h)
        assert r.status_code == 200, r.text
        return [e["body"] for e in r.json()["items"]]

    r = await client.post("/memory/events", json={**rest, "body": "rest single gecko"}, headers=h)
    assert r.status_code == 201
    assert await gql_search("gecko") == ["rest single gecko"]
    herons = [
        {**rest, "body": f"rest batch {i} heron", "idempotencyKey": f"r-{i}"} for i in range(3)
    ]
    r = await client.post("/memory/events", json=herons, headers=h)
    assert r.status_code == 201
    assert len(await gql_search("heron")) == 3
    r = await client.post("/memory/events", json=herons, headers=h)
    assert r.status_code == 200  # a replay
    r = await client.post(
        "/memory/events", json=[{**rest, "body": "ok"}, {**rest, "kind": "X"}], headers=h
    )
    assert r.status_code == 422

    one = {"query": GQL_ONE, "variables": {"input": {**gql, "body": "graphql single ermine"}}}
    r = await client.post("/graphql", json=one, headers=h)
    assert r.json()["data"]["appendMemoryEvent"]["errors"] == []
    assert await rest_search("ermine") == ["graphql single ermine"]
    many = [{**gql, "body": f"graphql batch {i} ferret"} for i in range(4)]
    r = await client.post(
        "/graphql", json={"query": GQL_MANY, "variables": {"input": many}}, headers=h
    )
    assert len(r.json()["data"]["appendMemoryEvents"]["events"]) == 4
    assert len(await rest_search("ferret")) == 4
    bad = [{**gql, "body": "refused"}, {**gql, "kind": "Not A Kind", "body": "x"}]
    r = await client.post(
        "/graphql", json={"query": GQL_MANY, "variables": {"input": bad}}, headers=h
    )
    assert r.json()["data"]["appendMemoryEvents"]["events"] == []

    async with container.tenants.lease(tenant.id) as db:
        assert await assert_indexed(db) in (9, None)


# ------------------------------------------------------------------- the schema


def triggers(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(
        conn.execute(
            "SELECT name, sql FROM sqlite_master"
            " WHERE type = 'trigger' AND tbl_name = 'memory_events'"
        ).fetchall()
    )


def migrate_to(path: Path, revision: str) -> None:
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as conn:
            migrate_tenant(conn, revision)
    finally:
        engine.dispose()


@pytest.mark.sqlite_only
async def test_no_trigger_indexes_events_at_head(db: TenantDb, container: Container) -> None:
    # Should a trigger index events again, every append would index them twice (FTS5
    # refuses the second row: the append fails) and the writer's statement would be waste.
    path = container.tenants.path(db.tenant_id)
    with sqlite3.connect(path) as conn:
        found = triggers(conn)
        # An erased event leaves the index through a delete trigger (migration 0007) and
        # its scope's count through another (0010).
        assert sorted(found) == [
            "memory_events_fts_delete",
            "memory_events_immutable",
            "memory_events_no_delete",
            "memory_scopes_event_delete",
        ]
        assert not any("INSERT INTO memory_events_fts" in sql for sql in found.values())
        assert "AFTER DELETE" in found["memory_events_fts_delete"]


@pytest.mark.sqlite_only
async def test_migrations_down_and_up_keep_search_working(settings: Settings) -> None:
    container = await build(settings)
    try:
        tenant, _ = await tenants.create_tenant(container.control, container.tenants, "old")
        async with container.tenants.lease(tenant.id) as db:
            await events.append_events(db, [ev(f"before {i} bison") for i in range(5)])
        path = container.tenants.path(tenant.id)
    finally:
        await container.aclose()

    # An event written at head without the writer's statement (a raw client): the
    # downgrade indexes it, as the code at 0003 expects every event in the index.
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO memory_events (id, scope, scope_ref, kind, body, occurred_at,"
            " recorded_at) VALUES ('evt_raw', 'project', 'p/1', 'note', 'raw bison',"
            " '2026-11-30 00:00:00.000000', '2026-11-30 00:00:00.000000')"
        )
    migrate_to(path, "0003")
    with sqlite3.connect(path) as conn:
        assert "memory_events_fts_insert" in triggers(conn)
        assert check_index(conn) == 6
        # At 0003 the trigger indexes what is written.
        conn.execute(
            "INSERT INTO memory_events (id, scope, scope_ref, kind, body, occurred_at,"
            " recorded_at) VALUES ('evt_old', 'institutional', NULL, 'note', 'old code bison',"
            " '2026-11-30 00:00:00.000000', '2026-11-30 00:00:00.000000')"
        )
        assert check_index(conn) == 7
    migrate_to(path, "head")
    migrate_to(path, "0003")
    migrate_to(path, "head")

    container = await build(settings)
    try:
        async with container.tenants.lease(tenant.id) as db:
            await events.append_events(db, [ev(f"after {i} bison") for i in range(3)])
            assert await assert_indexed(db) == 10
            assert len(await found(db, "bison")) == 10
            assert await found(db, "bison", scope=Scope.PROJECT, scope_ref="p/1") == ["raw bison"]
            assert await found(db, "bison", scope=Scope.INSTITUTIONAL) == ["old code bison"]
    finally:
        await container.aclose()


@pytest.mark.sqlite_only
@pytest.mark.parametrize(
    ("scope", "scope_ref"),
    [("institutional", None), ("entity", ""), ("team", "ü/é ✓ 'x'"), ("project", "a" * 200)],
)
def test_the_filters_sql_is_the_twin_of_filter_token(scope: str, scope_ref: str | None) -> None:
    conn = sqlite3.connect(":memory:")
    row = conn.execute(
        f"SELECT {fulltext.event_filters_sql()} FROM (SELECT ? AS scope, ? AS scope_ref)",
        (scope, scope_ref),
    ).fetchone()
    assert row[0] == expected_filters(scope, scope_ref)
