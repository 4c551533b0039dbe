"""memoryScopes (GraphQL) and GET /memory/scopes (REST) over HTTP with two tenants: each sees
the scopes of its own memory only, the two surfaces agree, and limits are named errors."""

from typing import Any

import httpx

from app.deps import Container
from tests.conftest import TenantFixture, make_tenant

SCOPES = """query($first: Int, $after: String, $scope: MemoryScope) {
  memoryScopes(first: $first, after: $after, scope: $scope) {
    edges { cursor node { scope scopeRef eventCount entryCount lastActivityAt } }
    pageInfo { hasNextPage endCursor } } }"""


async def post(client: httpx.AsyncClient, t: TenantFixture, query: str, **variables: Any) -> Any:
    r = await client.post(
        "/graphql", json={"query": query, "variables": variables}, headers=t.headers
    )
    assert r.status_code == 200, r.text
    return r.json()


async def seed(client: httpx.AsyncClient, t: TenantFixture, refs: list[str]) -> None:
    batch = [{"scope": "entity", "scopeRef": r, "kind": "note", "body": "x"} for r in refs]
    r = await client.post("/memory/events", json=batch, headers=t.headers)
    assert r.status_code == 201, r.text
    entry = {"scope": "team", "scopeRef": "usr_1", "title": "Team note", "summary": "y"}
    r = await client.post("/memory", json=entry, headers=t.headers)
    assert r.status_code == 201, r.text


async def test_each_tenant_sees_only_its_own_scopes(
    client: httpx.AsyncClient, container: Container, tenant: TenantFixture
) -> None:
    other = await make_tenant(container, "beta")
    await seed(client, tenant, ["ent_a", "ent_a", "ent_b"])
    await seed(client, other, ["ent_secret"])

    data = (await post(client, tenant, SCOPES, first=10))["data"]["memoryScopes"]
    nodes = [e["node"] for e in data["edges"]]
    assert [(n["scope"], n["scopeRef"], n["eventCount"], n["entryCount"]) for n in nodes] == [
        ("ENTITY", "ent_a", 2, 0),
        ("ENTITY", "ent_b", 1, 0),
        ("TEAM", "usr_1", 0, 1),
    ]
    assert all(n["lastActivityAt"].endswith("Z") for n in nodes)
    assert data["pageInfo"]["hasNextPage"] is False
    beta = (await post(client, other, SCOPES))["data"]["memoryScopes"]["edges"]
    assert [e["node"]["scopeRef"] for e in beta] == ["ent_secret", "usr_1"]

    # REST says the same, page by page.
    r = await client.get("/memory/scopes?limit=2", headers=tenant.headers)
    assert r.status_code == 200, r.text
    first = r.json()
    assert [i["scopeRef"] for i in first["items"]] == ["ent_a", "ent_b"]
    assert first["items"][0] == {
        "scope": "entity",
        "scopeRef": "ent_a",
        "eventCount": 2,
        "entryCount": 0,
        "lastActivityAt": nodes[0]["lastActivityAt"],
    }
    r = await client.get(
        f"/memory/scopes?limit=2&cursor={first['nextCursor']}", headers=tenant.headers
    )
    assert [i["scopeRef"] for i in r.json()["items"]] == ["usr_1"]
    assert r.json()["nextCursor"] is None
    r = await client.get("/memory/scopes?scope=TEAM", headers=other.headers)
    assert [i["scopeRef"] for i in r.json()["items"]] == ["usr_1"]

    # Another tenant's cursor names nothing of theirs: it is a position, read in our tenant.
    theirs = (await post(client, other, SCOPES, first=1))["data"]["memoryScopes"]
    after = (await post(client, tenant, SCOPES, after=theirs["pageInfo"]["endCursor"]))["data"]
    assert "ent_secret" not in str(after)


async def test_limits_are_named(client: httpx.AsyncClient, tenant: TenantFixture) -> None:
    body = await post(client, tenant, SCOPES, first=101)
    error = body["errors"][0]
    assert error["extensions"]["code"] == "INVALID"
    assert error["extensions"]["field"] == ["first"]
    assert "first is capped at 100, got 101" in error["message"]
    body = await post(client, tenant, SCOPES, after="garbage")
    assert body["errors"][0]["extensions"]["field"] == ["after"]

    r = await client.get("/memory/scopes?limit=101", headers=tenant.headers)
    assert r.status_code == 400
    assert r.json()["errors"][0]["field"] == "limit"
    r = await client.get("/memory/scopes?cursor=garbage", headers=tenant.headers)
    assert r.status_code == 400
    assert r.json()["errors"][0]["field"] == "cursor"
    r = await client.get("/memory/scopes")
    assert r.status_code == 401
