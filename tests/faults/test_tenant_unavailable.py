"""A tenant database that is locked or corrupt gets a clear error; other tenants are served.

A lock: another process (here a plain sqlite3 connection, as `sqlite3` the CLI or a backup
script would) holds `BEGIN EXCLUSIVE` on the tenant's file past busy_timeout: writes are 503
TENANT_DATABASE_BUSY with Retry-After (REST problem+json, GraphQL `errors`), reads go on (WAL
readers are not blocked by a writer), also when the lock is there as the tenant is opened,
and another tenant appends at the same moment.
"""

import asyncio
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from app.config import Settings
from app.deps import Container
from tests.conftest import TenantFixture, make_tenant

APPEND = """mutation($k: String) { appendMemoryEvent(input: {scope: ENTITY, scopeRef: "ent_a",
  kind: "note", body: "hello", idempotencyKey: $k}) { event { id } replayed errors { code } } }"""
EVENTS = {"query": "{ memoryEvents { edges { node { id } } } }"}
REST_EVENT = {"scope": "entity", "scopeRef": "ent_a", "kind": "note", "body": "hello"}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    # A short busy_timeout: a locked tenant answers in ~0.2 s, not the default 5 s.
    return Settings(  # type: ignore[call-arg]
        _env_file=None, data_dir=tmp_path / "data", sqlite_busy_timeout_ms=200
    )


@contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Another connection holds the database's write lock (BEGIN EXCLUSIVE) meanwhile."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN EXCLUSIVE")
        yield
        conn.execute("ROLLBACK")
    finally:
        conn.close()


async def _count(client: httpx.AsyncClient, t: TenantFixture) -> int:
    r = await client.post("/graphql", json=EVENTS, headers=t.headers)
    assert r.status_code == 200, r.text
    return len(r.json()["data"]["memoryEvents"]["edges"])


async def test_a_locked_tenant_is_busy_503_and_others_are_served(
    client: httpx.AsyncClient, container: Container
) -> None:
    locked = await make_tenant(container, "locked")
    other = await make_tenant(container, "other")
    path = container.tenants.path(locked.id)
    with exclusive_lock(path):
        rest, gql, fine, read = await asyncio.gather(
            client.post(
                "/memory/events",
                json=REST_EVENT,
                headers={**locked.headers, "X-Request-Id": "lock-1"},
            ),
            client.post(
                "/graphql",
                json={"query": APPEND, "variables": {"k": "k1"}},
                headers={**locked.headers, "X-Request-Id": "lock-2"},
            ),
            client.post("/memory/events", json=REST_EVENT, headers=other.headers),
            client.post("/graphql", json=EVENTS, headers=locked.headers),
        )
    assert rest.status_code == 503, rest.text
    assert rest.headers["content-type"] == "application/problem+json"
    assert rest.headers["retry-after"] == "1" and rest.headers["x-request-id"] == "lock-1"
    body = rest.json()
    assert body["requestId"] == "lock-1" and "busy" in body["detail"]
    assert body["errors"][0]["code"] == "TENANT_DATABASE_BUSY"

    [error] = gql.json()["errors"]
    assert "busy" in error["message"] and "Internal" not in error["message"]
    assert error["extensions"] == {
        "code": "TENANT_DATABASE_BUSY",
        "reason": "busy",
        "requestId": "lock-2",
        "retryAfter": 1,
    }

    assert fine.status_code == 201, fine.text  # the other tenant, at the same moment
    assert read.status_code == 200 and "errors" not in read.json()  # reads go on
    # Nothing of the refused writes was stored; once the lock is gone, writes work again.
    assert await _count(client, locked) == 0
    r = await client.post("/memory/events", json=REST_EVENT, headers=locked.headers)
    assert r.status_code == 201 and await _count(client, locked) == 1


