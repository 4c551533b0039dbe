"""Every response carries X-Request-Id; failures outside GraphQL are JSON and logged with it."""

import logging
import re

import httpx
import pytest
from starlette.types import Message, Receive, Scope, Send

from app.deps import Container
from app.edge.app import create_app
from app.logs import request_id_var
from app.services import entries
from app.storage.tenants import TenantDatabases
from tests.conftest import TenantFixture, make_tenant, sample

QUERY = {"query": "{ memoryEvents { edges { cursor } } }"}


async def test_request_id_on_success_and_echoed_when_sane(
    client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    r = await client.post("/graphql", json=QUERY, headers=tenant.headers)
    assert r.status_code == 200 and len(r.headers["x-request-id"]) == 32
    r = await client.post(
        "/graphql", json=QUERY, headers={**tenant.headers, "X-Request-Id": "trace-42"}
    )
    assert r.headers["x-request-id"] == "trace-42"
    r = await client.post(
        "/graphql", json=QUERY, headers={**tenant.headers, "X-Request-Id": "bad id\x7f"}
    )
    assert r.headers["x-request-id"] != "bad id\x7f"


async def test_masked_errors_carry_the_request_id(
    client: httpx.AsyncClient, tenant: TenantFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def boom(*_: object, **__: object) -> None:
        raise RuntimeError("secret detail")

    monkeypatch.setattr(entries, "get_entry", boom)
    r = await client.post(
        "/graphql",
        json={"query": '{ memoryEntry(id: "mem_x") { id } }'},
        headers={**tenant.headers, "X-Request-Id": "trace-43"},
    )
    [error] = r.json()["errors"]
    assert error["message"] == "Internal server error" and "secret" not in r.text
    assert error["extensions"] == {"code": "INTERNAL_SERVER_ERROR", "requestId": "trace-43"}


@pytest.mark.sqlite_only  # a corrupt file; PostgreSQL's faults: tests/storage/test_postgres.py
async def test_a_tenant_whose_database_fails_gets_json_500_others_unaffected(
    client: httpx.AsyncClient,
    container: Container,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    broken = await make_tenant(container, "broken")
    fine = await make_tenant(container, "fine")
    await container.tenants.aclose()  # nothing cached: the next request opens the file
    container.tenants.path(broken.id).write_bytes(b"this is not a database" * 100)
    with caplog.at_level(logging.ERROR):
        r = await client.post(
            "/graphql", json=QUERY, headers={**broken.headers, "X-Request-Id": "t-44"}
        )
    assert r.status_code == 500 and r.headers["content-type"] == "application/json"
    # Named, not masked (tests/faults/test_tenant_unavailable.py has the lock and disk cases).
    assert r.json()["errors"][0]["extensions"] == {
        "code": "TENANT_DATABASE_CORRUPT",
        "reason": "corrupt",
        "requestId": "t-44",
    }
    assert any("t-44" in rec.getMessage() for rec in caplog.records)
    ok = await client.post("/graphql", json=QUERY, headers=fine.headers)
    assert ok.status_code == 200 and ok.json() == {"data": {"memoryEvents": {"edges": []}}}
    assert isinstance(container.tenants, TenantDatabases)


@pytest.mark.sqlite_only
async def test_rest_internal_errors_are_problem_json(
    client: httpx.AsyncClient, container: Container
) -> None:
    broken = await make_tenant(container, "broken-rest")
    await container.tenants.aclose()
    container.tenants.path(broken.id).write_bytes(b"not a database" * 100)
    r = await client.get("/memory", headers={**broken.headers, "X-Request-Id": "t-45"})
    assert r.status_code == 500 and r.headers["content-type"] == "application/problem+json"
    assert r.json()["requestId"] == "t-45" and r.headers["x-request-id"] == "t-45"


@pytest.mark.parametrize(
    ("method", "path", "status", "route"),
    [
        ("PUT", "/graphql", 405, "/graphql"),
        ("DELETE", "/graphql", 405, "/graphql"),
        ("POST", "/healthz", 405, "/healthz"),
        ("GET", "/nowhere", 404, "unmatched"),
    ],
)
async def test_starlettes_own_404_and_405_carry_the_request_id_logged_and_counted(
    container: Container, method: str, path: str, status: int, route: str
) -> None:
    """Routing's answers (a method a route does not take, a path no route knows) as
    Starlette makes them, with the request id in the header and in the log context while
    they are sent (uvicorn's access line), counted like any other answer."""
    app = create_app(container=container)
    in_context: list[str | None] = []

    async def watched(scope: Scope, receive: Receive, send: Send) -> None:
        async def sender(message: Message) -> None:
            if message["type"] == "http.response.start":
                in_context.append(request_id_var.get())
            await send(message)

        await app(scope, receive, sender)

    series = {"route": route, "method": method, "status": str(status)}
    before = sample("jet_http_requests_total", **series)
    transport = httpx.ASGITransport(app=watched)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        mine = await c.request(method, path, headers={"X-Request-Id": "t-46"})
        new = await c.request(method, path, headers={"X-Request-Id": "bad id"})
    assert mine.status_code == new.status_code == status
    assert mine.text == new.text == ("Method Not Allowed" if status == 405 else "Not Found")
    if status == 405:
        assert "GET" in mine.headers["allow"]
    assert mine.headers["x-request-id"] == "t-46"
    assert re.fullmatch(r"[0-9a-f]{32}", new.headers["x-request-id"])
    assert in_context == ["t-46", new.headers["x-request-id"]]
    assert request_id_var.get() is None
    assert sample("jet_http_requests_total", **series) == before + 2
