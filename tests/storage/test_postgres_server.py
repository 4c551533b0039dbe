"""tests/support/postgres_server.py: a real PostgreSQL on 127.0.0.1, databases made and
dropped on it, stopped by its PID. Without PostgreSQL's binaries these tests skip, unless
JET_REQUIRE_POSTGRES=1 (then they fail); `make postgres` installs Debian's postgresql-15."""

import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]
import pytest

from tests.support.postgres_server import (
    ENV_URL,
    PostgresServer,
    PostgresServerError,
    asyncpg_dsn,
    create_database,
    database_url,
    drop_database,
    find_bin_dir,
    temporary_database,
)
from tests.support.servers import alive

pytestmark = pytest.mark.slow


def require_bin_dir() -> Path:
    found = find_bin_dir()
    if found is None:
        reason = "no PostgreSQL server binaries (initdb, postgres): `make postgres` installs them"
        if os.environ.get("JET_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"JET_REQUIRE_POSTGRES=1 but {reason}")
        pytest.skip(reason)
    return found


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    """One server for the module: ours, or the one JET_TEST_POSTGRES_URL names."""
    pg = PostgresServer()
    if not pg.external:
        require_bin_dir()
    with pg:
        yield pg


def unique_name() -> str:
    return f"t_{uuid.uuid4().hex[:12]}"


def owner_uid(pid: int) -> int:
    return Path(f"/proc/{pid}").stat().st_uid


def port_is_free(port: int) -> bool:
    """Nothing listens on it, and a new server could bind it (as PostgreSQL does, with
    SO_REUSEADDR, so that closed connections in TIME_WAIT do not count)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return False
    except ConnectionRefusedError:
        pass
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen()
    return True


async def settings(url: str, *names: str) -> dict[str, str]:
    conn = await asyncpg.connect(asyncpg_dsn(url))
    try:
        return {n: await conn.fetchval(f"SHOW {n}") for n in names}
    finally:
        await conn.close()


async def test_a_server_runs_on_loopback_and_is_stopped_by_its_pid() -> None:
    bin_dir = require_bin_dir()
    pg = PostgresServer(bin_dir, use_env=False)
    with pg:
        pid, port, base = pg.pid, pg.port, pg.base_dir
        assert pid is not None and base is not None and base.is_relative_to("/tmp")
        assert pg.url == f"postgresql+asyncpg://postgres@127.0.0.1:{port}/postgres"
        assert alive(pid)
        if os.geteuid() == 0:  # PostgreSQL refuses root: it runs as the `postgres` OS user
            assert owner_uid(pid) != 0
        assert (base / "sock" / f".s.PGSQL.{port}").is_socket()
        assert await settings(
            pg.url,
            "listen_addresses",
            "port",
            "unix_socket_directories",
            "fsync",
            "synchronous_commit",
            "full_page_writes",
            "max_connections",
            "server_encoding",
        ) == {
            "listen_addresses": "127.0.0.1",
            "port": str(port),
            "unix_socket_directories": str(base / "sock"),
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "300",
            "server_encoding": "UTF8",
        }
        assert int((await settings(pg.url, "server_version_num"))["server_version_num"]) >= 150000
    assert pg.pid is None
    assert not alive(pid)  # stopped and reaped: not even a zombie is left
    assert port_is_free(port)
    assert not base.exists()
    pg.stop()  # idempotent


async def test_databases_are_created_and_dropped_with_open_connections(
    server: PostgresServer,
) -> None:
    name = unique_name()
    url = await create_database(server.url, name)
    assert url == database_url(server.url, name)
    assert url.startswith("postgresql+asyncpg://") and url.endswith(f"/{name}")
    conn = await asyncpg.connect(asyncpg_dsn(url))
    try:
        assert await conn.fetchval("SELECT current_database()") == name
        assert await conn.fetchval("SHOW server_encoding") == "UTF8"
        await conn.execute("CREATE TABLE t (s text)")
        await conn.execute("INSERT INTO t VALUES ($1)", "héllo ✓")
        assert await conn.fetchval("SELECT upper(s) FROM t") == "HÉLLO ✓"
        await drop_database(server.url, name)  # WITH (FORCE): this connection is ended
        with pytest.raises((asyncpg.PostgresError, asyncpg.InterfaceError, OSError)):
            await conn.fetchval("SELECT 1")
    finally:
        await conn.close()
    assert not await database_exists(server.url, name)
    await drop_database(server.url, name)  # IF EXISTS: dropping again is fine


async def database_exists(server_url: str, name: str) -> bool:
    conn = await asyncpg.connect(asyncpg_dsn(server_url))
    try:
        found = await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name)
    finally:
        await conn.close()
    return bool(found == 1)


async def test_a_temporary_database_lasts_for_its_block(server: PostgresServer) -> None:
    name = unique_name()
    async with temporary_database(server.url, name) as url:
        assert url == database_url(server.url, name)
        assert await database_exists(server.url, name)
    assert not await database_exists(server.url, name)


@pytest.mark.parametrize("name", ["", "Upper", 'x"; DROP DATABASE postgres; --', "1abc", "a" * 64])
async def test_names_that_would_need_quoting_are_refused(name: str) -> None:
    unreachable = "postgresql+asyncpg://postgres@127.0.0.1:1/postgres"  # refused before connecting
    with pytest.raises(ValueError, match="database name"):
        await create_database(unreachable, name)
    with pytest.raises(ValueError, match="database name"):
        await drop_database(unreachable, name)


def test_an_external_server_is_used_not_started(
    server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_URL, server.url)
    with PostgresServer() as external:
        assert external.external and external.url == server.url
        assert external.pid is None and external.base_dir is None
    assert PostgresServer(external_url="postgresql+asyncpg://u@127.0.0.1:1/x").external
    assert not PostgresServer(use_env=False).external
    if server.pid is not None:
        assert alive(server.pid)  # stopping the external one left the real one running


def test_a_port_in_use_fails_with_the_server_log_and_leaves_nothing() -> None:
    bin_dir = require_bin_dir()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        pg = PostgresServer(bin_dir, port=port, use_env=False)
        with pytest.raises(PostgresServerError, match="Address already in use"):
            pg.start()
    assert pg.pid is None and pg.base_dir is None


def test_dsn_conversion_keeps_credentials_and_options() -> None:
    url = "postgresql+asyncpg://u:p%40ss@127.0.0.1:5433/postgres?ssl=disable"
    assert asyncpg_dsn(url) == "postgresql://u:p%40ss@127.0.0.1:5433/postgres?ssl=disable"
    assert database_url(url, "t_x") == (
        "postgresql+asyncpg://u:p%40ss@127.0.0.1:5433/t_x?ssl=disable"
    )
