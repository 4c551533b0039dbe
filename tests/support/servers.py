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
    startup_seconds: float = 120,
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


@contextlib.contextmanager
def jet_serve(
    tmp_path: Path, *tenants: str, env: dict[str, str] | None = None, startup_seconds: float = 120
) -> Iterator[tuple[str, list[str]]]:
    """A real `jet-memory serve` on 127.0.0.1 with a tenant (and its key) per name given:
    (base URL, keys). JET_* from the caller's environment are left out, `env` added."""
    import sys

    jet = Path(sys.executable).parent / "jet-memory"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("JET_")}
    environ |= {"JET_DATA_DIR": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1", **(env or {})}
    keys = []
    for name in tenants:
        created = subprocess.run(
            [str(jet), "tenants", "create", name],
            env=environ, cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
        keys.append(created.stdout.strip().splitlines()[-1])
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [str(jet), "serve", "--host", "127.0.0.1", "--port", str(port)]
    with serving(argv, url=url, env=environ, cwd=tmp_path, log=tmp_path / "serve.log",
                 startup_seconds=startup_seconds):  # fmt: skip
        yield url, keys
