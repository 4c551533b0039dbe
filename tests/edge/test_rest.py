"""The REST routes over HTTP (ASGI): each route's success and error paths, problem+json,
ETag/If-Match, Idempotency-Key retries, all-or-nothing batches, limits and isolation."""

import base64
import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from app.deps import Container
from app.edge.limits import MAX_BODY_BYTES
from app.edge.rest.openapi import openapi_document
from app.services import cursors, limits
from tests.conftest import TenantFixture, make_tenant

EVENT = {"scope": "entity", "scopeRef": "ent_acme", "kind": "call_summary", "body": "Acme call."}
ENTRY = {
    "scope": "entity",
    "scopeRef": "ent_acme",
    "title": "Acme ROAS target",
    "summary": "Acme wants a ROAS of 4 on the spring campaign.",
    "tags": ["decision", "roas"],
}
ENTRY_KEYS = {
    "id",
    "scope",
    "scopeRef",
    "title",
    "summary",
    "tags",
    "importance",
    "source",
    "createdAt",
    "updatedAt",
    "version",
}
EVENT_KEYS = {
    "id",
    "scope",
    "scopeRef",
    "kind",
    "body",
    "source",
    "sourceRef",
    "occurredAt",
    "recordedAt",
    "compressedAt",
    "compressedInto",
}


def problem(
    response: httpx.Response,
    status: int,
    field: str | None = None,
    where: str | None = None,
    code: str | None = None,
) -> dict[str, Any]:
    """Assert an RFC 9457 problem with `status`; with `field`, one of its errors names it."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert body["type"] == "about:blank" and body["status"] == status
    assert body["title"] and body["detail"] and body["errors"]
    assert body["requestId"] == response.headers["x-request-id"]
    if field is not None or where is not None or code is not None:
        assert any(
            (field is None or e["field"] == field)
            and (where is None or e["in"] == where)
            and (code is None or e["code"] == code)
            for e in body["errors"]
        ), body["errors"]
    return body


class Api:
    """A REST client with one tenant's key."""

    def __init__(self, client: httpx.AsyncClient, tenant: TenantFixture) -> None:
        self.client = client
        self.headers = tenant.headers

    async def request(
        self, method: str, url: str, headers: dict[str, str] | None = None, **kw: Any
    ) -> httpx.Response:
        return await self.client.request(
            method, url, headers={**self.headers, **(headers or {})}, **kw
        )

    async def get(self, url: str, **kw: Any) -> httpx.Response:
        return await self.request("GET", url, **kw)

    async def post(self, url: str, **kw: Any) -> httpx.Response:
        return await self.request("POST", url, **kw)

    async def put(self, url: str, **kw: Any) -> httpx.Response:
        return await self.request("PUT", url, **kw)

    async def delete(self, url: str, **kw: Any) -> httpx.Response:
        return await self.request("DELETE", url, **kw)

    async def entry(self, **fields: Any) -> dict[str, Any]:
        r = await self.post("/memory", json={**ENTRY, **fields})
        assert r.status_code == 201, r.text
        return dict(r.json())

    async def event(self, **fields: Any) -> dict[str, Any]:
        r = await self.post("/memory/events", json={**EVENT, **fields})
        assert r.status_code == 201, r.text
        return dict(r.json())

    async def all(self, url: str, **params: Any) -> list[dict[str, Any]]:
        """Every item of a list, page by page."""
        items: list[dict[str, Any]] = []
        cursor = None
        while True:
            r = await self.get(url, params={**params, **({"cursor": cursor} if cursor else {})})
            assert r.status_code == 200, r.text
            items += r.json()["items"]
            cursor = r.json()["nextCursor"]
            if cursor is None:
                return items


@pytest.fixture
def api(client: httpx.AsyncClient, tenant: TenantFixture) -> Api:
    return Api(client, tenant)


# ------------------------------------------------------------------------------ auth

ROUTES = [
    ("GET", "/memory"),
    ("POST", "/memory"),
    ("GET", "/memory/mem_x"),
    ("PUT", "/memory/mem_x"),
    ("PATCH", "/memory/mem_x"),
    ("DELETE", "/memory/mem_x"),
    ("GET", "/memory/events"),
    ("POST", "/memory/events"),
    ("GET", "/memory/events/evt_x"),
    ("GET", "/memory/context"),
    ("GET", "/memory/export"),
    ("GET", "/memory/mem_x/versions"),
    ("POST", "/memory/mem_x/restore"),
    ("GET", "/memory/scopes"),
    ("GET", "/memory/erasures"),
    ("POST", "/memory/erasures"),
    ("DELETE", "/memory/events/mem_x"),
    ("GET", "/webhooks"),
    ("POST", "/webhooks"),
    ("GET", "/webhooks/mem_x"),
    ("PATCH", "/webhooks/mem_x"),
    ("DELETE", "/webhooks/mem_x"),
    ("GET", "/webhooks/mem_x/deliveries"),
    ("POST", "/webhooks/mem_x/deliveries/msg_x/replay"),
]


