"""JET_INTROSPECTION=false turns GraphQL introspection off; the rest keeps working."""

from collections.abc import AsyncIterator

import httpx
import pytest

from app.config import Settings
from app.deps import build
from app.edge.app import create_app
from tests.conftest import make_tenant


@pytest.fixture
async def closed_client(
    settings: Settings,
) -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, str]]]:
    container = await build(settings.model_copy(update={"introspection": False}))
    tenant = await make_tenant(container, "acme")
    app = create_app(container=container)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        yield c, tenant.headers
    await container.aclose()


async def test_introspection_can_be_disabled(
    closed_client: tuple[httpx.AsyncClient, dict[str, str]],
) -> None:
    client, headers = closed_client
    r = await client.post(
        "/graphql", json={"query": "{ __schema { types { name } } }"}, headers=headers
    )
    assert r.json()["data"] is None and "introspection" in r.json()["errors"][0]["message"].lower()
    r = await client.post(
        "/graphql", json={"query": "{ memoryEvents { edges { cursor } } }"}, headers=headers
    )
    assert r.json() == {"data": {"memoryEvents": {"edges": []}}}


async def test_introspection_is_on_by_default(client: httpx.AsyncClient, container: object) -> None:
    tenant = await make_tenant(container, "beta")  # type: ignore[arg-type]
    r = await client.post(
        "/graphql", json={"query": "{ __schema { queryType { name } } }"}, headers=tenant.headers
    )
    assert r.json() == {"data": {"__schema": {"queryType": {"name": "Query"}}}}
