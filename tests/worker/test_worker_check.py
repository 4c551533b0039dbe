"""`jet-memory worker-check`, the worker's health check, against real processes: it finds the
Redis the worker actually uses (JET_REDIS_URL, or the embedded one of `jet-memory up`)."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.processes.embedded_redis import EmbeddedRedis
from tests.support.servers import free_port, stop

pytestmark = pytest.mark.slow

JET = Path(sys.executable).parent / "jet-memory"


def clean_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JET_")}
    return env | {"JET_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1", **extra}


def worker_check(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(JET), "worker-check"], env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )


def wait_until_healthy(
    env: dict[str, str], cwd: Path, log: Path
) -> subprocess.CompletedProcess[str]:
    deadline = time.monotonic() + 40
    while True:
        done = worker_check(env, cwd)
        if done.returncode == 0:
            return done
        assert time.monotonic() < deadline, f"{done.stderr}\n{log.read_text()}"
        time.sleep(0.5)  # bounded polling, not a timing assumption


def test_worker_check_finds_the_embedded_redis_of_up(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = clean_env(data)
    log = tmp_path / "up.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(JET), "up", "--host", "127.0.0.1", "--port", str(free_port())],
            env=env,
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        # `arq --check` would look at localhost:6379; the check reads what `up` recorded.
        healthy = wait_until_healthy(env, tmp_path, log)
        port = re.search(r"embedded Redis pid \d+ on 127\.0\.0\.1:(\d+)", log.read_text())
        assert port is not None
        assert f"worker healthy (Redis 127.0.0.1:{port[1]}/0)" in healthy.stdout
        assert "embedded Redis of `jet-memory up`" in healthy.stdout
        assert "j_complete=" in healthy.stdout

        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0, log.read_text()
        gone = worker_check(env, tmp_path)
        assert gone.returncode == 1
        assert not (data / "redis" / "address").exists()  # the record goes with the Redis
    finally:
        if proc.poll() is None:
            stop(proc)  # type: ignore[arg-type]


def test_worker_check_on_jet_redis_url_fails_without_a_worker_then_passes(
    tmp_path: Path,
) -> None:
    with EmbeddedRedis(tmp_path / "redis", persist=False) as redis:
        env = clean_env(tmp_path / "data", JET_REDIS_URL=redis.url)
        missing = worker_check(env, tmp_path)
        assert missing.returncode == 1
        assert f"no worker has reported to Redis at 127.0.0.1:{redis.port}/0" in missing.stderr
        assert "Redis from JET_REDIS_URL" in missing.stderr

        log = tmp_path / "worker.log"
        with log.open("wb") as out:
            worker = subprocess.Popen(
                [str(JET), "worker"], env=env, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT
            )
        try:
            healthy = wait_until_healthy(env, tmp_path, log)
            assert f"worker healthy (Redis 127.0.0.1:{redis.port}/0)" in healthy.stdout
        finally:
            stop(worker)  # type: ignore[arg-type]


def test_worker_check_names_an_unreachable_redis_without_its_password(tmp_path: Path) -> None:
    url = f"redis://:s3cret-password@127.0.0.1:{free_port()}/0"
    done = worker_check(clean_env(tmp_path / "data", JET_REDIS_URL=url), tmp_path)
    assert done.returncode == 1
    assert "cannot reach Redis at 127.0.0.1:" in done.stderr
    assert "s3cret" not in done.stderr + done.stdout