@pytest.mark.parametrize(("method", "url"), ROUTES)
@pytest.mark.parametrize("authorization", [None, "Bearer jm_not-a-key", "Basic abc"])
async def test_without_a_valid_key_every_route_is_401_problem(
    client: httpx.AsyncClient, method: str, url: str, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    r = await client.request(method, url, json=EVENT, headers=headers)
    problem(r, 401, "Authorization", "header", "UNAUTHENTICATED")
    assert r.headers["www-authenticate"] == "Bearer"


async def test_openapi_is_served_without_a_key(client: httpx.AsyncClient) -> None:
    r = await client.get("/openapi.json")
    assert r.status_code == 200 and r.json()["openapi"] == "3.1.0"


async def test_a_sane_request_id_is_echoed(api: Api) -> None:
    r = await api.get("/memory", headers={"X-Request-Id": "req-42"})
    assert r.headers["x-request-id"] == "req-42"
    bad = await api.get("/memory", params={"limit": "x"}, headers={"X-Request-Id": "req-43"})
    assert problem(bad, 400)["requestId"] == "req-43"


# --------------------------------------------------------------------------- entries


async def test_create_read_update_delete_an_entry(api: Api) -> None:
    r = await api.post("/memory", json=ENTRY)
    assert r.status_code == 201
    entry = r.json()
    assert set(entry) == ENTRY_KEYS
    assert entry["id"].startswith("mem_") and entry["version"] == 1
    assert (entry["scope"], entry["source"], entry["importance"]) == ("entity", "manual", 3)
    assert entry["createdAt"].endswith("Z") and entry["createdAt"] == entry["updatedAt"]
    assert r.headers["location"] == f"/memory/{entry['id']}" and r.headers["etag"] == '"1"'

    got = await api.get(r.headers["location"])
    assert got.status_code == 200 and got.json() == entry and got.headers["etag"] == '"1"'

    put = await api.put(f"/memory/{entry['id']}", json={"importance": 5, "tags": ["roas"]})
    assert put.status_code == 200 and put.headers["etag"] == '"2"'
    updated = put.json()
    assert (updated["importance"], updated["tags"], updated["version"]) == (5, ["roas"], 2)
    assert updated["title"] == entry["title"]  # only the fields given change
    assert updated["updatedAt"] > entry["updatedAt"]

    deleted = await api.delete(f"/memory/{entry['id']}")
    assert deleted.status_code == 204 and deleted.content == b""
    problem(await api.get(f"/memory/{entry['id']}"), 404, "id", "path", "NOT_FOUND")
    problem(await api.delete(f"/memory/{entry['id']}"), 404, "id", "path", "NOT_FOUND")


async def test_enums_are_lowercase_and_uppercase_is_accepted(api: Api) -> None:
    entry = await api.entry(scope="ENTITY", source="CALL")
    assert (entry["scope"], entry["source"]) == ("entity", "call")
    r = await api.get("/memory", params={"scope": "ENTITY", "source": "Call"})
    assert [e["id"] for e in r.json()["items"]] == [entry["id"]]


async def test_null_and_absent_optional_fields_take_their_defaults(api: Api) -> None:
    entry = await api.entry(tags=None, importance=None, source=None)
    assert (entry["tags"], entry["importance"], entry["source"]) == ([], 3, "manual")
    same = await api.put(f"/memory/{entry['id']}", json={"title": None, "summary": None})
    assert same.json() == entry  # nothing given, nothing changed: no new version
    inst = await api.entry(scope="institutional", scopeRef=None)
    assert inst["scopeRef"] is None


@pytest.mark.parametrize(
    ("fields", "field", "code"),
    [
        ({"title": ...}, "title", "INVALID"),
        ({"title": None}, "title", "INVALID"),
        ({"title": ""}, "title", "INVALID"),
        ({"title": "two\nlines"}, "title", "INVALID"),
        ({"title": "t" * (limits.TITLE_MAX_CHARS + 1)}, "title", "TOO_LARGE"),
        ({"summary": "s" * (limits.ENTRY_SUMMARY_MAX_BYTES + 1)}, "summary", "TOO_LARGE"),
        ({"tags": [f"t{i}" for i in range(limits.TAGS_MAX + 1)]}, "tags", "TOO_LARGE"),
        ({"tags": ["ok", " padded "]}, "tags.1", "INVALID"),
        ({"tags": "decision"}, "tags", "INVALID"),
        ({"tags": [1]}, "tags.0", "INVALID"),
        ({"importance": 9}, "importance", "INVALID"),
        ({"importance": "5"}, "importance", "INVALID"),
        ({"importance": 4.5}, "importance", "INVALID"),
        ({"importance": True}, "importance", "INVALID"),
        ({"importance": 10**40}, "importance", "INVALID"),
        ({"scope": "galaxy"}, "scope", "INVALID"),
        ({"scope": "institutional"}, "scopeRef", "INVALID"),
        ({"scopeRef": None}, "scopeRef", "INVALID"),
        ({"source": "compactor"}, "source", "FORBIDDEN"),
        ({"source": "fax"}, "source", "INVALID"),
        ({"version": 3}, "version", "INVALID"),
        ({"scope_ref": "ent_acme"}, "scope_ref", "INVALID"),
    ],
)
async def test_create_names_the_offending_field(
    api: Api, fields: dict[str, Any], field: str, code: str
) -> None:
    body = {k: v for k, v in {**ENTRY, **fields}.items() if v is not ...}  # ...: left out
    problem(await api.post("/memory", json=body), 422, field, "body", code)
    assert await api.all("/memory") == []


async def test_put_validates_like_create(api: Api) -> None:
    entry = await api.entry()
    url = f"/memory/{entry['id']}"
    problem(await api.put(url, json={"importance": 0}), 422, "importance", "body", "INVALID")
    problem(await api.put(url, json={"title": "x" * 201}), 422, "title", "body", "TOO_LARGE")
    problem(await api.put(url, json={"scope": "team"}), 422, "scope", "body", "READ_ONLY")
    problem(await api.put(url, json=[{"importance": 2}]), 422, None, "body", "INVALID")
    assert (await api.get(url)).json() == entry


async def test_unknown_ids_are_404(api: Api) -> None:
    for url in ["/memory/mem_00000000000000000000000000", "/memory/evt_x", "/memory/%20"]:
        problem(await api.get(url), 404, "id", "path", "NOT_FOUND")
        problem(await api.put(url, json={"importance": 2}), 404, "id", "path", "NOT_FOUND")
        problem(await api.delete(url), 404, "id", "path", "NOT_FOUND")
    r = await api.put("/memory/mem_x", json={"importance": 2}, headers={"If-Match": '"1"'})
    problem(r, 404, "id", "path")


# ---------------------------------------------------------------------- ETag/If-Match


async def test_if_match_with_the_current_version_updates(api: Api) -> None:
    entry = await api.entry()
    url = f"/memory/{entry['id']}"
    for i, tag in enumerate(['"1"', 'W/"2"', '"1", "3"', "*"]):
        r = await api.put(url, json={"importance": 1 + i}, headers={"If-Match": tag})
        assert r.status_code == 200, (tag, r.text)
        assert r.headers["etag"] == f'"{i + 2}"'


async def test_if_match_with_a_stale_version_is_412_and_changes_nothing(api: Api) -> None:
    entry = await api.entry()
    url = f"/memory/{entry['id']}"
    assert (await api.put(url, json={"importance": 5}, headers={"If-Match": '"1"'})).is_success
    for stale in ['"1"', '"0"', '"7", "8"', 'W/"1"']:
        r = await api.put(url, json={"importance": 1}, headers={"If-Match": stale})
        body = problem(r, 412, "If-Match", "header", "PRECONDITION_FAILED")
        assert '"2"' in body["detail"]  # says what the current ETag is
    current = await api.get(url)
    assert current.json()["importance"] == 5 and current.headers["etag"] == '"2"'


async def test_expected_version_in_the_body_is_409_when_stale(api: Api) -> None:
    entry = await api.entry()
    url = f"/memory/{entry['id']}"
    ok = await api.put(url, json={"importance": 4, "expectedVersion": 1})
    assert ok.status_code == 200 and ok.json()["version"] == 2
    stale = await api.put(url, json={"importance": 1, "expectedVersion": 1})
    problem(stale, 409, "expectedVersion", "body", "CONFLICT")
    both = await api.put(
        url, json={"importance": 1, "expectedVersion": 2}, headers={"If-Match": '"1"'}
    )
    problem(both, 400, "If-Match", "header")


@pytest.mark.parametrize("if_match", ["3", "'3'", '"three"', '"1" "2"', "", '""'])
async def test_a_malformed_if_match_is_400(api: Api, if_match: str) -> None:
    entry = await api.entry()
    r = await api.put(
        f"/memory/{entry['id']}", json={"importance": 1}, headers={"If-Match": if_match}
    )
    # An empty header too: empty is an error, as for a query parameter (docs/rest.md).
    problem(r, 400, "If-Match", "header", "INVALID")


async def test_a_conditional_delete_is_refused_not_ignored(api: Api) -> None:
    entry = await api.entry()
    r = await api.delete(f"/memory/{entry['id']}", headers={"If-Match": '"1"'})
    problem(r, 400, "If-Match", "header")
    assert (await api.get(f"/memory/{entry['id']}")).status_code == 200


# ----------------------------------------------------------------- listing entries


async def test_list_entries_filters(api: Api) -> None:
    roas = await api.entry()
    budget = await api.entry(
        title="Budget", summary="Spend cap 10k.", tags=["decision"], importance=5
    )
    other = await api.entry(scopeRef="ent_other", title="Other ROAS", tags=["roas"], source="call")
    inst = await api.entry(scope="institutional", scopeRef=None, title="Policy", tags=[])

    async def ids(**params: Any) -> set[str]:
        return {e["id"] for e in await api.all("/memory", **params)}

    assert await ids() == {roas["id"], budget["id"], other["id"], inst["id"]}
    assert await ids(scope="entity", scopeRef="ent_acme") == {roas["id"], budget["id"]}
    assert await ids(scope="institutional") == {inst["id"]}
    assert await ids(scopeRef="ent_other") == {other["id"]}
    assert await ids(tag="decision") == {roas["id"], budget["id"]}
    assert await ids(tag=["decision", "roas"]) == {roas["id"]}  # every tag must match
    assert await ids(minImportance=5) == {budget["id"]}
    assert await ids(source=["call", "chat"]) == {other["id"]}
    # An empty value (`scopeRef=`) is an error, not absent: test_rest_conventions.py.


async def test_search_ranks_and_scores_only_when_searching(api: Api) -> None:
    roas = await api.entry()
    await api.entry(title="Budget", summary="Spend cap 10k.", tags=["budget"])
    plain = (await api.get("/memory")).json()["items"]
    assert all(set(e) == ENTRY_KEYS for e in plain)
    r = await api.get("/memory", params={"search": "what is the ROAS target?", "tag": "decision"})
    items = r.json()["items"]
    assert [e["id"] for e in items] == [roas["id"]]
    assert (
        set(items[0]) == ENTRY_KEYS | {"score", "matchedTerms", "similarity"}
        and items[0]["score"] > 0
    )


async def test_list_entries_pages_with_cursors(api: Api) -> None:
    made = [await api.entry(title=f"Entry {i}") for i in range(5)]
    first = await api.get("/memory", params={"limit": 2})
    assert len(first.json()["items"]) == 2 and first.json()["nextCursor"]
    seen = await api.all("/memory", limit=2)
    assert [e["id"] for e in seen] == [e["id"] for e in reversed(made)]  # latest update first
    searched = await api.all("/memory", search="entry", limit=2)
    assert sorted(e["id"] for e in searched) == sorted(e["id"] for e in made)


def forged_cursor(*key: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": str(limits.PAGE_MAX + 1)}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"limit": "9" * 30}, "limit"),
        ({"scope": "galaxy"}, "scope"),
        ({"minImportance": "9"}, "minImportance"),
        ({"minImportance": "1.5"}, "minImportance"),
        ({"source": "fax"}, "source.0"),
        ({"search": "?!"}, "search"),
        ({"search": "x" * (limits.SEARCH_MAX_CHARS + 1)}, "search"),
        ({"cursor": "not a cursor"}, "cursor"),
        ({"cursor": forged_cursor("events", "2026-01-01T00:00:00", "x")}, "cursor"),
        ({"cursor": forged_cursor("entries", "not a time", "x")}, "cursor"),
        ({"cursor": forged_cursor("entries-search", 1.0, 10**30)}, "cursor"),
        ({"scope_ref": "ent_acme"}, "scope_ref"),
        ({"scope": ["entity", "team"]}, "scope"),
    ],
)
async def test_bad_list_entries_parameters_are_400(
    api: Api, params: dict[str, Any], field: str
) -> None:
    await api.entry()
    if "search" not in params and "entries-search" in str(params.get("cursor", "")):
        params = {**params, "search": "roas"}
    body = problem(await api.get("/memory", params=params), 400, field, "query")
    # Messages name the REST parameter, not GraphQL's (filter.search, after, first).
    assert not any(w in body["detail"] for w in ("filter.", "after ", "first ")), body["detail"]


