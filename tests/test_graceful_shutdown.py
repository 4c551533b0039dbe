"""SIGTERM to a real `jet-memory serve` while appends are in flight: uvicorn drains the
requests it has, the lifespan then closes the tenant databases (flushing the group
committer), and every append that was acknowledged with a 2xx is in the database."""

import asyncio
import re
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from app.config import Settings
from app.deps import build
from app.storage.models import events_table
from app.storage.transactions import read_transaction
from tests.test_serve_process import JET, STARTUP_SECONDS, cli, env, free_port

__all__ = ["env"]  # the fixture, imported for its use here
pytestmark = pytest.mark.slow
WRITERS = 16
BATCH = 20
# A bound on startup, not a timing assumption: importing the app on a busy shared machine.
SERVE_STARTUP_SECONDS = max(STARTUP_SECONDS, 90.0)


def start_server(
    env: dict[str, str], cwd: Path, port: int, log: Path, workers: int = 1
) -> subprocess.Popen[bytes]:
    with log.open("w") as out:
        return subprocess.Popen(
            [
                str(JET),
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                str(workers),
            ],
            env=env,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


# workers=2: uvicorn's supervisor passes SIGTERM to each worker, which drains as one does.
@pytest.mark.parametrize("workers", [1, 2])
async def test_sigterm_keeps_every_acknowledged_append(
    env: dict[str, str], tmp_path: Path, workers: int
) -> None:
    cli(env, tmp_path, "migrate")
    created = cli(env, tmp_path, "tenants", "create", "acme")
    match = re.search(r"\b(ten_[0-9a-z]{26})\b", created[0])
    assert match, created
    tenant_id, key = match.group(1), created[-1]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    proc = start_server(env, tmp_path, port, log, workers)
    try:
        acknowledged: list[str] = []
        refused = 0
        async with httpx.AsyncClient(base_url=url, timeout=10) as client:
            deadline = time.monotonic() + SERVE_STARTUP_SECONDS * workers
            while True:
                assert proc.poll() is None, f"serve exited early:\n{log.read_text()}"
                # Every worker serving, so SIGTERM reaches each one with requests in flight.
                started = log.read_text().count("Application startup complete") >= workers
                try:
                    if started and (await client.get("/healthz", timeout=1)).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, log.read_text()
                await asyncio.sleep(0.05)

            headers = {"Authorization": f"Bearer {key}"}
            stop = asyncio.Event()

            async def writer(w: int) -> None:
                nonlocal refused
                n = 0
                while not stop.is_set():
                    batch = [
                        {
                            "scope": "entity",
                            "scopeRef": f"ent_{w}",
                            "kind": "k",
                            "body": f"writer {w} event {n}.{i}",
                        }
                        for i in range(BATCH)
                    ]
                    n += 1
                    try:
                        r = await client.post("/memory/events", json=batch, headers=headers)
                    except httpx.TransportError:
                        refused += 1  # the server stopped listening: this one was never taken
                        await asyncio.sleep(0.01)
                        continue
                    if r.is_success:
                        body = r.json()
                        items = body["items"] if isinstance(body, dict) else body
                        acknowledged.extend(e["id"] for e in items)

            tasks = [asyncio.create_task(writer(w)) for w in range(WRITERS)]
            while len(acknowledged) < 20 * BATCH:  # traffic is flowing
                assert proc.poll() is None, log.read_text()
                for task in tasks:
                    if task.done():
                        task.result()  # a writer that died says why
                await asyncio.sleep(0.01)
            proc.send_signal(signal.SIGTERM)
            returncode = await asyncio.to_thread(proc.wait, 30)
            stop.set()
            await asyncio.gather(*tasks)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)

    # uvicorn finishes its shutdown, then re-raises the signal: killed by SIGTERM, cleanly.
    assert returncode in (0, -signal.SIGTERM), log.read_text()
    assert log.read_text().count("Application shutdown complete") >= workers
    assert refused > 0, "the server stopped before any request was turned away: no overlap"

    settings = Settings(_env_file=None, data_dir=tmp_path / "data")  # type: ignore[call-arg]
    container = await build(settings)
    try:
        async with container.tenants.lease(tenant_id) as db, read_transaction(db.engine) as conn:
            stored = set((await conn.execute(select(events_table.c.id))).scalars())
    finally:
        await container.aclose()
    assert len(acknowledged) == len(set(acknowledged)) >= 20 * BATCH
    missing = set(acknowledged) - stored
    assert not missing, f"{len(missing)} acknowledged appends lost"
