"""GET /memory/export: a subject's data as JSON lines, the tenant from the key only, streamed
page by page (a real server), bounded, and importable."""

import asyncio
import hashlib
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from app.config import Settings
from app.deps import Container, build
from app.services import tenants
from app.services.data_rights import importer
from tests.conftest import TenantFixture, make_tenant
from tests.support.servers import free_port, serving

ROOT = Path(__file__).resolve().parents[2]
ACME = {"scope": "entity", "scopeRef": "ent_acme"}


def clean_env(**extra: str) -> dict[str, str]:
    """This process' environment without any JET_* setting that could leak in."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("JET_")}, **extra}


async def seed(client: httpx.AsyncClient, t: TenantFixture, word: str, n: int = 3) -> None:
    batch = [{**ACME, "kind": "decision", "body": f"{word} decision {i}."} for i in range(n)]
    r = await client.post("/memory/events", headers=t.headers, json=batch)
    assert r.status_code == 201, r.text
    r = await client.post(
        "/memory",
        headers=t.headers,
        json={**ACME, "title": f"{word} ROAS target", "summary": f"{word} agreed on 4.0."},
    )
    assert r.status_code == 201, r.text


def parse(body: bytes) -> tuple[dict, list[dict], dict]:
    lines = body.splitlines(keepends=True)
    assert hashlib.sha256(b"".join(lines[1:-1])).hexdigest() == orjson.loads(lines[-1])["sha256"]
    return orjson.loads(lines[0]), [orjson.loads(x) for x in lines[1:-1]], orjson.loads(lines[-1])


async def test_a_subject_export_streams_this_tenants_data_only(
    client: httpx.AsyncClient, tenant: TenantFixture, container: Container
) -> None:
    other = await make_tenant(container, "other")
    await seed(client, tenant, "Zephyr")
    await seed(client, other, "Quokka")
    r = await client.get("/memory/export", params=ACME, headers=tenant.headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/x-ndjson"
    assert "attachment" in r.headers["content-disposition"] and r.headers["x-request-id"]
    head, records, end = parse(r.content)
    assert (head["scope"], head["scope_ref"]) == ("entity", "ent_acme")
    assert end["counts"] == {"entry": 1, "event": 3, "provenance": 0, "entry_version": 0}
    assert "Zephyr" in r.text and "Quokka" not in r.text
    assert {x["record"] for x in records} == {"entry", "event"}
    # The other tenant's key, for the same subject: its own data, never the first's.
    r = await client.get("/memory/export", params=ACME, headers=other.headers)
    assert "Quokka" in r.text and "Zephyr" not in r.text
    # A subject with no data: a valid, empty export.
    r = await client.get(
        "/memory/export", params={**ACME, "scopeRef": "ent_none"}, headers=tenant.headers
    )
    assert parse(r.content)[2]["counts"] == {
        "entry": 0,
        "event": 0,
        "provenance": 0,
        "entry_version": 0,
    }


async def test_export_errors_are_problems(
    client: httpx.AsyncClient, tenant: TenantFixture, container: Container
) -> None:
    r = await client.get("/memory/export", params=ACME)
    assert r.status_code == 401
    for params, field in (
        ({"scope": "entity"}, "scopeRef"),
        ({}, "scope"),
        ({"scope": "galaxy"}, "scope"),
        ({**ACME, "tenant": "ten_x"}, "tenant"),
    ):
        r = await client.get("/memory/export", params=params, headers=tenant.headers)
        assert r.status_code == 400, (params, r.text)
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["errors"][0]["field"] == field, r.text
    await seed(client, tenant, "Zephyr")
    container.settings.export_max_records = 3
    r = await client.get("/memory/export", params=ACME, headers=tenant.headers)
    assert r.status_code == 400 and r.json()["errors"][0]["code"] == "TOO_LARGE"
    assert "4 records, over the 3" in r.json()["errors"][0]["message"]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    data_dir = tmp_path / "data"

    async def make() -> str:
        c = await build(Settings(_env_file=None, data_dir=data_dir))  # type: ignore[call-arg]
        try:
            return (await tenants.create_tenant(c.control, c.tenants, "acme"))[1].secret
        finally:
            await c.aclose()

    key = asyncio.run(make())
    url = f"http://127.0.0.1:{free_port()}"
    argv = [
        sys.executable,
        "-m",
        "uvicorn",
        "--factory",
        "app.main:create_app",
        "--host",
        "127.0.0.1",
        "--port",
        url.rsplit(":", 1)[1],
    ]
    env = clean_env(JET_DATA_DIR=str(data_dir), JET_GRAPHIQL="false", PYTHONPATH=str(ROOT))
    log = tmp_path / "server.log"
    with serving(argv, url=url, env=env, cwd=tmp_path, log=log, startup_seconds=90):
        yield url, key, data_dir


@pytest.mark.slow
async def test_a_real_server_streams_pages_and_the_file_imports(
    server: tuple[str, str, Path], container: Container
) -> None:
    url, key, _ = server
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as api:
        for start in range(0, 2500, 1000):
            batch = [
                {**ACME, "kind": "decision", "body": f"Decision {i}."}
                for i in range(start, min(start + 1000, 2500))
            ]
            assert (await api.post("/memory/events", json=batch)).status_code == 201
        chunks: list[bytes] = []
        async with api.stream("GET", "/memory/export", params=ACME) as r:
            assert r.status_code == 200 and r.headers.get("transfer-encoding") == "chunked"
            chunks = [chunk async for chunk in r.aiter_raw()]
    body = b"".join(chunks)
    assert len(chunks) > 3  # the header, the pages and the trailer went out one by one
    _, records, end = parse(body)
    assert end["counts"]["event"] == 2500 and len(records) == 2500
    t = await make_tenant(container, "copy")
    async with container.tenants.lease(t.id) as db:
        result = await importer.import_file(db, io.BytesIO(body))
    assert result.stored["event"] == 2500
