"""Real server processes for tests: a free loopback port, start, wait for /healthz, stop.

Every server binds 127.0.0.1 and is stopped by its PID (terminate, then kill).
"""

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def alive(pid: int) -> bool:
    """The process exists (and, for our children, has not been reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@contextlib.contextmanager
def serving(
    argv: Sequence[str],
    *,
    url: str,
    env: dict[str, str],
    cwd: Path,
    log: Path,
    startup_seconds: float = 30,
) -> Iterator[subprocess.Popen[bytes]]:
    """Run `argv` (a server listening at `url`) until /healthz answers; stop it after."""
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + startup_seconds
        while True:
            assert proc.poll() is None, f"server exited early:\n{log.read_text()}"
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"no /healthz in time:\n{log.read_text()}"
            time.sleep(0.05)  # bounded polling, not a timing assumption
        yield proc
    finally:
        stop(proc)