async def test_a_tenant_locked_while_it_opens_serves_reads_and_refuses_writes(
    client: httpx.AsyncClient, container: Container
) -> None:
    """Opening a tenant that is at head needs no write lock (one plain read checks the
    revision), so a tenant whose file another process holds locked while this process
    opens it behaves as an open one: reads go on, writes are BUSY with Retry-After."""
    locked = await make_tenant(container, "locked-at-open")
    other = await make_tenant(container, "other")
    await container.tenants.aclose()  # nothing cached: the next request opens it
    with exclusive_lock(container.tenants.path(locked.id)):
        read = await client.get("/memory", headers={**locked.headers, "X-Request-Id": "open-1"})
        gql = await client.post(
            "/graphql", json={"query": APPEND}, headers={**locked.headers, "X-Request-Id": "open-2"}
        )
        rest = await client.post(
            "/memory/events", json=REST_EVENT, headers={**locked.headers, "X-Request-Id": "open-3"}
        )
        ok = await client.get("/memory", headers=other.headers)
    assert read.status_code == 200, read.text
    [error] = gql.json()["errors"]
    assert error["extensions"] == {
        "code": "TENANT_DATABASE_BUSY",
        "reason": "busy",
        "requestId": "open-2",
        "retryAfter": 1,
    }
    assert rest.status_code == 503 and rest.headers["retry-after"] == "1"
    assert rest.headers["content-type"] == "application/problem+json"
    assert rest.json()["errors"][0]["code"] == "TENANT_DATABASE_BUSY"
    assert ok.status_code == 200
    assert await _count(client, locked) == 0
    r = await client.post("/graphql", json={"query": APPEND}, headers=locked.headers)
    assert r.json()["data"]["appendMemoryEvent"]["event"]["id"].startswith("evt_")


async def test_a_tenant_that_needs_migrating_while_locked_is_busy_with_retry_after(
    client: httpx.AsyncClient, container: Container
) -> None:
    """A database not at head must be migrated (under the write lock) before anything is
    served: while another process holds the lock, every request is 503 BUSY."""
    locked = await make_tenant(container, "locked-behind")
    await container.tenants.aclose()
    path = container.tenants.path(locked.id)
    with sqlite3.connect(path, isolation_level=None) as conn:
        conn.execute("UPDATE alembic_version SET version_num = 'not-head'")
    conn.close()
    with exclusive_lock(path):
        read = await client.get("/memory", headers={**locked.headers, "X-Request-Id": "mig-1"})
    assert read.status_code == 503 and read.headers["retry-after"] == "1"
    assert read.json()["errors"][0]["code"] == "TENANT_DATABASE_BUSY"


async def test_a_corrupt_tenant_is_named_with_the_request_id(
    client: httpx.AsyncClient, container: Container
) -> None:
    broken = await make_tenant(container, "corrupt")
    other = await make_tenant(container, "other")
    await container.tenants.aclose()
    container.tenants.path(broken.id).write_bytes(b"\x00garbage, not SQLite" * 500)
    rest = await client.post(
        "/memory/events", json=REST_EVENT, headers={**broken.headers, "X-Request-Id": "bad-1"}
    )
    gql = await client.post(
        "/graphql", json=EVENTS, headers={**broken.headers, "X-Request-Id": "bad-2"}
    )
    assert rest.status_code == 500 and rest.headers["content-type"] == "application/problem+json"
    assert rest.json()["errors"][0]["code"] == "TENANT_DATABASE_CORRUPT"
    assert "corrupt" in rest.json()["detail"] and rest.json()["requestId"] == "bad-1"
    assert "retry-after" not in rest.headers
    [error] = gql.json()["errors"]
    assert gql.status_code == 500 and "corrupt" in error["message"]
    assert error["extensions"] == {
        "code": "TENANT_DATABASE_CORRUPT",
        "reason": "corrupt",
        "requestId": "bad-2",
    }
    ok = await client.post("/memory/events", json=REST_EVENT, headers=other.headers)
    assert ok.status_code == 201
