"""/mcp in-process (the app with its lifespan, both backends): the SDK's client over
Streamable HTTP, keys (401 before any MCP work), request ids, metrics, and tenant isolation."""

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from app.config import Settings
from app.deps import Container
from app.edge.app import create_app
from app.edge.mcp.server import call
from app.services import tenants
from app.services.ratelimit import RateLimiter
from app.storage.tenants import TenantDb
from tests.conftest import sample
from tests.mcp.mcp_support import connect, error_of, structured
from tests.support.graphql_ws import served

URL = "http://testserver/mcp"
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def settings(tmp_path: Path, database_url: str | None) -> Settings:
    """conftest's, with revocation immediate (the auth cache off)."""
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        data_dir=tmp_path / "data",
        database_url=database_url,
        auth_cache_seconds=0,
    )


@pytest.fixture
async def transport(container: Container) -> AsyncIterator[httpx2.ASGITransport]:
    """The app with its lifespan (the MCP session manager's task group) running in a task
    of its own, as a server runs it: anyio's cancel scope must be left by the task that
    entered it, and a fixture's setup and teardown may run in different tasks."""
    app = create_app(container=container)
    started, stop = asyncio.Event(), asyncio.Event()

    async def lifespan() -> None:
        async with app.router.lifespan_context(app):
            started.set()
            await stop.wait()

    task = asyncio.create_task(lifespan())
    await started.wait()
    yield httpx2.ASGITransport(app=app)
    stop.set()
    await task


async def new_key(container: Container, name: str) -> tuple[str, str]:
    tenant, issued = await tenants.create_tenant(container.control, container.tenants, name)
    return tenant.id, issued.secret


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_sdk_client_lists_and_calls_the_tools(
    container: Container, transport: httpx2.ASGITransport, mode: str
) -> None:
    _, key = await new_key(container, "acme")
    async with connect(URL, key, transport=transport, mode=mode) as client:
        assert client.server_info is not None and client.server_info.name == "jet-memory"
        assert "recall" in (client.instructions or "")
        tools = (await client.list_tools()).tools
        assert [t.name for t in tools] == [
            "remember",
            "recall",
            "search_memory",
            "save_memory",
            "forget",
        ]
        assert all(t.annotations is not None for t in tools)
        event = structured(
            await client.call_tool(
                "remember", {"scope": "team", "scopeRef": "u1", "kind": "decision", "body": "B1"}
            )
        )["event"]
        entry = structured(
            await client.call_tool(
                "save_memory", {"scope": "team", "scopeRef": "u1", "title": "T", "summary": "S1"}
            )
        )["entry"]
        recalled = await client.call_tool("recall", {"scope": "team", "scopeRef": "u1"})
        got = structured(recalled)
        assert got["eventIds"] == [event["id"]] and got["entryIds"] == [entry["id"]]
        assert recalled.content[0].text == got["markdown"]  # type: ignore[union-attr]
        found = structured(await client.call_tool("search_memory", {"query": "S1"}))
        assert [e["id"] for e in found["entries"]] == [entry["id"]]
        assert structured(await client.call_tool("forget", {"id": entry["id"]})) == {
            "deletedId": entry["id"]
        }
        bad = error_of(await client.call_tool("recall", {"scope": "institutional", "maxTokens": 1}))
        assert bad["field"] == "maxTokens" and "64" in bad["message"]


async def test_no_key_a_bad_key_or_a_revoked_key_is_a_401_before_any_mcp_work(
    container: Container, transport: httpx2.ASGITransport
) -> None:
    tenant_id, key = await new_key(container, "acme")
    second = await tenants.create_key(container.control, tenant_id)
    async with httpx2.AsyncClient(transport=transport) as http:
        for headers in ({}, {"Authorization": "Bearer jm_nope"}, {"Authorization": "Basic x"}):
            answer = await http.post(URL, json=LIST, headers=ACCEPT | headers)
            assert answer.status_code == 401, answer.text
            assert answer.headers["www-authenticate"].startswith("Bearer")
            assert answer.headers["x-request-id"]
            body = answer.json()
            assert body["error"]["data"]["code"] == "UNAUTHENTICATED" and "tools" not in body
        ok = await http.post(URL, json=LIST, headers=ACCEPT | {"Authorization": f"Bearer {key}"})
        assert ok.status_code == 200 and len(ok.json()["result"]["tools"]) == 5
        await tenants.revoke_key(container.control, second.key.id)
        revoked = await http.post(
            URL, json=LIST, headers=ACCEPT | {"Authorization": f"Bearer {second.secret}"}
        )
        assert revoked.status_code == 401 and "revoked" in revoked.json()["error"]["message"]
    # The SDK's client raises the server's JSON-RPC error from within its task groups.
    missing = pytest.RaisesExc(MCPError, match="missing API key")
    with pytest.RaisesGroup(missing, flatten_subgroups=True):
        async with connect(URL, None, transport=transport, mode="legacy"):
            pass