# ---------------------------------------------------------------------------- events


async def test_append_and_list_events(api: Api) -> None:
    r = await api.post("/memory/events", json={**EVENT, "source": "webhook", "sourceRef": "run_1"})
    assert r.status_code == 201
    event = r.json()
    assert set(event) == EVENT_KEYS
    assert event["id"].startswith("evt_") and event["scope"] == "entity"
    assert event["occurredAt"] == event["recordedAt"] and event["occurredAt"].endswith("Z")
    assert (event["compressedAt"], event["compressedInto"]) == (None, None)
    listed = (await api.get("/memory/events")).json()
    assert listed == {"items": [event], "nextCursor": None}


async def test_occurred_at_is_answered_in_utc(api: Api) -> None:
    event = await api.event(occurredAt="2026-03-01T10:00:00+02:00")
    assert event["occurredAt"] == "2026-03-01T08:00:00Z"
    naive = await api.post("/memory/events", json={**EVENT, "occurredAt": "2026-03-01T10:00:00"})
    problem(naive, 422, "occurredAt", "body", "INVALID")


async def test_list_events_filters_newest_first(api: Api) -> None:
    old = await api.event(occurredAt="2025-01-01T00:00:00Z", kind="decision")
    mid = await api.event(occurredAt="2025-06-01T00:00:00Z", scopeRef="ent_other")
    new = await api.event(occurredAt="2026-01-01T00:00:00Z", body="ROAS talk")

    async def ids(**params: Any) -> list[str]:
        return [e["id"] for e in await api.all("/memory/events", **params)]

    assert await ids() == [new["id"], mid["id"], old["id"]]
    assert await ids(limit=1) == [new["id"], mid["id"], old["id"]]
    assert await ids(scope="entity", scopeRef="ent_acme") == [new["id"], old["id"]]
    assert await ids(kind=["decision", "campaign_change"]) == [old["id"]]
    assert await ids(occurredAfter="2025-03-01T00:00:00Z") == [new["id"], mid["id"]]
    assert await ids(occurredBefore="2025-03-01T02:00:00+02:00") == [old["id"]]
    assert await ids(compressed="false") == [new["id"], mid["id"], old["id"]]
    assert await ids(compressed="true") == []
    assert await ids(search="roas") == [new["id"]]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"occurredAfter": "yesterday"}, "occurredAfter"),
        ({"occurredAfter": "2026-01-01"}, "occurredAfter"),
        ({"occurredBefore": "2026-01-01T00:00:00"}, "occurredBefore"),
        ({"occurredBefore": "0001-01-01T00:00:00+01:00"}, "occurredBefore"),
        ({"occurredAfter": "2026-13-01T00:00:00Z"}, "occurredAfter"),
        ({"compressed": "maybe"}, "compressed"),
        ({"scope": "entity", "scopeRef": "bad\nref"}, "scopeRef"),
        ({"limit": "-1"}, "limit"),
        ({"cursor": forged_cursor("entries", "2026-01-01T00:00:00", "x")}, "cursor"),
        ({"cursor": forged_cursor("events", "never", "x")}, "cursor"),
        ({"tag": "decision"}, "tag"),
    ],
)
async def test_bad_list_events_parameters_are_400(
    api: Api, params: dict[str, Any], field: str
) -> None:
    await api.event()
    problem(await api.get("/memory/events", params=params), 400, field, "query")


