"""Tenant isolation, attacked over HTTP GraphQL: with tenant A's key, nothing of tenant B
is read, listed, searched, paged into, updated, deleted or replayed, and B stays unchanged.

Both tenants hold the same shapes of data (scopes, scope refs, kinds, tags, sources,
common words), so every filter that finds B's data with B's key finds A's own data with
A's key: the attack runs against non-empty results, not against an empty tenant. B also
holds words, a scope ref and a tag A never has; those must find nothing for A.
"""

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import insert, update

from app.config import Settings
from app.deps import Container, build
from app.edge.app import create_app
from app.services import tenants
from app.services.entries import insert_entry
from app.services.records import EntryIn, EntrySource, Scope
from app.storage.models import entry_sources_table, events_table
from app.storage.transactions import write_transaction
from app.storage.types import utcnow
from tests.conftest import TenantFixture, make_tenant

EVENT_FIELDS = """id scope scopeRef kind body source sourceRef occurredAt recordedAt
    compressedAt compressedInto { id title summary version }"""
ENTRY_FIELDS = """id scope scopeRef title summary tags importance source createdAt updatedAt
    version sourceEvents(first: 100) { edges { cursor node { id body } } }"""
PAGE_INFO = "pageInfo { hasNextPage endCursor }"

EVENTS = f"""query($filter: MemoryEventFilter, $first: Int! = 100, $after: String) {{
  memoryEvents(filter: $filter, first: $first, after: $after) {{
    edges {{ cursor node {{ {EVENT_FIELDS} }} }} {PAGE_INFO} }} }}"""
ENTRIES = f"""query($filter: MemoryEntryFilter, $first: Int! = 100, $after: String) {{
  memoryEntries(filter: $filter, first: $first, after: $after) {{
    edges {{ cursor score node {{ {ENTRY_FIELDS} }} }} {PAGE_INFO} }} }}"""
SOURCE_EVENTS = f"""query($id: ID!, $after: String) {{
  memoryEntry(id: $id) {{ id sourceEvents(first: 100, after: $after) {{
    edges {{ cursor node {{ id }} }} {PAGE_INFO} }} }} }}"""
EVENT = f"query($id: ID!) {{ memoryEvent(id: $id) {{ {EVENT_FIELDS} }} }}"
ENTRY = f"query($id: ID!) {{ memoryEntry(id: $id) {{ {ENTRY_FIELDS} }} }}"
ERRORS = "errors { field code message }"
APPEND = f"""mutation($input: AppendMemoryEventInput!) {{
  appendMemoryEvent(input: $input) {{ replayed event {{ {EVENT_FIELDS} }} {ERRORS} }} }}"""
APPEND_MANY = f"""mutation($input: [AppendMemoryEventInput!]!) {{
  appendMemoryEvents(input: $input) {{ events {{ {EVENT_FIELDS} }} {ERRORS} }} }}"""
CREATE = f"""mutation($input: CreateMemoryEntryInput!) {{
  createMemoryEntry(input: $input) {{ entry {{ {ENTRY_FIELDS} }} {ERRORS} }} }}"""
UPDATE = f"""mutation($id: ID!, $input: UpdateMemoryEntryInput!) {{
  updateMemoryEntry(id: $id, input: $input) {{ entry {{ {ENTRY_FIELDS} }} {ERRORS} }} }}"""
DELETE = f"""mutation($id: ID!) {{ deleteMemoryEntry(id: $id) {{ deletedId {ERRORS} }} }}"""

# Words, a scope ref, a tag and refs only B ever stores.
B_WORDS = ["zanzibarite", "quetzalfrond", "blorptastic", "snorkelwump", "vexillarium"]
B_ONLY_REF = "b-only-entity"
B_ONLY_TAG = "b-only-tag"
A_WORDS = ["aardwolf", "apricotine"]


