"""Entry history and erasure over HTTP (GraphQL and REST), with two tenants: who asked is
the key's id, and tenant A can erase, restore or read the history of nothing of B's."""

from typing import Any

import httpx
import pytest

from app.deps import Container
from tests.conftest import TenantFixture, make_tenant

ERRORS = "errors { field code message }"
RECEIPT = "id target scope scopeRef eventId events entries versions released requestedBy"
ERASE = f"""mutation($scope: MemoryScope!, $ref: String) {{
  eraseMemorySubject(scope: $scope, scopeRef: $ref) {{ receipt {{ {RECEIPT} }} {ERRORS} }} }}"""
ERASE_EVENT = f"""mutation($id: ID!) {{
  eraseMemoryEvent(id: $id) {{ receipt {{ {RECEIPT} }} {ERRORS} }} }}"""
RECEIPTS = f"{{ memoryErasures(first: 10) {{ edges {{ node {{ {RECEIPT} }} }} }} }}"
VERSION = "entryId version title summary change changedBy"
HISTORY = f"""query($id: ID!) {{ memoryEntry(id: $id) {{ version
  history(first: 10) {{ edges {{ cursor node {{ {VERSION} }} }}
  pageInfo {{ hasNextPage }} }} }} }}"""
VERSIONS = f"""query($id: ID!) {{ memoryEntryVersions(id: $id, first: 10) {{
  edges {{ node {{ {VERSION} }} }} }} }}"""
RESTORE = f"""mutation($id: ID!, $input: RestoreMemoryEntryInput!) {{
  restoreMemoryEntry(id: $id, input: $input) {{ entry {{ id version summary }} {ERRORS} }} }}"""