@pytest.mark.parametrize(
    ("fields", "field", "code"),
    [
        ({"kind": "Call Summary"}, "kind", "INVALID"),
        ({"kind": "k" * (limits.KIND_MAX_CHARS + 1)}, "kind", "TOO_LARGE"),
        ({"body": " "}, "body", "INVALID"),
        ({"body": "b" * (limits.EVENT_BODY_MAX_BYTES + 1)}, "body", "TOO_LARGE"),
        ({"body": {"text": "hi"}}, "body", "INVALID"),
        ({"scope": "institutional"}, "scopeRef", "INVALID"),
        ({"scope": None}, "scope", "INVALID"),
        ({"source": ""}, "source", "INVALID"),
        ({"sourceRef": "r" * (limits.REF_MAX_CHARS + 1)}, "sourceRef", "TOO_LARGE"),
        ({"occurredAt": "2999-01-01T00:00:00Z"}, "occurredAt", "INVALID"),
        ({"occurredAt": "0001-01-01T00:00:00+01:00"}, "occurredAt", "INVALID"),
        ({"occurredAt": 1767225600}, "occurredAt", "INVALID"),
        ({"idempotencyKey": 42}, "idempotencyKey", "INVALID"),
        ({"replayed": False}, "replayed", "INVALID"),
    ],
)
async def test_append_names_the_offending_field(
    api: Api, fields: dict[str, Any], field: str, code: str
) -> None:
    problem(await api.post("/memory/events", json={**EVENT, **fields}), 422, field, "body", code)
    assert await api.all("/memory/events") == []