async def test_request_ids_metrics_and_logs_without_memory_text(
    container: Container, transport: httpx2.ASGITransport, caplog: pytest.LogCaptureFixture
) -> None:
    _, key = await new_key(container, "acme")
    secret_text = "the launch code is 0000"
    before = sample("jet_http_requests_total", route="/mcp", method="POST", status="200")
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "remember",
            "arguments": {"scope": "institutional", "kind": "note", "body": secret_text},
        },
    }
    headers = ACCEPT | {"Authorization": f"Bearer {key}", "X-Request-Id": "req-mcp-1"}
    caplog.set_level(logging.DEBUG)
    async with httpx2.AsyncClient(transport=transport) as http:
        answer = await http.post(URL, json=call, headers=headers)
    assert answer.status_code == 200 and answer.headers["x-request-id"] == "req-mcp-1"
    result = answer.json()["result"]
    assert result["isError"] is False and result["structuredContent"]["event"]["kind"] == "note"
    after = sample("jet_http_requests_total", route="/mcp", method="POST", status="200")
    assert after == before + 1
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert secret_text not in logged and key not in logged


async def test_a_tenant_reaches_nothing_of_another_through_any_tool(
    container: Container, transport: httpx2.ASGITransport
) -> None:
    """Tenant A's key through every tool, given B's ids, cursors, scopes and words."""
    _, key_a = await new_key(container, "a")
    b_id, key_b = await new_key(container, "b")
    secret = "zanzibar"
    async with connect(URL, key_b, transport=transport) as b:
        b_entries = [
            structured(
                await b.call_tool(
                    "save_memory",
                    {
                        "scope": "project",
                        "scopeRef": "shared",
                        "title": f"{secret} {i}",
                        "summary": f"{secret} plan {i}",
                        "tags": ["x"],
                    },
                )
            )["entry"]
            for i in range(3)
        ]
        b_event = structured(
            await b.call_tool(
                "remember",
                {
                    "scope": "project",
                    "scopeRef": "shared",
                    "kind": "decision",
                    "body": f"{secret} decided",
                    "idempotencyKey": "same-key",
                },
            )
        )["event"]
        b_cursor = structured(await b.call_tool("search_memory", {"limit": 1}))["nextCursor"]
        b_search_cursor = structured(
            await b.call_tool("search_memory", {"query": secret, "limit": 1})
        )["nextCursor"]
        assert b_cursor and b_search_cursor

    b_ids = [e["id"] for e in b_entries] + [b_event["id"]]

    def leaks(result: Any, arguments: dict[str, Any]) -> bool:
        """B's text, or an id of B's the caller did not give (an error may echo the id)."""
        text = json.dumps(result.model_dump(mode="json"))
        given = json.dumps(arguments)
        return secret in text or any(i in text for i in b_ids if i not in given)

    async with connect(URL, key_a, transport=transport) as a:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("recall", {"scope": "project", "scopeRef": "shared", "query": secret}),
            ("recall", {"scope": "institutional", "query": secret, "maxTokens": 32000}),
            ("search_memory", {"query": secret}),
            ("search_memory", {"scope": "project", "scopeRef": "shared", "tags": ["x"]}),
            ("search_memory", {"cursor": b_cursor}),
            ("search_memory", {"query": secret, "cursor": b_search_cursor}),
            ("search_memory", {"scope": "project", "scopeRef": "shared", "cursor": b_cursor}),
            ("forget", {"id": b_entries[0]["id"]}),
            ("save_memory", {"id": b_entries[1]["id"], "summary": "overwritten"}),
            ("save_memory", {"id": b_entries[1]["id"], "summary": "x", "expectedVersion": 1}),
            (
                "remember",
                {
                    "scope": "project",
                    "scopeRef": "shared",
                    "kind": "decision",
                    "body": "A's own",
                    "idempotencyKey": "same-key",
                },
            ),
            ("recall", {"scope": "project", "scopeRef": "shared"}),
            ("remember", {"scope": "project", "scopeRef": b_id, "kind": "k", "body": "t"}),
            ("search_memory", {"scope": "project", "scopeRef": b_id}),
        ]
        for name, arguments in calls:
            result = await a.call_tool(name, arguments)
            assert not leaks(result, arguments), (name, arguments, result)
            if name in ("forget", "save_memory"):
                assert error_of(result)["code"] == "NOT_FOUND"
        # A's replay key is A's own: a new event, not B's.
        mine = structured(
            await a.call_tool(
                "search_memory", {"scope": "project", "scopeRef": "shared", "limit": 100}
            )
        )
        assert mine["entries"] == []

    # B's memory is untouched.
    async with connect(URL, key_b, transport=transport) as b:
        found = structured(await b.call_tool("search_memory", {"query": secret, "limit": 100}))
        assert sorted(e["id"] for e in found["entries"]) == sorted(e["id"] for e in b_entries)
        assert all("overwritten" not in e["summary"] for e in found["entries"])
        recalled = structured(
            await b.call_tool("recall", {"scope": "project", "scopeRef": "shared"})
        )
        assert b_event["id"] in recalled["eventIds"] and "A's own" not in recalled["markdown"]


