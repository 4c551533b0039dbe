"""Every response carries X-Request-Id; failures outside GraphQL are JSON and logged with it."""

import logging

import httpx
import pytest
from conftest import TenantFixture, make_tenant

from app.deps import Container
from app.services import entries
from app.storage.tenants import TenantDatabases

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
        "/graphql", json={"query": '{ memoryEntry(id: "mem_x") { id } }'},
        headers={**tenant.headers, "X-Request-Id": "trace-43"},
    )  # fmt: skip
    [error] = r.json()["errors"]
    assert error["message"] == "Internal server error" and "secret" not in r.text
    assert error["extensions"] == {"code": "INTERNAL_SERVER_ERROR", "requestId": "trace-43"}


@pytest.mark.sqlite_only  # a corrupt file; PostgreSQL's faults: tests/storage/test_postgres.py
async def test_a_tenant_whose_database_fails_gets_json_500_others_unaffected(
    client: httpx.AsyncClient, container: Container, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
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