# ------------------------------------------------------------------- idempotency


async def test_idempotency_key_header_replays_and_conflicts(api: Api) -> None:
    key = {"Idempotency-Key": "hook-delivery-1"}
    first = await api.post("/memory/events", json=EVENT, headers=key)
    assert first.status_code == 201
    again = await api.post("/memory/events", json=EVENT, headers=key)
    assert again.status_code == 200 and again.content == first.content
    changed = await api.post("/memory/events", json={**EVENT, "body": "Other."}, headers=key)
    problem(changed, 409, "Idempotency-Key", "header", "CONFLICT")
    # The header and the body field are one key: either spelling replays the other.
    body_key = await api.post("/memory/events", json={**EVENT, "idempotencyKey": "hook-delivery-1"})
    assert body_key.status_code == 200 and body_key.json() == first.json()
    assert [e["id"] for e in await api.all("/memory/events")] == [first.json()["id"]]


async def test_a_retry_matches_on_the_instant_not_the_spelling(api: Api) -> None:
    key = {"Idempotency-Key": "k"}
    at = {"occurredAt": "2026-03-01T10:00:00+02:00"}
    first = await api.post("/memory/events", json={**EVENT, **at}, headers=key)
    utc = await api.post(
        "/memory/events", json={**EVENT, "occurredAt": "2026-03-01T08:00:00Z"}, headers=key
    )
    defaulted = await api.post("/memory/events", json=EVENT, headers=key)
    assert (first.status_code, utc.status_code, defaulted.status_code) == (201, 200, 200)
    assert first.content == utc.content == defaulted.content
    later = await api.post(
        "/memory/events", json={**EVENT, "occurredAt": "2026-03-01T09:00:00Z"}, headers=key
    )
    problem(later, 409, "Idempotency-Key", "header", "CONFLICT")


