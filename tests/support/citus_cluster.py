"""A throwaway Citus cluster for tests: a coordinator and N workers, each a PostgresServer.

    with CitusCluster(workers=2) as cluster:          # 3 servers on 127.0.0.1, free ports
        url = await cluster.create_database("t_abc")  # on every node, workers added
        ...
        await cluster.drop_database("t_abc")
                                                      # stopped by PID, data dirs removed

Each node preloads Citus and runs with wal_level=logical (Citus moves a shard with logical
replication, so writes go on during most of the copy). A database is made on every node
with the extension, the workers are added to the coordinator's metadata, and the settings
the backend needs (app/storage/citus.REQUIRED) are set on the coordinator's database, as an
operator would (`settings=False` leaves them out, for the refusal test).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from types import TracebackType

import asyncpg  # type: ignore[import-untyped]

from tests.support.postgres_server import (
    PostgresServer,
    asyncpg_dsn,
    create_database,
    database_url,
    drop_database,
    find_bin_dir,
)

NODE_SETTINGS = {
    "shared_preload_libraries": "citus",
    "wal_level": "logical",
    "max_replication_slots": "20",
    "max_wal_senders": "20",
    # A worker down: the coordinator's connection attempt fails fast, not after 30 s.
    "citus.node_connection_timeout": "3000",
}
CLUSTER_SETTINGS = {
    "citus.enable_schema_based_sharding": "on",
    "citus.enable_unsafe_triggers": "on",
}


def citus_missing() -> str | None:
    """Why a cluster cannot start here (a skip reason), or None when it can."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        return "no PostgreSQL server binaries (make postgres)"
    pg_config = bin_dir / "pg_config"
    lib = Path("/usr/lib/postgresql") / bin_dir.parent.name / "lib" / "citus.so"
    if pg_config.exists():
        import subprocess

        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                [str(pg_config), "--pkglibdir"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
            if out:
                lib = Path(out) / "citus.so"
    if not lib.exists():
        return f"the Citus extension is not installed ({lib} missing): `make citus` builds it"
    return None


async def _run(url: str, *statements: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(asyncpg_dsn(url), timeout=30)
    try:
        rows: list[asyncpg.Record] = []
        for s in statements:
            rows = await conn.fetch(s)
        return rows
    finally:
        await conn.close()


class CitusCluster:
    def __init__(self, workers: int = 2) -> None:
        self.coordinator = PostgresServer(use_env=False, settings=NODE_SETTINGS)
        self.workers = [
            PostgresServer(use_env=False, settings=NODE_SETTINGS) for _ in range(workers)
        ]
        self.databases: list[str] = []

    @property
    def url(self) -> str:
        return self.coordinator.url

    def __enter__(self) -> CitusCluster:
        try:
            self.coordinator.start()
            for w in self.workers:
                w.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        for server in [*self.workers, self.coordinator]:
            server.stop()

    async def _prepare_node(self, server: PostgresServer, name: str) -> str:
        url = await create_database(server.url, name)
        await _run(url, "CREATE EXTENSION citus")
        return url

    async def create_database(self, name: str, *, settings: bool = True) -> str:
        """Database `name` on every node, its workers added; its coordinator URL."""
        url = await self._prepare_node(self.coordinator, name)
        for w in self.workers:
            await self._prepare_node(w, name)
        statements = [f"SELECT citus_set_coordinator_host('127.0.0.1', {self.coordinator.port})"]
        statements += [f"SELECT citus_add_node('127.0.0.1', {w.port})" for w in self.workers]
        if settings:
            statements += [
                f"ALTER DATABASE {name} SET {k} = {v}" for k, v in CLUSTER_SETTINGS.items()
            ]
        await _run(url, *statements)
        self.databases.append(name)
        return url

    async def drop_database(self, name: str) -> None:
        for server in [self.coordinator, *self.workers]:
            if server.pid is not None:
                await drop_database(server.url, name)
        if name in self.databases:
            self.databases.remove(name)

    async def add_worker(self) -> PostgresServer:
        """A new worker, added to every database of the cluster (it holds nothing yet)."""
        worker = await self.start_worker()
        for name in self.databases:
            await self.add_node(worker, name)
        return worker

    async def start_worker(self) -> PostgresServer:
        """A new node with every database of the cluster, not yet known to the coordinator."""
        worker = PostgresServer(use_env=False, settings=NODE_SETTINGS)
        worker.start()
        self.workers.append(worker)
        for name in self.databases:
            await self._prepare_node(worker, name)
        return worker

    async def add_node(self, worker: PostgresServer, name: str) -> None:
        """`citus_add_node` of `worker` in database `name`, as an operator runs it."""
        await _run(
            database_url(self.url, name), f"SELECT citus_add_node('127.0.0.1', {worker.port})"
        )

    async def placements(self, name: str) -> dict[str, int]:
        """Each distributed schema of database `name` and the port of the worker it is on."""
        rows = await _run(
            database_url(self.url, name),
            "SELECT s.schema_name::text AS schema, n.nodeport AS port "
            "FROM citus_schemas s JOIN pg_dist_partition p ON p.colocationid = s.colocation_id "
            "JOIN pg_dist_shard sh ON sh.logicalrelid = p.logicalrelid "
            "JOIN pg_dist_placement pl ON pl.shardid = sh.shardid "
            "JOIN pg_dist_node n ON n.groupid = pl.groupid GROUP BY 1, 2",
        )
        return {str(r["schema"]): int(r["port"]) for r in rows}
