"""The services name fields by the domain's names; each surface reports them at its own
place: GraphQL under its `input`/`filter` arguments, REST at the body, query parameter or
header. Messages and paths pinned here are what clients of each surface have been seeing."""

from typing import Any

import httpx

from app.services import limits
from tests.conftest import TenantFixture

EVENT = {"scope": "entity", "scopeRef": "ent_acme", "kind": "call_summary", "body": "Acme call."}
EVENT_GQL = {"scope": "ENTITY", "scopeRef": "ent_acme", "kind": "call_summary", "body": "Acme."}
ENTRY_GQL = {"scope": "ENTITY", "scopeRef": "ent_acme", "title": "T", "summary": "S"}
LONG_SEARCH = "x" * (limits.SEARCH_MAX_CHARS + 1)
TOO_LONG = f"is longer than {limits.SEARCH_MAX_CHARS} characters"


async def graphql(
    client: httpx.AsyncClient, tenant: TenantFixture, query: str, variables: dict[str, Any]
) -> dict[str, Any]:
    r = await client.post(
        "/graphql", json={"query": query, "variables": variables}, headers=tenant.headers
    )
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def query_error(body: dict[str, Any]) -> tuple[str, list[str]]:
    [error] = body["errors"]
    return error["message"], error["extensions"]["field"]


ENTRIES = "query($f: MemoryEntryFilter, $after: String) { memoryEntries(filter: $f, after: $after) { edges { cursor } } }"  # noqa: E501
EVENTS = "query($f: MemoryEventFilter, $first: Int) { memoryEvents(filter: $f, first: $first) { edges { cursor } } }"  # noqa: E501
APPEND = "mutation($i: AppendMemoryEventInput!) { appendMemoryEvent(input: $i) { errors { field code message } } }"  # noqa: E501
APPEND_MANY = "mutation($i: [AppendMemoryEventInput!]!) { appendMemoryEvents(input: $i) { errors { field code message } } }"  # noqa: E501
CREATE = "mutation($i: CreateMemoryEntryInput!) { createMemoryEntry(input: $i) { entry { id } errors { field code message } } }"  # noqa: E501
UPDATE = "mutation($id: ID!, $i: UpdateMemoryEntryInput!) { updateMemoryEntry(id: $id, input: $i) { errors { field code message } } }"  # noqa: E501