async def test_idempotency_key_in_the_body_conflicts_naming_the_body_field(api: Api) -> None:
    await api.event(idempotencyKey="k1")
    r = await api.post("/memory/events", json={**EVENT, "body": "x", "idempotencyKey": "k1"})
    problem(r, 409, "idempotencyKey", "body", "CONFLICT")


async def test_header_and_body_keys_must_agree(api: Api) -> None:
    same = await api.post(
        "/memory/events", json={**EVENT, "idempotencyKey": "k"}, headers={"Idempotency-Key": "k"}
    )
    assert same.status_code == 201
    differ = await api.post(
        "/memory/events", json={**EVENT, "idempotencyKey": "a"}, headers={"Idempotency-Key": "b"}
    )
    problem(differ, 400, "Idempotency-Key", "header")
    problem(differ, 400, "idempotencyKey", "body")


@pytest.mark.parametrize("key", ["", "   ", "k" * (limits.REF_MAX_CHARS + 1)])
async def test_a_bad_idempotency_key_header_is_named(api: Api, key: str) -> None:
    r = await api.post("/memory/events", json=EVENT, headers={"Idempotency-Key": key})
    problem(r, 422, "Idempotency-Key", "header")
    assert await api.all("/memory/events") == []


# ---------------------------------------------------------------------------- batches


async def test_a_batch_appends_in_order_and_replays(api: Api) -> None:
    batch = [{**EVENT, "body": f"event {i}", "idempotencyKey": f"b-{i}"} for i in range(3)]
    r = await api.post("/memory/events", json=batch)
    assert r.status_code == 201
    items = r.json()["items"]
    assert [e["body"] for e in items] == ["event 0", "event 1", "event 2"]
    again = await api.post("/memory/events", json=batch)
    assert again.status_code == 200 and again.content == r.content
    grown = await api.post("/memory/events", json=[*batch, {**EVENT, "body": "event 3"}])
    assert grown.status_code == 201 and grown.json()["items"][:3] == items
    assert len(await api.all("/memory/events")) == 4


async def test_a_batch_is_all_or_nothing(api: Api) -> None:
    await api.event(idempotencyKey="taken")
    bad = [EVENT, {**EVENT, "kind": "Bad Kind"}, {**EVENT, "scope": "team", "scopeRef": None}]
    body = problem(await api.post("/memory/events", json=bad), 422)
    assert {(e["field"], e["code"]) for e in body["errors"]} == {
        ("1.kind", "INVALID"),
        ("2.scopeRef", "INVALID"),
    }
    typed = problem(await api.post("/memory/events", json=[EVENT, {"kind": 1}]), 422)
    assert {e["field"] for e in typed["errors"]} >= {"1.kind", "1.scope", "1.body"}
    conflict = [EVENT, {**EVENT, "body": "different", "idempotencyKey": "taken"}]
    problem(
        await api.post("/memory/events", json=conflict), 409, "1.idempotencyKey", "body", "CONFLICT"
    )
    assert len(await api.all("/memory/events")) == 1  # only the first, single append


async def test_batch_limits(api: Api) -> None:
    problem(await api.post("/memory/events", json=[]), 422, None, "body")
    too_many = [{"scope": "institutional", "kind": "k", "body": "b"}] * (limits.BATCH_MAX + 1)
    problem(await api.post("/memory/events", json=too_many), 422, None, "body", "TOO_LARGE")
    assert await api.all("/memory/events") == []


async def test_the_idempotency_key_header_is_refused_with_a_batch(api: Api) -> None:
    r = await api.post("/memory/events", json=[EVENT], headers={"Idempotency-Key": "k"})
    problem(r, 400, "Idempotency-Key", "header", "INVALID")
    assert await api.all("/memory/events") == []


