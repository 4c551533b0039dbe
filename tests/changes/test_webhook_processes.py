"""Webhooks with real processes: an API server takes the appends, arq workers deliver to a
receiver on 127.0.0.1 that verifies each signature and fails the first attempts; one worker
is killed with SIGKILL mid-stream and another takes over. Nothing is lost, each scope's
changes arrive in order (a redelivery may repeat one: at least once), and another tenant's
receiver hears nothing of it. On both backends."""

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.config import Settings
from app.deps import build
from app.services import tenants
from tests.conftest import TenantFixture
from tests.support.servers import free_port, serving
from tests.support.webhook_receiver import Receiver

ROOT = Path(__file__).resolve().parents[2]
SCOPES = 6
EVENTS = 120


def env_of(settings: Settings, redis_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JET_")}
    env |= {
        "JET_DATA_DIR": str(settings.data_dir),
        "JET_REDIS_URL": redis_url,
        "JET_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32",
        "JET_WEBHOOK_RETRY_BASE_SECONDS": "0.05",
        "JET_WEBHOOK_RETRY_MAX_SECONDS": "0.2",
        "JET_WEBHOOK_LEASE_SECONDS": "2",
        "JET_WEBHOOK_POLL_SECONDS": "0.05",
        "JET_GRAPHIQL": "false",
        "PYTHONPATH": str(ROOT),
        "PYTHONUNBUFFERED": "1",
    }
    if settings.database_url is not None:
        env["JET_DATABASE_URL"] = settings.database_url.get_secret_value()
    return env


async def _tenants(settings: Settings) -> list[TenantFixture]:
    container = await build(settings)
    try:
        out = []
        for name in ("acme", "globex"):
            tenant, issued = await tenants.create_tenant(container.control, container.tenants, name)
            out.append(TenantFixture(tenant.id, issued.secret))
        return out
    finally:
        await container.aclose()


@pytest.fixture
def api(settings: Settings, redis_url: str, tmp_path: Path) -> Iterator[str]:
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
    with serving(
        argv,
        url=url,
        env=env_of(settings, redis_url),
        cwd=tmp_path,
        log=tmp_path / "api.log",
        startup_seconds=90,
    ):
        yield url


async def start_worker(env: dict[str, str], log: Path) -> asyncio.subprocess.Process:
    with log.open("ab") as out:
        return await asyncio.create_subprocess_exec(
            str(Path(sys.executable).parent / "arq"),
            "app.worker.WorkerSettings",
            env=env,
            cwd=log.parent,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


async def until(predicate: object, *, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


@pytest.mark.slow
async def test_no_loss_and_order_per_scope_across_a_worker_kill_9(
    settings: Settings, redis_url: str, api: str, tmp_path: Path
) -> None:
    acme, globex = await _tenants(settings)
    env = env_of(settings, redis_url)
    log = tmp_path / "worker.log"
    async with (
        Receiver(fail_first=5) as rx,
        Receiver() as other_rx,
        httpx.AsyncClient(base_url=api, timeout=30) as client,
    ):
        for t, r in ((acme, rx), (globex, other_rx)):
            made = await client.post("/webhooks", json={"url": r.url}, headers=t.headers)
            assert made.status_code == 201, made.text
            r.secret = made.json()["secret"]
        first = await start_worker(env, log)
        second: asyncio.subprocess.Process | None = None
        appended: list[tuple[str, str]] = []  # (scopeRef, event id) in append order
        try:
            for i in range(EVENTS):
                ref = f"ent_{i % SCOPES}"
                answer = await client.post(
                    "/memory/events",
                    headers=acme.headers,
                    json={
                        "scope": "entity",
                        "scopeRef": ref,
                        "kind": "note",
                        "body": f"text {i}",
                    },
                )
                assert answer.status_code == 201, answer.text
                appended.append((ref, answer.json()["id"]))
                if i == EVENTS // 3:
                    await until(
                        lambda: len(rx.delivered()) >= 10,
                        within=60,
                        what="deliveries before the kill",
                    )
                    os.kill(first.pid, signal.SIGKILL)
                    assert await asyncio.wait_for(first.wait(), 10) == -signal.SIGKILL
                    second = await start_worker(env, log)
            await until(
                lambda: len(rx.delivered()) >= EVENTS,
                within=120,
                what=f"all {EVENTS} deliveries ({len(rx.delivered())} so far)",
            )
        finally:
            for proc in (first, second):
                if proc is not None and proc.returncode is None:
                    proc.send_signal(signal.SIGTERM)
                    try:
                        await asyncio.wait_for(proc.wait(), 20)
                    except TimeoutError:
                        proc.kill()
                        await proc.wait()
    assert rx.unverified == 0 and other_rx.unverified == 0
    got = rx.delivered()
    assert sorted(r.body["objectId"] for r in got) == sorted(e for _, e in appended)
    for s in range(SCOPES):
        ref = f"ent_{s}"
        assert [r.body["objectId"] for r in got if r.body["scopeRef"] == ref] == [
            e for scope_ref, e in appended if scope_ref == ref
        ]
    # The first attempts failed and were retried; every receipt was of a signed change.
    assert sum(r.answered == 500 for r in rx.received) == 5
    assert other_rx.received == []  # globex appended nothing: it hears nothing of acme's
    assert "Traceback" not in log.read_text()