async def test_tools_see_only_the_database_tenant_bound_leased(
    container: Container, transport: httpx2.ASGITransport, db: TenantDb
) -> None:
    """The `db` fixture's tenant is another one: what /mcp writes for a key lands in that
    key's database only."""
    _, key = await new_key(container, "other")
    async with connect(URL, key, transport=transport) as client:
        created = {"scope": "institutional", "title": "t", "summary": "s"}
        structured(await client.call_tool("save_memory", created))

    got, _ = await call("search_memory", {}, db, 10)
    assert got["entries"] == []


async def test_the_rate_limit_of_a_key_holds_on_mcp_too(
    container: Container, transport: httpx2.ASGITransport
) -> None:
    """One bucket per key across surfaces: GraphQL spends it, /mcp is then refused."""
    _, key = await new_key(container, "acme")
    container.limiter = RateLimiter(0.001, 2)  # two requests, then a wait of ~1000 s
    headers = ACCEPT | {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(transport=transport) as http:
        for _ in range(2):
            spent = await http.post(
                "http://testserver/graphql",
                json={"query": "{ __typename }"},
                headers={"Authorization": f"Bearer {key}"},
            )
            assert spent.status_code == 200
        refused = await http.post(URL, json=LIST, headers=headers)
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 1
    assert refused.json()["error"]["data"]["code"] == "RATE_LIMITED"


async def test_get_opens_no_stream_it_is_a_405_with_or_without_a_key(container: Container) -> None:
    """Stateless, the server never writes to a GET stream: the specification's 405, so no
    connection is held open for nothing (a real server, a client reading as a stream)."""
    _, key = await new_key(container, "acme")
    sse = {"Accept": "text/event-stream"}
    async with served(create_app(container=container)) as base_url, httpx2.AsyncClient() as http:
        for headers in (sse | {"Authorization": f"Bearer {key}"}, sse, {}):
            async with http.stream("GET", f"{base_url}/mcp", headers=headers) as answer:
                assert answer.status_code == 405, answer.headers
                assert answer.headers["allow"] == "POST" and answer.headers["x-request-id"]
                body = json.loads(await answer.aread())
            assert body["error"]["data"]["code"] == "METHOD_NOT_ALLOWED"
            assert "stateless" in body["error"]["message"]
        # POST is served as before.
        ok = await http.post(
            f"{base_url}/mcp", json=LIST, headers=ACCEPT | {"Authorization": f"Bearer {key}"}
        )
        assert ok.status_code == 200 and len(ok.json()["result"]["tools"]) == 5
