"""Shared fixtures: a Container on a temp data dir, tenants with keys, an HTTP client."""

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from app.config import Settings
from app.deps import Container, build
from app.edge.app import create_app
from app.services import tenants
from app.storage.tenants import TenantDb


@dataclass
class TenantFixture:
    id: str
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path / "data")  # type: ignore[call-arg]


@pytest.fixture
async def container(settings: Settings) -> AsyncIterator[Container]:
    c = await build(settings)
    yield c
    await c.aclose()


async def make_tenant(container: Container, name: str) -> TenantFixture:
    tenant, issued = await tenants.create_tenant(container.control, container.tenants, name)
    return TenantFixture(tenant.id, issued.secret)


@pytest.fixture
async def tenant(container: Container) -> TenantFixture:
    return await make_tenant(container, "acme")


@pytest.fixture
async def db(container: Container, tenant: TenantFixture) -> AsyncIterator[TenantDb]:
    async with container.tenants.lease(tenant.id) as leased:
        yield leased


@pytest.fixture
async def client(container: Container) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(container=container)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c
