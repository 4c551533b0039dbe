"""GET /memory/context: the context loader over REST agrees with GraphQL memoryContext."""

import httpx

from app.deps import Container
from app.edge.mcp.arguments import RecallArgs
from tests.conftest import TenantFixture, make_tenant

GQL = """query($scopeRef: String, $query: String, $max: Int) {
  memoryContext(scope: ENTITY, scopeRef: $scopeRef, query: $query, maxTokens: $max) {
    markdown tokens truncated entries { id } events { id } } }"""


async def seed(client: httpx.AsyncClient, t: TenantFixture, word: str) -> None:
    await client.post(
        "/memory",
        headers=t.headers,
        json={
            "scope": "entity",
            "scopeRef": "ent_acme",
            "title": f"{word} ROAS decision",
            "summary": f"{word}: hold ROAS at 4.0 through Q3.",
            "tags": ["decision"],
            "importance": 5,
        },
    )
    await client.post(
        "/memory/events",
        headers=t.headers,
        json={
            "scope": "entity",
            "scopeRef": "ent_acme",
            "kind": "call_summary",
            "body": f"{word} call: client happy with the new creatives.",
        },
    )


async def test_context_route_matches_graphql_and_stays_in_tenant(
    client: httpx.AsyncClient, tenant: TenantFixture, container: Container
) -> None:
    other = await make_tenant(container, "other")
    await seed(client, tenant, "Zephyr")
    await seed(client, other, "Quokka")
    params = {
        "scope": "entity",
        "scopeRef": "ent_acme",
        "query": "ROAS target?",
        "maxTokens": "400",
    }
    r = await client.get("/memory/context", params=params, headers=tenant.headers)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["tokens"] <= 400 and "Zephyr" in body["markdown"] and "Quokka" not in r.text
    assert len(body["entries"]) == 1 and len(body["events"]) == 1
    variables = {"scopeRef": "ent_acme", "query": "ROAS target?", "max": 400}
    g = await client.post(
        "/graphql", headers=tenant.headers, json={"query": GQL, "variables": variables}
    )
    ctx = g.json()["data"]["memoryContext"]
    assert ctx["markdown"] == body["markdown"] and ctx["tokens"] == body["tokens"]
    assert [e["id"] for e in ctx["entries"]] == [e["id"] for e in body["entries"]]


async def test_context_route_errors(client: httpx.AsyncClient, tenant: TenantFixture) -> None:
    r = await client.get("/memory/context", params={"scope": "entity"}, headers=tenant.headers)
    assert r.status_code in (400, 422) and r.headers["content-type"] == "application/problem+json"
    assert r.json()["errors"][0]["field"] == "scopeRef"
    r = await client.get(
        "/memory/context",
        params={"scope": "entity", "scopeRef": "e", "maxTokens": "10"},
        headers=tenant.headers,
    )
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "maxTokens"
    r = await client.get("/memory/context", params={"scope": "entity", "scopeRef": "e"})
    assert r.status_code == 401


async def test_kinds_left_out_or_kept_alike_on_rest_graphql_and_mcp(
    client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    """An agent leaves out its own verbose turns (excludeKind) or keeps one kind (kind):
    REST, GraphQL and the MCP tool's arguments reach the same loader the same way."""
    for kind, body in [
        ("user_turn", "Zephyr budget is $40k."),
        ("assistant_turn", "Zephyr budget noted; here is a long plan..."),
        ("call_summary", "Zephyr call: budget confirmed."),
    ]:
        r = await client.post(
            "/memory/events",
            headers=tenant.headers,
            json={"scope": "entity", "scopeRef": "ent_acme", "kind": kind, "body": body},
        )
        assert r.status_code == 201, r.text
    base: dict[str, str | list[str]] = {
        "scope": "entity",
        "scopeRef": "ent_acme",
        "query": "Zephyr budget",
    }

    async def rest_kinds(params: dict[str, str | list[str]]) -> set[str]:
        r = await client.get("/memory/context", params=base | params, headers=tenant.headers)
        assert r.status_code == 200, r.text
        return {
            line.split(" · ")[0][4:]
            for line in r.json()["markdown"].splitlines()
            if line.startswith("### ")
        }

    assert await rest_kinds({"excludeKind": "assistant_turn"}) == {"user_turn", "call_summary"}
    assert await rest_kinds(
        {"kind": ["user_turn", "call_summary"], "excludeKind": "call_summary"}
    ) == {"user_turn"}
    query = """query($k: [String!], $x: [String!]) { memoryContext(scope: ENTITY,
      scopeRef: "ent_acme", query: "Zephyr budget", kinds: $k, excludeKinds: $x) {
      markdown events { id } } }"""
    g = await client.post(
        "/graphql",
        headers=tenant.headers,
        json={"query": query, "variables": {"x": ["assistant_turn"]}},
    )
    got = g.json()["data"]["memoryContext"]
    assert len(got["events"]) == 2 and "long plan" not in got["markdown"]
    over = await client.get(
        "/memory/context",
        headers=tenant.headers,
        params=base | {"excludeKind": [f"k{i}" for i in range(101)]},
    )
    assert over.status_code in (400, 413, 422), over.text
    assert over.json()["errors"][0]["field"] == "excludeKind"
    mcp = RecallArgs.model_validate({**base, "excludeKinds": ["assistant_turn"], "kinds": None})
    assert mcp.exclude_kind == ["assistant_turn"] and mcp.kind is None
