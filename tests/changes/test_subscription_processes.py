"""memoryChanged over graphql-transport-ws with real processes: a client (Python
`websockets`) subscribed to one API server sees the changes written through another API
server on the same storage and by the compactor (`jet-memory compact`, its own process);
resumes after a change id; another tenant's subscriber sees nothing of them; a bad key is
refused at connection_init; the per-key bound holds. On both backends."""

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from websockets.asyncio.client import ClientConnection

from app.config import Settings
from tests.changes.test_webhook_processes import _tenants, env_of
from tests.conftest import TenantFixture
from tests.support.servers import free_port, serving

SUBSCRIBE = """subscription($after: ID, $types: [String!], $scope: MemoryScope, $ref: String) {
  memoryChanged(after: $after, types: $types, scope: $scope, scopeRef: $ref) {
    id type scope scopeRef objectId version
  }
}"""


@pytest.fixture
def two_apis(settings: Settings, redis_url: str, tmp_path: Path) -> Iterator[list[str]]:
    env = env_of(settings, redis_url) | {"JET_SUBSCRIPTIONS_PER_KEY": "2"}
    urls = []
    with ExitStack() as stack:
        for n in range(2):
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            argv = [
                sys.executable,
                "-m",
                "uvicorn",
                "--factory",
                "app.main:create_app",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ]
            log = tmp_path / f"api{n}.log"
            stack.enter_context(
                serving(argv, url=url, env=env, cwd=tmp_path, log=log, startup_seconds=90)
            )
            urls.append(url)
        yield urls


@asynccontextmanager
async def subscribed(
    url: str, key: str, variables: dict[str, Any] | None = None
) -> AsyncIterator[ClientConnection]:
    ws_url = url.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(ws_url, subprotocols=["graphql-transport-ws"]) as ws:  # type: ignore[list-item]
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {key}"}})
        )
        assert json.loads(await asyncio.wait_for(ws.recv(), 30))["type"] == "connection_ack"
        await ws.send(
            json.dumps(
                {
                    "id": "1",
                    "type": "subscribe",
                    "payload": {"query": SUBSCRIBE, "variables": variables or {}},
                }
            )
        )
        await asyncio.sleep(0.5)  # the subscription starts from now on: let it start
        yield ws


async def next_changes(ws: ClientConnection, n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    while len(out) < n:
        msg = json.loads(await asyncio.wait_for(ws.recv(), 30))
        assert msg["type"] == "next", msg
        assert "errors" not in msg["payload"], msg
        out.append(msg["payload"]["data"]["memoryChanged"])
    return out


async def append(client: httpx.AsyncClient, t: TenantFixture, ref: str, **extra: Any) -> str:
    r = await client.post(
        "/memory/events",
        headers=t.headers,
        json={"scope": "entity", "scopeRef": ref, "kind": "note", "body": "text", **extra},
    )
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


@pytest.mark.slow
async def test_changes_from_another_api_process_and_the_compactor_arrive_live(
    settings: Settings, redis_url: str, two_apis: list[str], tmp_path: Path
) -> None:
    acme, globex = await _tenants(settings)
    reader, writer = two_apis
    async with (
        httpx.AsyncClient(base_url=writer, timeout=30) as client,
        subscribed(reader, acme.key) as ws,
        subscribed(reader, globex.key) as other,
        subscribed(reader, acme.key, {"types": ["entry.created"]}) as entries_only,
    ):
        ids = [await append(client, acme, f"ent_{i}") for i in range(3)]
        got = await next_changes(ws, 3)
        assert [(c["type"], c["objectId"], c["scopeRef"]) for c in got] == [
            ("event.appended", e, f"ent_{i}") for i, e in enumerate(ids)
        ]
        # The compactor, as its own process, folds old events: entries and its end arrive.
        old = (datetime.now(UTC) - timedelta(days=200)).isoformat()
        for _ in range(3):
            await append(client, acme, "ent_old", occurredAt=old)
        await next_changes(ws, 3)
        env = env_of(settings, redis_url)
        done = await asyncio.create_subprocess_exec(
            str(Path(sys.executable).parent / "jet-memory"),
            "compact",
            "--tenant",
            acme.id,
            env=env,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        output, _ = await asyncio.wait_for(done.communicate(), 120)
        assert done.returncode == 0, output
        folded = await next_changes(ws, 2)
        assert [c["type"] for c in folded] == ["entry.created", "compaction.finished"]
        [created] = await next_changes(entries_only, 1)
        assert created == folded[0]
        # Resuming after a seen id (here on the other server) replays what came after it.
        async with subscribed(writer, acme.key, {"after": got[0]["id"]}) as resumed:
            again = await next_changes(resumed, 2)
        assert [c["objectId"] for c in again] == ids[1:]
        # Tenant globex heard nothing of acme's changes.
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(other.recv(), 1.0)


@pytest.mark.slow
async def test_bad_keys_and_bad_arguments_and_the_per_key_bound(
    settings: Settings, two_apis: list[str]
) -> None:
    acme, _ = await _tenants(settings)
    url = two_apis[0].replace("http://", "ws://") + "/graphql"
    async with websockets.connect(url, subprotocols=["graphql-transport-ws"]) as ws:  # type: ignore[list-item]
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"authorization": "Bearer jm_nope"}})
        )
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 30)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403
    async with subscribed(two_apis[0], acme.key, {"types": ["nope"]}) as ws:
        msg = json.loads(await asyncio.wait_for(ws.recv(), 30))
        assert msg["type"] == "error" or "errors" in msg.get("payload", {}), msg
        assert "types" in json.dumps(msg)
    # JET_SUBSCRIPTIONS_PER_KEY=2 on these servers: a third live one is refused.
    async with (
        subscribed(two_apis[0], acme.key),
        subscribed(two_apis[0], acme.key),
        subscribed(two_apis[0], acme.key) as third,
    ):
        msg = json.loads(await asyncio.wait_for(third.recv(), 30))
        assert "at most 2 live subscriptions" in json.dumps(msg), msg
    # Over plain HTTP a subscription is not served.
    async with httpx.AsyncClient(base_url=two_apis[0]) as client:
        r = await client.post("/graphql", json={"query": SUBSCRIBE}, headers=acme.headers)
    assert r.status_code == 400 and "served over the websocket" in r.text
