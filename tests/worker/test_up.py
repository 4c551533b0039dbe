"""`jet-memory up` (what `make serve` runs): embedded Redis, a worker and the API as real
processes; one SIGINT (Ctrl-C) stops all three."""

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import redis

from tests.support.servers import alive, free_port

pytestmark = pytest.mark.slow

JET = Path(sys.executable).parent / "jet-memory"


def test_up_runs_redis_a_worker_and_the_api_and_ctrl_c_stops_them(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("JET_")}
    env |= {"JET_DATA_DIR": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1"}
    log = tmp_path / "up.log"
    pids: dict[str, int] = {}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(JET), "up", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 120
        redis_port = None
        worker_seen = api_ok = False
        while not (worker_seen and api_ok):
            assert proc.poll() is None, f"up exited early:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"not up in time:\n{log.read_text()}"
            text = log.read_text()
            for name, pid in re.findall(r"\b(worker|api) pid (\d+)", text):
                pids[name] = int(pid)
            found = re.search(r"embedded Redis pid (\d+) on 127\.0\.0\.1:(\d+)", text)
            if found:
                pids["redis"], redis_port = int(found[1]), int(found[2])
            if redis_port is not None and not worker_seen:
                # The worker writes its health-check key on its first poll of the queue.
                with redis.Redis(port=redis_port) as r:
                    worker_seen = bool(r.exists("arq:queue:health-check"))
            if not api_ok:
                with contextlib.suppress(httpx.TransportError):
                    api_ok = httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
            time.sleep(0.1)  # bounded polling, not a timing assumption
        assert set(pids) == {"redis", "worker", "api"}

        proc.send_signal(signal.SIGINT)  # what Ctrl-C sends to the foreground process
        assert proc.wait(30) == 0, log.read_text()
        for name, pid in pids.items():
            assert not alive(pid), f"{name} (pid {pid}) still running"
        assert "shutdown on SIGTERM" in log.read_text()  # the worker stopped cleanly
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in pids.values():
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
