"""A tenant exported from SQLite, imported into PostgreSQL, exported again and imported back
into SQLite answers every query as the first did (a real PostgreSQL server, started here)."""

import io
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from app.config import Settings
from app.deps import Container, build
from app.services.data_rights import importer, portability
from app.storage.tenants import TenantDb
from tests.conftest import make_tenant
from tests.services.portability_data import answers, fill
from tests.support.postgres_server import (
    PostgresServer,
    create_database,
    drop_database,
    find_bin_dir,
)

if TYPE_CHECKING:
    from tests.support.citus_cluster import CitusCluster

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pg_server(postgres_server: str | None) -> Iterator[str]:
    if postgres_server is not None:
        yield postgres_server
        return
    if find_bin_dir() is None and not os.environ.get("JET_TEST_POSTGRES_URL"):
        pytest.skip("no PostgreSQL server binaries (`make postgres` installs them)")
    with PostgresServer() as server:
        yield server.url


@pytest.fixture
async def pg_container(
    pg_server: str, citus_cluster: "CitusCluster | None", tmp_path: Path
) -> AsyncIterator[Container]:
    name = f"jet_test_{uuid.uuid4().hex[:16]}"
    # --backend citus: the database on every node of the cluster, so the tenant is a
    # distributed schema on a worker (a plain database on the coordinator would not be).
    if citus_cluster is not None:
        url = await citus_cluster.create_database(name)
    else:
        url = await create_database(pg_server, name)
    c = await build(Settings(_env_file=None, data_dir=tmp_path / "pg", database_url=url))  # type: ignore[call-arg]
    try:
        yield c
    finally:
        await c.aclose()
        if citus_cluster is not None:
            await citus_cluster.drop_database(name)
        else:
            await drop_database(pg_server, name)


@pytest.fixture
async def sqlite_container(tmp_path: Path) -> AsyncIterator[Container]:
    c = await build(Settings(_env_file=None, data_dir=tmp_path / "sqlite"))  # type: ignore[call-arg]
    yield c
    await c.aclose()


async def _export(db: TenantDb) -> bytes:
    return b"".join([chunk async for chunk in portability.export_lines(db)])


async def test_sqlite_to_postgresql_and_back_answers_the_same(
    sqlite_container: Container, pg_container: Container
) -> None:
    first = await make_tenant(sqlite_container, "first")
    moved = await make_tenant(pg_container, "moved")
    back = await make_tenant(sqlite_container, "back")
    async with (
        sqlite_container.tenants.lease(first.id) as a,
        pg_container.tenants.lease(moved.id) as b,
        sqlite_container.tenants.lease(back.id) as c,
    ):
        assert a.engine.dialect.name == "sqlite" and b.engine.dialect.name == "postgresql"
        await fill(sqlite_container, first.id, a)
        from_sqlite = await _export(a)
        await importer.import_file(b, io.BytesIO(from_sqlite))
        from_postgres = await _export(b)
        # Record for record and byte for byte, whichever database wrote them.
        assert from_postgres.splitlines()[1:] == from_sqlite.splitlines()[1:]
        await importer.import_file(c, io.BytesIO(from_postgres))

        plain, ranked = await answers(a)
        assert sum(len(page) for page in plain["events"]) == 10
        assert [k for k in plain if k.startswith("provenance")] and _ids(ranked["entries.search"])
        on_postgres, ranked_on_postgres = await answers(b)
        # Relevance scores are each backend's own (docs/postgresql.md); the rest is equal.
        assert on_postgres == plain
        assert {k: _ids(v) for k, v in ranked_on_postgres.items() if "search" in k} == {
            k: _ids(v) for k, v in ranked.items() if "search" in k
        }
        assert await answers(c) == (plain, ranked)


def _ids(pages: list[list[tuple[str, object, float | None]]]) -> set[str]:
    return {node.id for page in pages for _, node, _ in page}  # type: ignore[attr-defined]