async def test_graphql_reports_list_errors_under_filter_as_before(
    client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    cases: list[tuple[str, dict[str, Any], str, list[str]]] = [
        (ENTRIES, {"f": {"search": LONG_SEARCH}}, f"filter.search {TOO_LONG}", ["filter.search"]),
        (
            ENTRIES,
            {"f": {"search": "!!"}},
            "filter.search has no searchable words (letters or digits)",
            ["filter.search"],
        ),
        (
            ENTRIES,
            {"f": {"minImportance": 9}},
            "minImportance must be 1 to 5",
            ["filter", "minImportance"],
        ),
        (ENTRIES, {"after": "zzz"}, "after is not a valid cursor", ["after"]),
        (EVENTS, {"f": {"search": LONG_SEARCH}}, f"filter.search {TOO_LONG}", ["filter.search"]),
        (
            EVENTS,
            {"f": {"occurredAfter": "1969-12-31T00:00:00Z"}},
            "filter.occurredAfter must be after 1970-01-01T00:00:00Z",
            ["filter.occurredAfter"],
        ),
        (
            EVENTS,
            {"first": limits.PAGE_MAX + 1},
            f"first is capped at {limits.PAGE_MAX}, got {limits.PAGE_MAX + 1}",
            ["first"],
        ),
    ]
    for query, variables, message, field in cases:
        body = await graphql(client, tenant, query, variables)
        assert query_error(body) == (message, field), variables


async def test_graphql_reports_mutation_errors_under_input_as_before(
    client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    first = await graphql(client, tenant, APPEND, {"i": {**EVENT_GQL, "idempotencyKey": "k1"}})
    assert first["data"]["appendMemoryEvent"]["errors"] == []
    again = {**EVENT_GQL, "body": "other", "idempotencyKey": "k1"}
    body = await graphql(client, tenant, APPEND, {"i": again})
    assert body["data"]["appendMemoryEvent"]["errors"] == [
        {
            "field": ["input", "idempotencyKey"],
            "code": "CONFLICT",
            "message": "idempotencyKey 'k1' was already used for a different event",
        }
    ]

    batch = [EVENT_GQL, {**EVENT_GQL, "kind": "Bad Kind"}, {**again, "idempotencyKey": "k1"}]
    body = await graphql(client, tenant, APPEND_MANY, {"i": batch})
    assert [(e["field"], e["code"]) for e in body["data"]["appendMemoryEvents"]["errors"]] == [
        (["input", "1", "kind"], "INVALID")
    ]
    body = await graphql(client, tenant, APPEND_MANY, {"i": []})
    assert body["data"]["appendMemoryEvents"]["errors"] == [
        {
            "field": ["input"],
            "code": "INVALID",
            "message": "a batch must hold at least one event",
        }
    ]

    created = await graphql(client, tenant, CREATE, {"i": ENTRY_GQL})
    entry_id = created["data"]["createMemoryEntry"]["entry"]["id"]
    body = await graphql(client, tenant, UPDATE, {"id": entry_id, "i": {"expectedVersion": 7}})
    assert body["data"]["updateMemoryEntry"]["errors"] == [
        {
            "field": ["input", "expectedVersion"],
            "code": "CONFLICT",
            "message": "entry is at version 1, not 7",
        }
    ]
    body = await graphql(client, tenant, CREATE, {"i": {**ENTRY_GQL, "title": " "}})
    assert body["data"]["createMemoryEntry"]["errors"] == [
        {
            "field": ["input", "title"],
            "code": "INVALID",
            "message": "title must not be empty",
        }
    ]


def errors(r: httpx.Response, status: int) -> list[tuple[str | None, str, str]]:
    assert r.status_code == status, r.text
    return [(e["field"], e["in"], e["message"]) for e in r.json()["errors"]]


async def test_rest_reports_each_field_at_its_place_in_its_name(
    client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    h = tenant.headers

    async def get(url: str, **params: Any) -> httpx.Response:
        return await client.get(url, params=params, headers=h)

    assert errors(await get("/memory", search=LONG_SEARCH), 400) == [
        ("search", "query", f"search {TOO_LONG}")
    ]
    assert errors(await get("/memory/events", search="!!"), 400) == [
        ("search", "query", "search has no searchable words (letters or digits)")
    ]
    assert errors(await get("/memory/events", cursor="zzz"), 400) == [
        ("cursor", "query", "cursor is not a valid cursor")
    ]
    assert errors(await get("/memory", minImportance="9"), 400) == [
        ("minImportance", "query", "minImportance must be 1 to 5")
    ]
    assert errors(await get("/memory/events", occurredAfter="1969-12-31T00:00:00Z"), 400) == [
        ("occurredAfter", "query", "occurredAfter must be after 1970-01-01T00:00:00Z")
    ]

    keyed = {**h, "Idempotency-Key": "k1"}
    r = await client.post("/memory/events", json=EVENT, headers=keyed)
    assert r.status_code == 201, r.text
    r = await client.post("/memory/events", json={**EVENT, "body": "other"}, headers=keyed)
    assert errors(r, 409) == [
        ("Idempotency-Key", "header", "Idempotency-Key 'k1' was already used for a different event")
    ]
    r = await client.post(
        "/memory/events", json={**EVENT, "body": "x", "idempotencyKey": "k1"}, headers=h
    )
    assert errors(r, 409) == [
        ("idempotencyKey", "body", "idempotencyKey 'k1' was already used for a different event")
    ]
    r = await client.post("/memory/events", json=[EVENT, {**EVENT, "kind": "Bad"}], headers=h)
    assert [(f, w) for f, w, _ in errors(r, 422)] == [("1.kind", "body")]
    r = await client.post("/memory/events", json=[], headers=h)
    assert errors(r, 422) == [(None, "body", "a batch must hold at least one event")]