async def gql(client: httpx.AsyncClient, t: TenantFixture, query: str, **variables: Any) -> Any:
    r = await client.post(
        "/graphql", json={"query": query, "variables": variables}, headers=t.headers
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert "errors" not in body, body
    return body["data"]


async def key_id(container: Container, t: TenantFixture) -> str:
    found = await container.auth.key_id_for(t.key)
    assert found is not None and found.startswith("key_")
    return found


async def seed(client: httpx.AsyncClient, t: TenantFixture, ref: str) -> tuple[str, str]:
    event = {"scope": "entity", "scopeRef": ref, "kind": "note", "body": "x"}
    r = await client.post("/memory/events", headers=t.headers, json=event)
    assert r.status_code == 201
    entry = {"scope": "entity", "scopeRef": ref, "title": "t", "summary": "v1"}
    e = await client.post("/memory", headers=t.headers, json=entry)
    assert e.status_code == 201
    return r.json()["id"], e.json()["id"]


async def test_history_and_restore_over_graphql_and_rest(
    client: httpx.AsyncClient, container: Container, tenant: TenantFixture
) -> None:
    _, entry = await seed(client, tenant, "ent_a")
    # An entry never changed has no earlier version; an entry that never was is not found.
    never = await client.get(f"/memory/{entry}/versions", headers=tenant.headers)
    assert never.status_code == 200 and never.json()["items"] == []
    for missing in ("mem_" + "0" * 26, "not an id"):
        r = await client.get(f"/memory/{missing}/versions", headers=tenant.headers)
        assert r.status_code == 404 and r.json()["errors"][0]["field"] == "id"
    r = await client.put(f"/memory/{entry}", headers=tenant.headers, json={"summary": "v2"})
    assert r.status_code == 200
    data = await gql(client, tenant, HISTORY, id=entry)
    nodes = [e["node"] for e in data["memoryEntry"]["history"]["edges"]]
    who = await key_id(container, tenant)
    assert nodes == [
        {
            "entryId": entry,
            "version": 1,
            "title": "t",
            "summary": "v1",
            "change": "update",
            "changedBy": who,
        }
    ]
    rest = await client.get(f"/memory/{entry}/versions", headers=tenant.headers)
    assert rest.status_code == 200 and rest.json()["nextCursor"] is None
    assert [(v["version"], v["changedBy"]) for v in rest.json()["items"]] == [(1, who)]

    stale = await gql(client, tenant, RESTORE, id=entry, input={"version": 1, "expectedVersion": 1})
    assert stale["restoreMemoryEntry"]["errors"][0]["field"] == ["input", "expectedVersion"]
    ok = await client.post(
        f"/memory/{entry}/restore",
        headers=tenant.headers,
        json={"version": 1, "expectedVersion": 2},
    )
    assert ok.status_code == 200 and ok.json()["version"] == 3 and ok.json()["summary"] == "v1"

    gone = await client.delete(f"/memory/{entry}", headers=tenant.headers)
    assert gone.status_code == 204
    deleted = await gql(client, tenant, VERSIONS, id=entry)
    assert [n["node"]["change"] for n in deleted["memoryEntryVersions"]["edges"]] == [
        "delete",
        "restore",
        "update",
    ]
    # A deleted entry's versions stay readable over REST too (not a 404: it has versions).
    rest = await client.get(f"/memory/{entry}/versions", headers=tenant.headers)
    assert rest.status_code == 200
    assert [v["change"] for v in rest.json()["items"]] == ["delete", "restore", "update"]
    back = await gql(client, tenant, RESTORE, id=entry, input={"version": 2})
    assert back["restoreMemoryEntry"]["entry"]["version"] == 4


async def test_bad_input_is_named(client: httpx.AsyncClient, tenant: TenantFixture) -> None:
    h = tenant.headers
    r = await client.post("/memory/erasures", headers=h, json={"scope": "entity"})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "scopeRef"
    r = await client.post(
        "/memory/erasures", headers=h, json={"scope": "entity", "scopeRef": "x" * 201}
    )
    assert r.status_code == 422 and "200" in r.json()["errors"][0]["message"]
    r = await client.post("/memory/erasures", headers=h, json={"scope": "galaxy", "scopeRef": "x"})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "scope"
    r = await client.post("/memory/mem_x/restore", headers=h, json={"version": 0})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "version"
    r = await client.post("/memory/mem_x/restore", headers=h, json={"version": 1})
    assert r.status_code == 404 and r.json()["errors"][0]["field"] == "id"
    r = await client.get("/memory/mem_x/versions?limit=101", headers=h)
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "limit"
    r = await client.get("/memory/erasures?cursor=junk", headers=h)
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "cursor"
    r = await client.delete("/memory/events/evt_nope", headers=h)
    assert r.status_code == 404 and r.json()["errors"][0]["field"] == "id"
    r = await client.post("/memory/erasures", json={"scope": "entity", "scopeRef": "x"})
    assert r.status_code == 401


async def test_a_tenant_erases_and_reads_nothing_of_another(
    client: httpx.AsyncClient, container: Container, tenant: TenantFixture
) -> None:
    b = await make_tenant(container, "beta")
    b_event, b_entry = await seed(client, b, "ent_same")
    await client.put(f"/memory/{b_entry}", headers=b.headers, json={"summary": "v2"})
    a_event, _ = await seed(client, tenant, "ent_same")

    # A erases "its" ent_same: only A's data goes; B's is whole.
    erased = await gql(client, tenant, ERASE, scope="ENTITY", ref="ent_same")
    receipt = erased["eraseMemorySubject"]["receipt"]
    assert (receipt["events"], receipt["entries"], receipt["versions"]) == (1, 1, 0)
    assert receipt["requestedBy"] == await key_id(container, tenant)
    # B's ids, with A's key: nothing found, nothing erased, nothing restored.
    e = await gql(client, tenant, ERASE_EVENT, id=b_event)
    assert e["eraseMemoryEvent"]["errors"][0]["code"] == "NOT_FOUND"
    assert (
        await client.delete(f"/memory/events/{b_event}", headers=tenant.headers)
    ).status_code == 404
    v = await gql(client, tenant, VERSIONS, id=b_entry)
    assert v["memoryEntryVersions"]["edges"] == []
    r = await client.get(f"/memory/{b_entry}/versions", headers=tenant.headers)
    assert r.status_code == 404 and r.json()["errors"][0]["field"] == "id"
    res = await gql(client, tenant, RESTORE, id=b_entry, input={"version": 1})
    assert res["restoreMemoryEntry"]["errors"][0]["code"] == "NOT_FOUND"
    # B's receipts list is its own (empty); A sees its one receipt.
    assert (await gql(client, b, RECEIPTS))["memoryErasures"]["edges"] == []
    listed = await client.get("/memory/erasures", headers=tenant.headers)
    assert [i["id"] for i in listed.json()["items"]] == [receipt["id"]]
    # B untouched
    assert (await client.get(f"/memory/{b_entry}", headers=b.headers)).json()["version"] == 2
    events = (
        await client.get("/memory/events?scope=entity&scopeRef=ent_same", headers=b.headers)
    ).json()
    assert [i["id"] for i in events["items"]] == [b_event]
    r = await client.delete(f"/memory/events/{a_event}", headers=tenant.headers)
    assert r.status_code == 404  # already erased with its subject
    one = await client.delete(f"/memory/events/{b_event}", headers=b.headers)
    assert one.status_code == 200 and one.json()["target"] == "event"
    assert one.json()["eventId"] == b_event


@pytest.mark.parametrize("path", ["/memory/erasures"])
async def test_rest_erasure_answers_a_receipt(
    client: httpx.AsyncClient, tenant: TenantFixture, path: str
) -> None:
    await seed(client, tenant, "ent_z")
    r = await client.post(
        path, headers=tenant.headers, json={"scope": "ENTITY", "scopeRef": "ent_z"}
    )
    assert r.status_code == 201, r.text
    body = r.json()
    assert set(body) == {
        "id",
        "erasedAt",
        "target",
        "scope",
        "scopeRef",
        "eventId",
        "events",
        "entries",
        "versions",
        "released",
        "requestedBy",
    }
    assert (body["events"], body["entries"], body["scope"]) == (1, 1, "entity")