@dataclass
class Api:
    """One tenant's GraphQL client; every exchange is kept so responses can be scanned."""

    client: httpx.AsyncClient
    tenant: TenantFixture
    log: list[tuple[str, str]] = field(default_factory=list)

    async def post(
        self,
        query: str,
        variables: dict[str, Any] | None = None,
        *,
        headers: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
        **body: Any,
    ) -> httpx.Response:
        content = json.dumps({"query": query, "variables": variables or {}, **body})
        response = await self.client.post(
            "/graphql",
            content=content,
            params=params,
            headers={"content-type": "application/json", **self.tenant.headers, **(headers or {})},
        )
        self.log.append(
            (content + json.dumps(headers or {}) + json.dumps(params or {}), response.text)
        )
        return response

    async def data(self, query: str, variables: dict[str, Any] | None = None, **kw: Any) -> Any:
        response = await self.post(query, variables, **kw)
        assert response.status_code == 200, response.text
        body = response.json()
        assert not body.get("errors"), body
        return body["data"]

    async def events(self, flt: dict[str, Any] | None = None, **kw: Any) -> list[dict[str, Any]]:
        data = await self.data(EVENTS, {"filter": flt, **kw})
        return [e["node"] | {"cursor": e["cursor"]} for e in data["memoryEvents"]["edges"]]

    async def entries(self, flt: dict[str, Any] | None = None, **kw: Any) -> list[dict[str, Any]]:
        data = await self.data(ENTRIES, {"filter": flt, **kw})
        return [
            e["node"] | {"cursor": e["cursor"], "score": e["score"]}
            for e in data["memoryEntries"]["edges"]
        ]

    async def append(self, **event: Any) -> dict[str, Any]:
        data = await self.data(APPEND, {"input": event})
        payload: dict[str, Any] = data["appendMemoryEvent"]
        assert payload["errors"] == [], payload
        return payload

    async def append_many(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        data = await self.data(APPEND_MANY, {"input": events})
        payload = data["appendMemoryEvents"]
        assert payload["errors"] == [], payload
        return list(payload["events"])

    async def create(self, **entry: Any) -> dict[str, Any]:
        payload = (await self.data(CREATE, {"input": entry}))["createMemoryEntry"]
        assert payload["errors"] == [], payload
        return dict(payload["entry"])

    async def snapshot(self) -> dict[str, Any]:
        """Everything the tenant can see, every field, in list order."""
        return {
            "events": await self.events(),
            "entries": await self.entries(),
            "events_by_id": [
                (await self.data(EVENT, {"id": e["id"]}))["memoryEvent"]
                for e in await self.events()
            ],
            "entries_by_id": [
                (await self.data(ENTRY, {"id": e["id"]}))["memoryEntry"]
                for e in await self.entries()
            ],
        }


def _events_of(words: list[str], *, idem: str, source_ref: str) -> list[dict[str, Any]]:
    """The same shapes for both tenants; the words and keys tell them apart."""
    w0, w1 = words[0], words[1 % len(words)]
    return [
        {
            "scope": "INSTITUTIONAL",
            "kind": "decision",
            "source": "inbox",
            "sourceRef": source_ref,
            "occurredAt": "2020-01-01T09:00:00Z",
            "body": f"Acme decided the ROAS target; the {w0} quorum approved it.",
            "idempotencyKey": f"{idem}-1",
        },
        {
            "scope": "ENTITY",
            "scopeRef": "acct-42",
            "kind": "call_summary",
            "source": "call",
            "occurredAt": "2020-01-02T09:00:00Z",
            "body": f"Call with Acme about ROAS and the {w1} renewal.",
            "idempotencyKey": f"{idem}-2",
        },
        {
            "scope": "PROJECT",
            "scopeRef": "proj-apollo",
            "kind": "campaign_change",
            "body": f"Campaign paused; the {w0} budget moved to search.",
        },
        {
            "scope": "TEAM",
            "scopeRef": "user-7",
            "kind": "sentiment_shift",
            "body": f"Sentiment dropped after the {w1} pricing change.",
            "idempotencyKey": "shared-idempotency-key",
        },
    ]


def _entries_of(words: list[str]) -> list[dict[str, Any]]:
    w0, w1 = words[0], words[1 % len(words)]
    return [
        {
            "scope": "ENTITY",
            "scopeRef": "acct-42",
            "title": f"Acme ROAS decision {w0}",
            "summary": f"Acme decided to hold ROAS at 4x ({w1}).",
            "tags": ["roas", "pricing"],
            "importance": 5,
            "source": "CALL",
        },
        {
            "scope": "INSTITUTIONAL",
            "title": "Pricing policy",
            "summary": f"List prices change once a year; {w1} discounts need approval.",
            "tags": ["pricing"],
            "importance": 2,
            "source": "EMAIL",
        },
        {
            "scope": "PROJECT",
            "scopeRef": "proj-apollo",
            "title": f"Campaign apollo {w1}",
            "summary": "Apollo runs on search and social.",
            "tags": ["roas"],
            "importance": 4,
            "source": "CHAT",
        },
        {
            "scope": "TEAM",
            "scopeRef": "user-7",
            "title": "Team mood",
            "summary": f"Morale is fine; {w0} retro on Friday.",
            "importance": 3,
        },
    ]


async def _fold(
    container: Container, tenant_id: str, event_ids: list[str], words: list[str]
) -> str:
    # No compactor exists yet: fold the way it will (compactor entry + provenance +
    # compressed_at in one transaction) so the compressed filter and sourceEvents have data.
    async with container.tenants.lease(tenant_id) as db, write_transaction(db.engine) as conn:
        entry = await insert_entry(
            conn,
            EntryIn(
                scope=Scope.ENTITY,
                scope_ref="acct-42",
                title=f"Acme calls 2020 {words[0]}",
                summary=f"Acme call history; {words[-1]}.",
                tags=["roas"],
                importance=4,
                source=EntrySource.COMPACTOR,
            ),
        )
        await conn.execute(
            insert(entry_sources_table),
            [{"entry_id": entry.id, "event_id": e, "position": i} for i, e in enumerate(event_ids)],
        )
        await conn.execute(
            update(events_table)
            .where(events_table.c.id.in_(event_ids))
            .values(compressed_at=utcnow(), compressed_into=entry.id)
        )
    return entry.id


@dataclass
class World:
    container: Container
    a: Api
    b: Api
    a_ids: set[str]
    b_ids: set[str]
    b_events: list[dict[str, Any]]  # as B appended them (inputs)
    b_snapshot: dict[str, Any]
    b_cursors: list[str]
    b_secrets: set[str]


async def _seed(api: Api, container: Container, words: list[str], prefix: str) -> set[str]:
    ids: set[str] = set()
    inputs = _events_of(words, idem=f"{prefix}-idem", source_ref=f"{prefix}-msg-0001")
    first = await api.append(**inputs[0])
    assert first["replayed"] is False
    ids.add(first["event"]["id"])
    ids |= {e["id"] for e in await api.append_many(inputs[1:])}
    old = await api.append_many(
        [
            {
                "scope": "ENTITY",
                "scopeRef": "acct-42",
                "kind": "call_summary",
                "occurredAt": f"2020-02-0{i}T10:00:00Z",
                "body": f"Old Acme call {i}: {words[i % 2]}.",
            }
            for i in range(1, 4)
        ]
    )
    ids |= {e["id"] for e in old}
    ids.add(await _fold(container, api.tenant.id, [e["id"] for e in old], words))
    for entry in _entries_of(words):
        ids.add((await api.create(**entry))["id"])
    return ids


@pytest.fixture
async def world(container: Container, client: httpx.AsyncClient) -> World:
    a = Api(client, await make_tenant(container, "tenant-a"))
    b = Api(client, await make_tenant(container, "tenant-b"))
    a_ids = await _seed(a, container, A_WORDS, "a")
    b_ids = await _seed(b, container, B_WORDS, "b")
    # What only B holds: an event and an entry under a scope ref and tag A never uses.
    b_only_input = {
        "scope": "ENTITY",
        "scopeRef": B_ONLY_REF,
        "kind": "decision",
        "source": "b-source-system",
        "sourceRef": "b-msg-0002",
        "idempotencyKey": "b-idem-only",
        "occurredAt": "2021-03-04T05:06:07Z",
        "body": f"The {B_WORDS[2]} {B_WORDS[3]} {B_WORDS[4]} pricing was decided for Acme.",
    }
    b_only = await b.append(**b_only_input)
    b_ids.add(b_only["event"]["id"])
    b_entry = await b.create(
        scope="ENTITY",
        scopeRef=B_ONLY_REF,
        title=f"Secret plan {B_WORDS[3]}",
        summary=f"Acme ROAS pricing, {B_WORDS[2]} {B_WORDS[4]}.",
        tags=["roas", B_ONLY_TAG],
        importance=5,
        source="EMAIL",
    )
    b_ids.add(b_entry["id"])
    # Updated once, so B's data holds a version other than 1.
    bumped = await b.data(UPDATE, {"id": b_entry["id"], "input": {"importance": 4}})
    assert bumped["updateMemoryEntry"]["entry"]["version"] == 2

    snapshot = await b.snapshot()
    assert {e["id"] for e in snapshot["events"]} | {e["id"] for e in snapshot["entries"]} == b_ids
    cursors = [e["cursor"] for e in snapshot["events"] + snapshot["entries"]]
    cursors += [e["cursor"] for e in await b.events({"search": " ".join(B_WORDS)}, first=2)]
    cursors += [e["cursor"] for e in await b.entries({"search": " ".join(B_WORDS)}, first=2)]
    cursors += [s["cursor"] for e in snapshot["entries"] for s in e["sourceEvents"]["edges"]]
    # Every kind of cursor the API hands out is in the attack (the kind is the first item).
    kinds = {json.loads(base64.urlsafe_b64decode(c + "=" * (-len(c) % 4)))[0] for c in cursors}
    assert kinds == {"events", "events-search", "entries", "entries-search", "sources"}
    b_inputs = _events_of(B_WORDS, idem="b-idem", source_ref="b-msg-0001")
    b_events = [b_inputs[0], b_inputs[1], b_inputs[3], b_only_input]
    secrets = b_ids | set(B_WORDS) | {B_ONLY_REF, B_ONLY_TAG, "b-msg-0001", "b-msg-0002"}
    secrets |= {"b-idem", "b-source-system", b.tenant.key, b.tenant.id}
    return World(container, a, b, a_ids, b_ids, b_events, snapshot, cursors, secrets)


def _ids(items: Iterable[dict[str, Any]]) -> set[str]:
    return {i["id"] for i in items}


def _assert_no_leak(w: World) -> None:
    """No response to A names anything of B that A itself did not send first.

    A string A sent in this request (an id it guessed, a word it searched for) or stored
    earlier (B's exact content, appended as A's own) may come back; nothing else of B may.
    """
    assert w.a.log, "nothing was attacked"
    stored = ""
    for request, response in w.a.log:
        told = (stored + request).lower()
        for secret in w.b_secrets:
            if secret.lower() in response.lower():
                assert secret.lower() in told, (secret, request, response)
        if '"query": "mutation' in request:
            stored += request


async def _assert_b_unchanged(w: World) -> None:
    assert await w.b.snapshot() == w.b_snapshot
    for word in A_WORDS:
        assert await w.b.events({"search": word}) == []
        assert await w.b.entries({"search": word}) == []


# --------------------------------------------------------------------------- by id


async def test_reading_b_by_id_returns_null(world: World) -> None:
    for item in world.b_snapshot["events"]:
        assert (await world.a.data(EVENT, {"id": item["id"]}))["memoryEvent"] is None
        # An event id is no entry id either, in either direction.
        assert (await world.a.data(ENTRY, {"id": item["id"]}))["memoryEntry"] is None
    for item in world.b_snapshot["entries"]:
        assert (await world.a.data(ENTRY, {"id": item["id"]}))["memoryEntry"] is None
        assert (await world.a.data(EVENT, {"id": item["id"]}))["memoryEvent"] is None
        data = await world.a.data(SOURCE_EVENTS, {"id": item["id"]})
        assert data["memoryEntry"] is None
    # A reads its own the same way (the queries above are not simply broken).
    own = next(iter(world.a_ids))
    found = await world.a.data(EVENT if own.startswith("evt_") else ENTRY, {"id": own})
    assert next(iter(found.values()))["id"] == own
    _assert_no_leak(world)


# ------------------------------------------------------------------------- by filter

EVENT_FILTERS: list[tuple[dict[str, Any], bool]] = [
    # (filter, whether A holds matching data of its own)
    ({}, True),
    ({"scope": "INSTITUTIONAL"}, True),
    ({"scope": "ENTITY", "scopeRef": "acct-42"}, True),
    ({"scopeRef": "acct-42"}, True),
    ({"scope": "PROJECT", "scopeRef": "proj-apollo"}, True),
    ({"scope": "TEAM", "scopeRef": "user-7"}, True),
    ({"kinds": ["decision", "call_summary", "campaign_change", "sentiment_shift"]}, True),
    ({"compressed": True}, True),
    ({"compressed": False}, True),
    ({"occurredAfter": "2000-01-01T00:00:00Z", "occurredBefore": "2099-01-01T00:00:00Z"}, True),
    ({"search": "what did Acme decide about ROAS?"}, True),
    ({"search": "Acme", "scope": "ENTITY", "scopeRef": "acct-42", "compressed": True}, True),
    ({"search": "Acme", "kinds": ["decision"], "compressed": False}, True),
    ({"scope": "ENTITY", "scopeRef": B_ONLY_REF}, False),
    ({"scopeRef": B_ONLY_REF}, False),
    ({"search": "pricing", "scopeRef": B_ONLY_REF}, False),
    ({"search": "pricing", "scope": "ENTITY", "scopeRef": B_ONLY_REF}, False),
    *[({"search": word}, False) for word in B_WORDS],
    *[({"search": word[:4]}, False) for word in B_WORDS],  # prefix matching
    ({"search": " ".join(B_WORDS)}, False),
]

ENTRY_FILTERS: list[tuple[dict[str, Any], bool]] = [
    ({}, True),
    ({"scope": "INSTITUTIONAL"}, True),
    ({"scope": "ENTITY", "scopeRef": "acct-42"}, True),
    ({"scopeRef": "acct-42"}, True),
    ({"scope": "PROJECT", "scopeRef": "proj-apollo"}, True),
    ({"scope": "TEAM", "scopeRef": "user-7"}, True),
    ({"tags": ["roas"]}, True),
    ({"tags": ["roas", "pricing"]}, True),
    ({"minImportance": 5}, True),
    ({"minImportance": 1}, True),
    ({"sources": ["CALL", "EMAIL", "CHAT", "MANUAL", "COMPACTOR"]}, True),
    ({"sources": ["COMPACTOR"]}, True),
    ({"search": "what did Acme decide about ROAS?"}, True),
    ({"search": "Acme", "tags": ["roas"], "scope": "ENTITY", "scopeRef": "acct-42"}, True),
    ({"search": "pricing", "minImportance": 2, "sources": ["EMAIL", "CALL"]}, True),
    ({"tags": [B_ONLY_TAG]}, False),
    ({"tags": ["roas", B_ONLY_TAG]}, False),
    ({"scopeRef": B_ONLY_REF}, False),
    ({"scope": "ENTITY", "scopeRef": B_ONLY_REF, "minImportance": 4}, False),
    ({"search": "pricing", "tags": [B_ONLY_TAG]}, False),
    *[({"search": word}, False) for word in B_WORDS],
    *[({"search": word[:4]}, False) for word in B_WORDS],
    ({"search": " ".join(B_WORDS)}, False),
]


async def test_every_filter_that_finds_b_data_finds_none_of_it_for_a(world: World) -> None:
    for flt, a_has in EVENT_FILTERS:
        found_by_b = _ids(await world.b.events(flt))
        assert found_by_b and found_by_b <= world.b_ids, flt  # the filter does match B's data
        found_by_a = _ids(await world.a.events(flt))
        assert found_by_a <= world.a_ids, flt
        assert bool(found_by_a) is a_has, flt
    for flt, a_has in ENTRY_FILTERS:
        found_by_b = _ids(await world.b.entries(flt))
        assert found_by_b and found_by_b <= world.b_ids, flt
        found_by_a = _ids(await world.a.entries(flt))
        assert found_by_a <= world.a_ids, flt
        assert bool(found_by_a) is a_has, flt
    _assert_no_leak(world)


async def test_a_compressed_event_never_points_into_b(world: World) -> None:
    for event in await world.a.events({"compressed": True}):
        assert event["compressedInto"]["id"] in world.a_ids
    for entry in await world.a.entries({"sources": ["COMPACTOR"]}):
        assert entry["sourceEvents"]["edges"]
        assert {s["node"]["id"] for s in entry["sourceEvents"]["edges"]} <= world.a_ids
    _assert_no_leak(world)


# ------------------------------------------------------------------------- by cursor


async def test_b_cursors_never_page_into_b(world: World) -> None:
    a_compactor = (await world.a.entries({"sources": ["COMPACTOR"]}))[0]["id"]
    accepted = 0
    for cursor in world.b_cursors:
        for query, flt, key in [
            (EVENTS, {}, "memoryEvents"),
            (EVENTS, {"search": "Acme ROAS " + " ".join(B_WORDS)}, "memoryEvents"),
            (ENTRIES, {}, "memoryEntries"),
            (ENTRIES, {"search": "Acme ROAS " + " ".join(B_WORDS)}, "memoryEntries"),
        ]:
            response = await world.a.post(query, {"filter": flt, "after": cursor})
            assert response.status_code == 200
            body = response.json()
            if body.get("errors"):
                # Refusing a cursor of another list is fine; it is the client's error.
                assert body["data"] is None
                assert [e["extensions"]["code"] for e in body["errors"]] == ["INVALID"]
                continue
            accepted += 1
            assert _ids(e["node"] for e in body["data"][key]["edges"]) <= world.a_ids
        response = await world.a.post(SOURCE_EVENTS, {"id": a_compactor, "after": cursor})
        body = response.json()
        if not body.get("errors"):
            edges = body["data"]["memoryEntry"]["sourceEvents"]["edges"]
            assert _ids(e["node"] for e in edges) <= world.a_ids
    assert accepted > 0  # cursors of the same list kind are read, in A's tenant only
    _assert_no_leak(world)


# ------------------------------------------------------------------------ by mutation


async def test_updating_or_deleting_b_entries_is_not_found(world: World) -> None:
    for entry in world.b_snapshot["entries"]:
        for patch in [
            {"title": "pwned"},
            {"summary": "pwned", "tags": ["pwned"], "importance": 1},
            {"title": "pwned", "expectedVersion": entry["version"]},
        ]:
            data = await world.a.data(UPDATE, {"id": entry["id"], "input": patch})
            payload = data["updateMemoryEntry"]
            assert payload["entry"] is None
            assert [(e["code"], e["field"]) for e in payload["errors"]] == [("NOT_FOUND", ["id"])]
        data = await world.a.data(DELETE, {"id": entry["id"]})
        payload = data["deleteMemoryEntry"]
        assert payload["deletedId"] is None
        assert [(e["code"], e["field"]) for e in payload["errors"]] == [("NOT_FOUND", ["id"])]
    await _assert_b_unchanged(world)
    _assert_no_leak(world)


async def test_b_idempotency_keys_append_new_events_in_a(world: World) -> None:
    b_plain, b_call, b_shared, b_only = world.b_events
    for event in [b_plain, b_call]:  # B's exact content under B's idempotency key
        first = await world.a.append(**event)
        assert first["replayed"] is False
        assert first["event"]["id"] not in world.b_ids
        world.a_ids.add(first["event"]["id"])
        again = await world.a.append(**event)  # from now on it is A's own key
        assert again["replayed"] is True and again["event"]["id"] == first["event"]["id"]
    batch = await world.a.append_many([b_only])
    assert len(batch) == 1 and batch[0]["id"] not in world.b_ids
    world.a_ids.add(batch[0]["id"])
    # A key both tenants used: it means A's own event inside A, whatever B stored under it.
    data = await world.a.data(APPEND, {"input": b_shared})
    payload = data["appendMemoryEvent"]
    assert payload["event"] is None and payload["replayed"] is False
    assert [(e["code"], e["field"]) for e in payload["errors"]] == [
        ("CONFLICT", ["input", "idempotencyKey"])
    ]
    a_shared = _events_of(A_WORDS, idem="a-idem", source_ref="a-msg-0001")[3]
    replay = await world.a.append(**a_shared)
    assert replay["replayed"] is True and replay["event"]["id"] in world.a_ids

    assert _ids(await world.a.events()) <= world.a_ids
    await _assert_b_unchanged(world)
    assert _ids(await world.b.events()).isdisjoint(world.a_ids)
    _assert_no_leak(world)


async def test_a_writes_never_land_in_b(world: World) -> None:
    mine = await world.a.create(
        scope="ENTITY",
        scopeRef=B_ONLY_REF,
        title="A's note",
        tags=[B_ONLY_TAG],
        summary=f"{A_WORDS[0]} on the same scope ref and tag B uses.",
    )
    appended = await world.a.append(
        scope="ENTITY", scopeRef=B_ONLY_REF, kind="decision", body=f"{A_WORDS[1]} decision."
    )
    world.a_ids |= {mine["id"], appended["event"]["id"]}
    await world.a.data(UPDATE, {"id": mine["id"], "input": {"title": "A's note, edited"}})
    await _assert_b_unchanged(world)
    _assert_no_leak(world)


# ------------------------------------------------------------- nothing names a tenant


async def test_tenant_headers_variables_and_extensions_change_nothing(world: World) -> None:
    b_id = world.b.tenant.id
    plain = await world.a.data(EVENTS, {})
    attempts: list[dict[str, Any]] = [
        {"headers": {"X-Tenant-Id": b_id}},
        {"headers": {"X-Tenant": b_id, "Tenant": b_id, "X-Forwarded-Tenant": b_id}},
        {"params": {"tenant": b_id, "tenantId": b_id}},
        {"extensions": {"tenant": b_id, "tenantId": b_id}},
    ]
    for attempt in attempts:
        data = await world.a.data(EVENTS, {"tenant": b_id, "tenantId": b_id}, **attempt)
        assert data == plain
        b_event = world.b_snapshot["events"][0]["id"]
        data = await world.a.data(EVENT, {"id": b_event, "tenant": b_id}, **attempt)
        assert data["memoryEvent"] is None
    _assert_no_leak(world)


# --------------------------------------------------------------------- revoked keys


@pytest.fixture
async def uncached(tmp_path: Path) -> AsyncIterator[tuple[Container, httpx.AsyncClient]]:
    """A container that asks the control database on every request (no auth cache)."""
    settings = Settings(_env_file=None, data_dir=tmp_path / "uncached", auth_cache_seconds=0)  # type: ignore[call-arg]
    container = await build(settings)
    transport = httpx.ASGITransport(app=create_app(container=container))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield container, client
    await container.aclose()


async def test_a_revoked_key_of_b_is_refused_at_once(
    uncached: tuple[Container, httpx.AsyncClient],
) -> None:
    container, client = uncached
    b = await make_tenant(container, "tenant-b")
    issued = await tenants.create_key(container.control, b.id)
    second = Api(client, TenantFixture(b.id, issued.secret))
    appended = await second.append(scope="INSTITUTIONAL", kind="decision", body="B's decision.")
    assert _ids(await second.events()) == {appended["event"]["id"]}  # the key was in use

    await tenants.revoke_key(container.control, issued.key.id)
    response = await second.post(EVENTS, {})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert appended["event"]["id"] not in response.text
    # B's other key still works.
    assert _ids(await Api(client, b).events()) == {appended["event"]["id"]}


async def test_a_never_used_revoked_key_is_refused(
    container: Container, client: httpx.AsyncClient
) -> None:
    b = await make_tenant(container, "tenant-b")
    issued = await tenants.create_key(container.control, b.id)
    await tenants.revoke_key(container.control, issued.key.id)
    response = await Api(client, TenantFixture(b.id, issued.secret)).post(EVENTS, {})
    assert response.status_code == 401
    assert response.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


# ------------------------------------------------------- eviction under concurrency


async def test_tenant_cache_eviction_never_mixes_tenants(tmp_path: Path) -> None:
    """With room for one open database, A's and B's requests interleave and evict each other."""
    settings = Settings(_env_file=None, data_dir=tmp_path / "lru", tenant_cache_size=1)  # type: ignore[call-arg]
    container = await build(settings)
    try:
        transport = httpx.ASGITransport(app=create_app(container=container))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            a = Api(client, await make_tenant(container, "tenant-a"))
            b = Api(client, await make_tenant(container, "tenant-b"))

            async def write(api: Api, n: int) -> str:
                body = f"{api.tenant.id} event {n}"
                payload = await api.append(scope="INSTITUTIONAL", kind="decision", body=body)
                return str(payload["event"]["id"])

            written = await asyncio.gather(*(write(a if n % 2 else b, n) for n in range(40)))
            listed = await asyncio.gather(*(api.events() for api in [a, b] * 5))
        a_ids = {written[n] for n in range(40) if n % 2}
        b_ids = {written[n] for n in range(40) if not n % 2}
        for i, events in enumerate(listed):
            api, ids = (a, a_ids) if i % 2 == 0 else (b, b_ids)
            assert _ids(events) == ids
            assert all(e["body"].startswith(api.tenant.id) for e in events)
    finally:
        await container.aclose()
