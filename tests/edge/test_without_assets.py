"""Without GraphiQL's assets (no npm on the machine) the API still works."""

from pathlib import Path

import httpx

from app.config import Settings
from app.deps import build
from app.edge.app import create_app
from tests.conftest import make_tenant


async def test_missing_assets_disable_only_graphiql(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path / "d", assets_dir=tmp_path / "none")  # type: ignore[call-arg]
    container = await build(settings)
    try:
        tenant = await make_tenant(container, "acme")
        transport = httpx.ASGITransport(app=create_app(container=container))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            page = await client.get("/graphql", headers={"accept": "text/html"})
            assert page.status_code == 503 and "make assets" in page.text
            r = await client.post(
                "/graphql",
                json={"query": "{ memoryEvents { edges { cursor } } }"},
                headers=tenant.headers,
            )
            assert r.json() == {"data": {"memoryEvents": {"edges": []}}}
    finally:
        await container.aclose()