# ------------------------------------------------------------- bodies and media types


@pytest.mark.parametrize("url", ["/memory", "/memory/events", "/memory/{id}"])
@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin-1"],
)
async def test_a_body_that_is_not_json_is_415(api: Api, url: str, content_type: str | None) -> None:
    entry = await api.entry()
    method = "PUT" if "{id}" in url else "POST"
    headers = {"Content-Type": content_type} if content_type else {}
    r = await api.request(
        method, url.format(id=entry["id"]), content=json.dumps(EVENT).encode(), headers=headers
    )
    problem(r, 415, "Content-Type", "header", "UNSUPPORTED_MEDIA_TYPE")
    assert len(await api.all("/memory/events")) == 0


async def test_json_with_a_utf8_charset_is_fine(api: Api) -> None:
    r = await api.post(
        "/memory/events",
        content=json.dumps(EVENT).encode(),
        headers={"Content-Type": "application/json; charset=UTF-8"},
    )
    assert r.status_code == 201


NASTY_BODIES = [
    b"",
    b"{",
    b"nope",
    b'{"scope": "entity",}',
    b"[" * 10_000 + b"]" * 10_000,
    b'{"scope": "entity", "body": "\\ud800"}',
    b"\xff\xfe{}",
]
WRONG_SHAPES = [
    b'{"scope": NaN}',  # pydantic's parser reads NaN; no field takes a float, so 422
    b"null",
    b"42",
    b'"text"',
    b"[[]]",
    b'{"scope": {"$gt": ""}}',
    b'{"importance": 1e400}',
    b'{"importance": 123456789012345678901234567890}',
    b'{"tags": {"a": 1}}',
    b'{"scope": "entity", "scopeRef": "a", "title": "t", "summary": "s", "tags": [null]}',
]


@pytest.mark.parametrize("raw", NASTY_BODIES)
@pytest.mark.parametrize("url", ["/memory", "/memory/events", "/memory/{id}"])
async def test_malformed_json_is_400(api: Api, raw: bytes, url: str) -> None:
    entry = await api.entry()
    method = "PUT" if "{id}" in url else "POST"
    headers = {"Content-Type": "application/json"}
    r = await api.request(method, url.format(id=entry["id"]), content=raw, headers=headers)
    problem(r, 400, None, "body", "MALFORMED")


@pytest.mark.parametrize("raw", WRONG_SHAPES)
@pytest.mark.parametrize("url", ["/memory", "/memory/events", "/memory/{id}"])
async def test_well_formed_json_of_the_wrong_shape_is_422(api: Api, raw: bytes, url: str) -> None:
    entry = await api.entry()
    method = "PUT" if "{id}" in url else "POST"
    headers = {"Content-Type": "application/json"}
    r = await api.request(method, url.format(id=entry["id"]), content=raw, headers=headers)
    problem(r, 422, where="body")
    assert (await api.get(f"/memory/{entry['id']}")).json() == entry


async def stream(total: int, chunk: int = 1 << 20) -> AsyncIterator[bytes]:
    sent = 0
    while sent < total:
        size = min(chunk, total - sent)
        sent += size
        yield b" " * size


@pytest.mark.parametrize("url", ["/memory", "/memory/events", "/memory/{id}"])
async def test_a_body_over_the_limit_is_413(api: Api, url: str) -> None:
    entry = await api.entry()
    method = "PUT" if "{id}" in url else "POST"
    headers = {"Content-Type": "application/json"}
    path = url.format(id=entry["id"])
    declared = await api.request(method, path, content=b" " * (MAX_BODY_BYTES + 1), headers=headers)
    streamed = await api.request(method, path, content=stream(MAX_BODY_BYTES + 1), headers=headers)
    for r in [declared, streamed]:
        body = problem(r, 413, None, "body", "TOO_LARGE")
        assert str(MAX_BODY_BYTES) in body["detail"]
    assert (await api.get(path if "{id}" in url else f"/memory/{entry['id']}")).json() == entry
    assert await api.all("/memory/events") == []


# ------------------------------------------------------------------------- routing


async def test_routes_never_redirect_and_events_is_not_an_id(api: Api) -> None:
    r = await api.get("/memory")
    assert r.status_code == 200 and r.json() == {"items": [], "nextCursor": None}
    assert (await api.get("/memory/events")).json() == {"items": [], "nextCursor": None}


@pytest.mark.parametrize(
    ("method", "url"),
    [("PATCH", "/memory"), ("DELETE", "/memory/events"), ("POST", "/memory/mem_x")],
)
async def test_other_methods_are_405_problem(api: Api, method: str, url: str) -> None:
    r = await api.request(method, url)
    problem(r, 405, code="METHOD_NOT_ALLOWED")
    assert r.headers["allow"]


