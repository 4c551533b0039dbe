"""A throwaway PostgreSQL server for tests, plus helpers to create and drop databases on it.

    with PostgresServer() as pg:              # initdb + start on 127.0.0.1:<free port>
        url = await create_database(pg.url, "t_abc")   # postgresql+asyncpg://.../t_abc
        ...
        await drop_database(pg.url, "t_abc")
                                               # stopped by PID, data dir removed

The server is the newest PostgreSQL found by `find_bin_dir()` (`pg_config --bindir`, else
/usr/lib/postgresql/*/bin; `make postgres` installs Debian's postgresql-15). It listens on
127.0.0.1 only, on a free port, with its unix socket in its own temp dir (never
/var/run/postgresql), trusts every local connection (user `postgres`, no password) and runs
with durability off. As root, initdb and the server run as the `postgres` OS user, which
PostgreSQL requires.

The server process is a child of the test process (not daemonized with pg_ctl): on machines
whose PID 1 does not reap orphans, a postmaster started by `pg_ctl start` is left a zombie
after it stops; as our child it is waited for and reaped. Readiness is checked the way
`pg_ctl -w` does it (postmaster.pid says "ready"), plus a TCP connect.

External server: when JET_TEST_POSTGRES_URL is set (a SQLAlchemy URL such as
`postgresql+asyncpg://user:pw@127.0.0.1:5432/postgres`, naming a database to connect to for
CREATE/DROP DATABASE, as a user allowed to run them), `PostgresServer()` starts nothing and
`.url` is that URL; `.pid` is then None and stopping it does nothing. The helpers below use
PostgreSQL 15 syntax (STRATEGY FILE_COPY), so an external server must be 15 or newer.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import TracebackType
from typing import Any

import asyncpg  # type: ignore[import-untyped]  # no py.typed; stubs are a separate package
from sqlalchemy.engine import make_url

from tests.support.servers import free_port

ENV_URL = "JET_TEST_POSTGRES_URL"
OS_USER = "postgres"  # the OS user the server runs as when we are root
DB_USER = "postgres"  # the cluster's superuser (initdb -U)
LOCALE = "C.UTF-8"  # glibc >= 2.35 has it built in (Debian 12); byte-order collation, UTF-8 ctype

# Durability is off: this is a throwaway cluster for tests, never for data anyone keeps.
# A crash loses it, which is fine here; it makes initdb, CREATE DATABASE and commits fast.
SERVER_SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "300",
}

_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


class PostgresServerError(RuntimeError):
    """initdb or the server failed; the message ends with the tail of their log."""


def find_bin_dir() -> Path | None:
    """The newest directory holding PostgreSQL's server binaries, or None when none is installed.

    `pg_config --bindir` first (it may come from libpq-dev alone, so its answer is checked),
    then /usr/lib/postgresql/<version>/bin, highest version first.
    """
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=True
            ).stdout.strip()
            if out:
                candidates.append(Path(out))

    def version(p: Path) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", p.parent.name)) or (0,)

    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=version, reverse=True)
    for d in candidates:
        if all(os.access(d / b, os.X_OK) for b in ("initdb", "postgres")):
            return d
    return None


def asyncpg_dsn(url: str) -> str:
    """`postgresql+asyncpg://...` (SQLAlchemy) -> `postgresql://...` (what asyncpg takes)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def database_url(server_url: str, name: str) -> str:
    """The URL of database `name` on the server of `server_url` (same driver, user, host)."""
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def _quoted(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise ValueError(f"not a plain lowercase database name: {name!r}")
    return f'"{name}"'


async def _execute(server_url: str, statement: str) -> None:
    conn = await asyncpg.connect(asyncpg_dsn(server_url), timeout=30)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


async def create_database(server_url: str, name: str, *, template: str = "template0") -> str:
    """CREATE DATABASE `name` (UTF-8, from template0 or `template`, a database nobody is
    connected to) and return its URL.

    FILE_COPY copies template0's files instead of WAL-logging every block (PG15's default);
    it checkpoints, which costs little with fsync off. Measured on the 2-core dev machine
    against PostgresServer (PG 15.18): 11-30 ms a database, about 17 ms on average with this
    helper's own connection; WAL_LOG took 20-110 ms. A whole server (initdb 0.6-0.8 s, start
    about 45 ms, stop about 40 ms) costs far more: share one server, make a database each.
    """
    await _execute(
        server_url,
        f"CREATE DATABASE {_quoted(name)} TEMPLATE {_quoted(template)} ENCODING 'UTF8' "
        "STRATEGY FILE_COPY",
    )
    return database_url(server_url, name)


async def drop_database(server_url: str, name: str) -> None:
    """DROP DATABASE IF EXISTS `name` WITH (FORCE): open connections to it are terminated."""
    await _execute(server_url, f"DROP DATABASE IF EXISTS {_quoted(name)} WITH (FORCE)")


@contextlib.asynccontextmanager
async def temporary_database(server_url: str, name: str) -> AsyncIterator[str]:
    """A database that exists for the `async with` block: yields its URL, then drops it."""
    url = await create_database(server_url, name)
    try:
        yield url
    finally:
        await drop_database(server_url, name)


class PostgresServer:
    """A PostgreSQL server on 127.0.0.1 for the length of a `with` block (or start()/stop()).

    `bin_dir` defaults to `find_bin_dir()`. `port` defaults to a free one (retried if another
    process takes it first). `external_url` (or, unless `use_env` is False, the environment's
    JET_TEST_POSTGRES_URL) means: start nothing and use that server. `settings` are added to
    SERVER_SETTINGS (`-c key=value` each).
    """

    def __init__(
        self,
        bin_dir: Path | None = None,
        *,
        port: int | None = None,
        external_url: str | None = None,
        use_env: bool = True,
        startup_seconds: float = 60.0,
        shutdown_seconds: float = 30.0,
        settings: dict[str, str] | None = None,
    ) -> None:
        if external_url is None and use_env:
            external_url = os.environ.get(ENV_URL) or None
        self.external_url = external_url
        self.bin_dir = bin_dir
        self.port = port or 0
        self._fixed_port = bool(port)
        self.startup_seconds = startup_seconds
        self.shutdown_seconds = shutdown_seconds
        self.base_dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid: int | None = None
        # Server settings on top of SERVER_SETTINGS, read when the server starts (a Citus
        # node preloads its library).
        self.extra_settings = dict(settings or {})

    # -- what the tests use ---------------------------------------------------------------

    @property
    def external(self) -> bool:
        return self.external_url is not None

    @property
    def url(self) -> str:
        """SQLAlchemy URL of the maintenance database `postgres` on this server:
        postgresql+asyncpg://postgres@127.0.0.1:PORT/postgres (or the external URL)."""
        if self.external_url is not None:
            return self.external_url
        if self._pid is None:
            raise PostgresServerError("the server is not running")
        return f"postgresql+asyncpg://{DB_USER}@127.0.0.1:{self.port}/postgres"

    @property
    def pid(self) -> int | None:
        """The postmaster's PID (from postmaster.pid) while running; None if external/stopped."""
        return self._pid

    @property
    def data_dir(self) -> Path | None:
        return None if self.base_dir is None else self.base_dir / "data"

    @property
    def socket_dir(self) -> Path | None:
        return None if self.base_dir is None else self.base_dir / "sock"

    @property
    def log_path(self) -> Path | None:
        return None if self.base_dir is None else self.base_dir / "server.log"

    def log_tail(self, lines: int = 40) -> str:
        if self.log_path is None or not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def __enter__(self) -> PostgresServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- start ----------------------------------------------------------------------------

    def start(self) -> None:
        if self.external or self._proc is not None:
            return
        bin_dir = self.bin_dir or find_bin_dir()
        if bin_dir is None:
            raise PostgresServerError(
                "no PostgreSQL server binaries (initdb, postgres) found: `make postgres` "
                f"installs them, or set {ENV_URL} to use a running server"
            )
        self.bin_dir = bin_dir
        try:
            self._make_dirs()
            self._initdb()
            for attempt in range(3):
                if not self._fixed_port:
                    self.port = free_port()
                try:
                    self._start_server()
                    return
                except PostgresServerError as e:
                    # free_port() closes its socket before the server binds: another
                    # process may take the port in between. Retry on a new one.
                    if self._fixed_port or attempt == 2 or "already in use" not in str(e):
                        raise
        except BaseException:
            self.stop()
            raise

    def _owner(self) -> pwd.struct_passwd | None:
        """The OS user to run initdb and the server as: `postgres` when we are root."""
        if os.geteuid() != 0:
            return None
        try:
            return pwd.getpwnam(OS_USER)
        except KeyError:
            raise PostgresServerError(
                f"running as root needs the {OS_USER!r} OS user to run PostgreSQL "
                "(Debian's postgresql-15 package creates it)"
            ) from None

    def _make_dirs(self) -> None:
        # Under /tmp (not pytest's tmp_path, whose parents are root-only): the `postgres` user
        # must reach it. mkdtemp makes it 0o700; as root it is then chowned to `postgres`.
        base = Path(tempfile.mkdtemp(prefix="jet-pg-", dir="/tmp"))
        self.base_dir = base
        (base / "sock").mkdir(mode=0o700)
        (base / "server.log").touch(mode=0o600)
        owner = self._owner()
        if owner is not None:
            for p in (base, base / "sock", base / "server.log"):
                os.chown(p, owner.pw_uid, owner.pw_gid)

    def _child(self) -> dict[str, Any]:
        """subprocess arguments of initdb and the server: our environment less PG*, in the
        base dir, files private, as `postgres` (no extra groups) if we are root."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        kwargs: dict[str, Any] = {"env": env, "cwd": self.base_dir, "umask": 0o077}
        owner = self._owner()
        if owner is not None:
            env.update(HOME=owner.pw_dir, USER=owner.pw_name, LOGNAME=owner.pw_name)
            kwargs.update(user=owner.pw_uid, group=owner.pw_gid, extra_groups=[])
        return kwargs

    def _initdb(self) -> None:
        assert self.bin_dir is not None and self.data_dir is not None
        argv = [
            str(self.bin_dir / "initdb"),
            "-D",
            str(self.data_dir),
            "-A",
            "trust",
            "-U",
            DB_USER,
            "-E",
            "UTF8",
            f"--locale={LOCALE}",
            "--no-sync",
            "--no-instructions",
        ]
        proc = subprocess.run(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=self.startup_seconds,
            check=False,
            **self._child(),
        )
        if proc.returncode != 0:
            out = proc.stdout.decode(errors="replace")
            raise PostgresServerError(f"initdb failed ({proc.returncode}):\n{out}")

    def _start_server(self) -> None:
        assert self.bin_dir is not None and self.data_dir is not None
        assert self.log_path is not None and self.socket_dir is not None
        argv = [
            str(self.bin_dir / "postgres"),
            "-D",
            str(self.data_dir),
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-k",
            str(self.socket_dir),
        ]
        for key, value in {**SERVER_SETTINGS, **self.extra_settings}.items():
            argv += ["-c", f"{key}={value}"]
        with self.log_path.open("ab") as log:
            log.write(f"--- port {self.port}\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, **self._child()
            )
        proc = self._proc
        assert proc is not None
        deadline = time.monotonic() + self.startup_seconds
        while True:
            if proc.poll() is not None:
                self._proc = None
                raise PostgresServerError(
                    f"postgres exited ({proc.returncode}) while starting on port {self.port}; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            pid = self._ready_pid()
            if pid is not None and self._accepts_tcp():
                if pid != proc.pid:
                    raise PostgresServerError(f"postmaster.pid says {pid}, we started {proc.pid}")
                self._pid = pid
                return
            if time.monotonic() > deadline:
                raise PostgresServerError(
                    f"postgres not ready after {self.startup_seconds:.0f}s on port {self.port}; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            time.sleep(0.02)  # bounded polling, until the deadline above

    def _ready_pid(self) -> int | None:
        """The PID in postmaster.pid once its status line says "ready" (as `pg_ctl -w` checks)."""
        assert self.data_dir is not None
        try:
            lines = (self.data_dir / "postmaster.pid").read_text().splitlines()
        except (FileNotFoundError, PermissionError):
            return None
        if len(lines) >= 8 and lines[7].strip() == "ready":
            return int(lines[0])
        return None

    def _accepts_tcp(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    # -- stop -----------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop the server by its PID and remove its files. Idempotent; no-op when external.

        SIGINT is PostgreSQL's fast shutdown (roll back, disconnect clients, checkpoint).
        If it hangs: SIGQUIT (immediate shutdown: the postmaster still kills and reaps its
        backends), then SIGKILL as the last resort.
        """
        proc, self._proc, self._pid = self._proc, None, None
        if proc is not None:
            for sig, wait in (
                (signal.SIGINT, self.shutdown_seconds),
                (signal.SIGQUIT, 10.0),
                (signal.SIGKILL, 10.0),
            ):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, sig)
                try:
                    proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if self.base_dir is not None:
            shutil.rmtree(self.base_dir, ignore_errors=True)
            self.base_dir = None
