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
    keys = create_tenants(environ, tenants)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [str(jet), "serve", "--host", "127.0.0.1", "--port", str(port)]
    with serving(
        argv,
        url=url,
        env=environ,
        cwd=tmp_path,
        log=tmp_path / "serve.log",
        startup_seconds=startup_seconds,
    ):
        yield url, keys


def create_tenants(environ: dict[str, str], names: Sequence[str]) -> list[str]:
    """Make tenants (their first keys returned) in the databases that a server with
    `environ` uses, as `jet-memory tenants create` does, but in this process: a CLI process
    per tenant would import the whole app again (tests/test_serve_process.py runs the CLI)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from app.config import Settings
    from app.deps import build
    from app.services.tenants import create_tenant

    given = {
        field: environ[f"JET_{field.upper()}"]
        for field in Settings.model_fields
        if f"JET_{field.upper()}" in environ
    }
    settings = Settings(_env_file=None, **given)  # type: ignore[call-arg, arg-type]

    async def create() -> list[str]:
        container = await build(settings)
        try:
            return [
                (await create_tenant(container.control, container.tenants, n))[1].secret
                for n in names
            ]
        finally:
            await container.aclose()

    # Its own thread, so its own event loop even when called from an async test.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, create()).result(timeout=120)