@pytest.mark.parametrize(
    "url", ["/memory/mem_x/sources", "/memory/events/evt_x/more", "/memory/a%2Fb"]
)
async def test_unknown_paths_under_memory_are_404_problem(api: Api, url: str) -> None:
    problem(await api.get(url), 404, code="NOT_FOUND")


# ------------------------------------------------------------------------- isolation


async def test_one_tenants_key_never_reaches_another_tenants_memory(
    client: httpx.AsyncClient, container: Container
) -> None:
    a = Api(client, await make_tenant(container, "tenant-a"))
    b = Api(client, await make_tenant(container, "tenant-b"))
    entry = await b.entry()
    key = {"Idempotency-Key": "shared-key"}
    b_event = (await b.post("/memory/events", json=EVENT, headers=key)).json()
    await b.post("/memory/events", json=[{**EVENT, "idempotencyKey": "batch-key"}])
    url = f"/memory/{entry['id']}"

    problem(await a.get(url), 404, "id")
    problem(await a.put(url, json={"title": "hijacked"}), 404, "id")
    problem(await a.put(url, json={"title": "x"}, headers={"If-Match": '"1"'}), 404, "id")
    problem(await a.delete(url), 404, "id")
    assert await a.all("/memory") == []
    assert await a.all("/memory", search="acme roas", scopeRef="ent_acme") == []
    assert await a.all("/memory/events") == []
    assert await a.all("/memory/events", search="acme", scope="entity", scopeRef="ent_acme") == []
    # The same keys in A are A's own: new events, never B's replayed.
    mine = await a.post("/memory/events", json=EVENT, headers=key)
    assert mine.status_code == 201 and mine.json()["id"] != b_event["id"]
    batch = await a.post("/memory/events", json=[{**EVENT, "idempotencyKey": "batch-key"}])
    assert batch.status_code == 201
    # B's cursors are only opaque keys: in A they page through A's rows, never B's.
    b_page = await b.get("/memory/events", params={"limit": 1})
    a_page = await a.get("/memory/events", params={"cursor": b_page.json()["nextCursor"]})
    assert {e["id"] for e in a_page.json()["items"]} <= {
        mine.json()["id"],
        *(e["id"] for e in batch.json()["items"]),
    }

    assert (await b.get(url)).json() == entry
    assert len(await b.all("/memory/events")) == 2


# ---------------------------------------------------------------- GraphQL agreement


async def test_rest_and_graphql_see_the_same_entry(api: Api) -> None:
    entry = await api.entry(source="call")
    query = """query($id: ID!) { memoryEntry(id: $id) {
        id scope scopeRef title summary tags importance source createdAt updatedAt version } }"""
    r = await api.post("/graphql", json={"query": query, "variables": {"id": entry["id"]}})
    node = r.json()["data"]["memoryEntry"]
    assert set(node) == set(entry)  # the same field names
    for name in ["id", "scopeRef", "title", "summary", "tags", "importance", "version"]:
        assert node[name] == entry[name]
    assert (node["scope"], node["source"]) == ("ENTITY", "CALL")


# ---------------------------------------------------------------------------- OpenAPI


async def test_openapi_documents_exactly_the_routes(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/openapi.json")).json()
    assert doc == json.loads(json.dumps(openapi_document()))
    operations = {
        (method.upper(), path)
        for path, item in doc["paths"].items()
        for method in item
        if method != "parameters"
    }
    assert operations == {
        (m, u.replace("mem_x", "{id}").replace("evt_x", "{id}").replace("msg_x", "{deliveryId}"))
        for m, u in ROUTES
    }
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method == "parameters":
                continue
            assert "401" in op["responses"], (method, path)
            if "requestBody" in op:
                assert {"413", "415", "422"} <= set(op["responses"]), (method, path)


async def test_an_entry_id_with_odd_characters_is_quoted_safely(api: Api) -> None:
    for raw in ["mem_%", "mem_'; DROP TABLE x;--", "mem_\u00e9"]:
        problem(await api.get(f"/memory/{quote(raw, safe='')}"), 404, "id")


@pytest.mark.parametrize(
    ("path", "kind", "key"),
    [
        ("/memory", "entries", ["not-a-date", "mem_x"]),
        ("/memory/events", "events", ["2026-01-01T00:00:00", "evt_x"]),  # no time zone
        ("/memory?search=roas", "entries-search", [2**70, 1]),
        ("/memory/events?search=roas", "events-search", [1, -5]),
    ],
)
async def test_forged_cursor_values_are_400_naming_cursor(
    api: Api, path: str, kind: str, key: list[Any]
) -> None:
    sep = "&" if "?" in path else "?"
    r = await api.get(f"{path}{sep}cursor={cursors.encode(kind, key)}")
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "cursor"
