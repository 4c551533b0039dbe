"""The PostgreSQL backend on a Citus cluster (a coordinator and two workers started here):
the start check, where tenants and the control tables live, and an operator's operations
(add a worker and rebalance, move a tenant under load, a worker down, migrate every tenant).
"""

import asyncio
import functools
import logging
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta

import asyncpg  # type: ignore[import-untyped]
import httpx
import pytest
from sqlalchemy import text

from app.config import Settings
from app.deps import Container, build
from app.edge.app import create_app
from app.services.compaction import compact_tenant
from app.storage import postgres
from app.storage.citus import CitusNotReady
from app.storage.unavailable import TenantUnavailable
from tests.conftest import TenantFixture, make_tenant
from tests.support.citus_cluster import CitusCluster
from tests.support.postgres_server import asyncpg_dsn

pytestmark = pytest.mark.citus

EVENT = {"scope": "entity", "scopeRef": "ent_acme", "kind": "call_summary"}


@pytest.fixture
def cluster() -> Iterator[CitusCluster]:
    """A cluster of its own per test: the tests change its topology."""
    with CitusCluster(workers=2) as c:
        yield c


@pytest.fixture
async def cluster_db(cluster: CitusCluster) -> AsyncIterator[str]:
    yield await cluster.create_database(f"jet_cluster_{uuid.uuid4().hex[:8]}")


@pytest.fixture
async def stack(
    tmp_path_factory: pytest.TempPathFactory, cluster_db: str
) -> AsyncIterator[Container]:
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, data_dir=tmp_path_factory.mktemp("data"), database_url=cluster_db
    )
    c = await build(settings)
    yield c
    await c.aclose()


@pytest.fixture
async def api(stack: Container) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(container=stack))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


async def fetch(url: str, query: str, *args: object) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(asyncpg_dsn(url), timeout=30)
    try:
        return list(await conn.fetch(query, *args))
    finally:
        await conn.close()


async def tenants_over_workers(stack: Container, n: int) -> list[TenantFixture]:
    return [await make_tenant(stack, f"team-{i}") for i in range(n)]


async def cli_migrate(
    url: str, tmp_path_factory: pytest.TempPathFactory, command: str = "migrate"
) -> "subprocess.CompletedProcess[str]":
    """`jet-memory <command>` against `url`, as an operator runs it (its own process)."""
    env = {"JET_DATABASE_URL": url, "JET_DATA_DIR": str(tmp_path_factory.mktemp("cli"))}
    run = functools.partial(
        subprocess.run,
        [sys.executable, "-m", "app.cli", command],
        env={**env, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return await asyncio.to_thread(run)


def schema(t: TenantFixture) -> str:
    return postgres.tenant_schema(t.id)


async def test_start_refuses_a_cluster_without_the_settings_it_needs(
    cluster: CitusCluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    url = await cluster.create_database("jet_bare", settings=False)
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, data_dir=tmp_path_factory.mktemp("data"), database_url=url
    )
    with pytest.raises(CitusNotReady) as caught:
        await build(settings)
    message = str(caught.value)
    assert "citus.enable_schema_based_sharding is off, must be on" in message
    assert "citus.enable_unsafe_triggers is off, must be on" in message
    # Nothing was created: the check runs before the control tables.
    rows = await fetch(url, "SELECT 1 FROM pg_namespace WHERE nspname = 'jet_control'")
    assert rows == []
    # The CLI says the same in one line on stderr, without a traceback: `migrate`, and the
    # arq `worker` before it starts (`serve` checks the same way).
    for command in ("migrate", "worker"):
        proc = await cli_migrate(url, tmp_path_factory, command)
        assert proc.returncode == 2, (command, proc.stderr)
        assert "citus.enable_unsafe_triggers is off, must be on" in proc.stderr, command
        assert "Traceback" not in proc.stderr, command


async def test_tenants_spread_over_workers_and_the_control_tables_stay_on_the_coordinator(
    cluster: CitusCluster, cluster_db: str, stack: Container, api: httpx.AsyncClient
) -> None:
    teams = await tenants_over_workers(stack, 4)
    placed = await cluster.placements(cluster_db.rsplit("/", 1)[1])
    assert {schema(t) for t in teams} <= set(placed)
    assert {placed[schema(t)] for t in teams} == {w.port for w in cluster.workers}
    assert "jet_control" not in placed
    local = await fetch(
        cluster_db,
        "SELECT count(*) FROM pg_tables WHERE schemaname = 'jet_control' AND tablename NOT IN "
        "(SELECT table_name::text FROM citus_tables WHERE table_name::text LIKE 'jet_control.%')",
    )
    assert local[0][0] >= 3
    # The app's connections skip Citus's shard hiding, whose per-row filter on pg_class made
    # asyncpg's type introspection (a new connection's first varchar[]) stall appends.
    engine = stack.tenants._shared
    assert engine is not None
    async with engine.connect() as conn:
        shown = await conn.execute(text("SHOW citus.override_table_visibility"))
        assert shown.scalar() == "off"
    # Each tenant sees its own memory only (the isolation the edge gives, on the cluster).
    for t in teams:
        r = await api.post(
            "/memory/events", json={**EVENT, "body": f"note of {t.id}"}, headers=t.headers
        )
        assert r.status_code == 201, r.text
    for t in teams:
        r = await api.get(
            "/memory/events", params={"scope": "entity", "scopeRef": "ent_acme"}, headers=t.headers
        )
        assert [e["body"] for e in r.json()["items"]] == [f"note of {t.id}"]


def port_of(placed: dict[str, int], t: TenantFixture) -> int:
    return placed[schema(t)]


async def test_a_tenant_moves_to_another_worker_while_it_is_served_and_compacted(
    cluster: CitusCluster, cluster_db: str, stack: Container, api: httpx.AsyncClient
) -> None:
    name = cluster_db.rsplit("/", 1)[1]
    mover, other = await tenants_over_workers(stack, 2)
    old = (datetime.now(UTC) - timedelta(days=200)).isoformat()
    for i in range(60):  # old events: the compactor has buckets to fold during the move
        body = {**EVENT, "scopeRef": f"ent_{i % 6}", "body": f"old {i}", "occurredAt": old}
        assert (
            await api.post("/memory/events", json=body, headers=mover.headers)
        ).status_code == 201
    source = port_of(await cluster.placements(name), mover)
    target = next(w.port for w in cluster.workers if w.port != source)

    acked: Counter[str] = Counter()
    refused: Counter[str] = Counter()  # what clients saw besides success: must be 503s only
    stop = asyncio.Event()

    async def writer(who: TenantFixture, w: int) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            key = f"{who.id}-w{w}-{n}"
            body = {**EVENT, "scopeRef": f"ent_{n % 6}", "body": key}
            if n % 3 == 0:
                body["occurredAt"] = old  # more work for the compactor as it runs
            while True:
                r = await api.post(
                    "/memory/events", json=body, headers={**who.headers, "Idempotency-Key": key}
                )
                if r.status_code in (200, 201):
                    acked[key] += 1
                    break
                assert r.status_code == 503 and r.headers.get("Retry-After"), (
                    r.status_code,
                    r.text,
                )
                refused[r.json()["errors"][0]["code"]] += 1
                await asyncio.sleep(0.05)

    runs = Counter[str]()

    folded = 0

    async def compactor() -> None:
        nonlocal folded
        while not stop.is_set():
            try:
                run = await compact_tenant(stack, mover.id, trigger="cli")
                runs[str(run.status)] += 1
                folded += run.events_compressed
            except TenantUnavailable:  # a run cut by the move: the next run takes it up
                runs["unavailable"] += 1
            await asyncio.sleep(0.1)

    tasks = [asyncio.create_task(writer(mover, w)) for w in range(4)]
    tasks += [asyncio.create_task(writer(other, 9)), asyncio.create_task(compactor())]
    try:
        await asyncio.sleep(1.0)
        before = sum(acked.values())
        moved_at = asyncio.get_running_loop().time()
        await fetch(
            cluster_db,
            "SELECT citus_schema_move($1::regnamespace, '127.0.0.1'::text, $2::int)",
            schema(mover),
            target,
        )
        move_seconds = asyncio.get_running_loop().time() - moved_at
        during = sum(acked.values()) - before
        await asyncio.sleep(1.0)
    finally:
        stop.set()
        await asyncio.gather(*tasks)

    assert port_of(await cluster.placements(name), mover) == target
    assert during > 0, "appends were acknowledged while the tenant moved"
    for who in (mover, other):
        rows = await fetch(
            cluster_db,
            f'SELECT body, count(*) AS n FROM "{schema(who)}".memory_events '
            "WHERE body LIKE $1 GROUP BY body",
            f"{who.id}-w%",
        )
        stored = {r["body"]: r["n"] for r in rows}
        mine = {k for k in acked if k.startswith(who.id)}
        assert set(stored) == mine  # none lost, none unacknowledged kept
        assert set(stored.values()) == {1}  # none duplicated
    assert set(acked.values()) == {1}
    # The compactor kept running and folded at least once; a run cut short left nothing
    # half-folded (every compressed event points at an entry that exists).
    assert folded > 0, runs
    dangling = await fetch(
        cluster_db,
        f'SELECT count(*) FROM "{schema(mover)}".memory_events e WHERE e.compressed_at IS NOT NULL '
        f'AND NOT EXISTS (SELECT 1 FROM "{schema(mover)}".memory_entries m '
        "WHERE m.id = e.compressed_into)",
    )
    assert dangling[0][0] == 0
    print(
        f"move {move_seconds:.2f}s, {sum(acked.values())} appends acknowledged "
        f"({during} during the move), refused: {dict(refused)}, compactor runs: {dict(runs)}"
    )


async def test_a_worker_down_takes_only_its_tenants_down_with_a_retryable_answer(
    cluster: CitusCluster,
    cluster_db: str,
    stack: Container,
    api: httpx.AsyncClient,
    caplog: pytest.LogCaptureFixture,
) -> None:
    name = cluster_db.rsplit("/", 1)[1]
    teams = await tenants_over_workers(stack, 4)
    placed = await cluster.placements(name)
    down = cluster.workers[1]
    lost = [t for t in teams if port_of(placed, t) == down.port]
    kept = [t for t in teams if port_of(placed, t) != down.port]
    assert lost and kept
    for t in teams:
        r = await api.post("/memory/events", json={**EVENT, "body": "before"}, headers=t.headers)
        assert r.status_code == 201
    down.stop()
    caplog.clear()
    with caplog.at_level(logging.INFO):
        for t in lost:
            r = await api.post(
                "/memory/events", json={**EVENT, "body": "during"}, headers=t.headers
            )
            assert r.status_code == 503 and r.headers["Retry-After"] == "1", r.text
            assert r.json()["errors"][0]["code"] == "TENANT_DATABASE_UNREACHABLE"
            r = await api.get("/memory", params={"search": "before"}, headers=t.headers)
            assert r.status_code == 503 and r.headers["Retry-After"] == "1", r.text
            g = await api.post(
                "/graphql",
                json={
                    "query": "{ memoryEvents(filter: {scope: ENTITY}) { edges { node { body } } } }"
                },
                headers=t.headers,
            )
            error = g.json()["errors"][0]
            assert error["extensions"]["code"] == "TENANT_DATABASE_UNREACHABLE", g.json()
            assert error["extensions"]["retryAfter"] == 1
        for t in kept:
            r = await api.post(
                "/memory/events", json={**EVENT, "body": "during"}, headers=t.headers
            )
            assert r.status_code == 201, r.text
            r = await api.get(
                "/memory/events",
                params={"scope": "entity", "scopeRef": "ent_acme"},
                headers=t.headers,
            )
            assert [e["body"] for e in r.json()["items"]] == ["during", "before"]
    assert not [rec for rec in caplog.records if rec.exc_info], "no traceback in the log"


async def test_a_new_worker_takes_tenants_after_a_rebalance(
    cluster: CitusCluster,
    cluster_db: str,
    stack: Container,
    api: httpx.AsyncClient,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from tests.conftest import migrate_tenant

    name = cluster_db.rsplit("/", 1)[1]
    teams = await tenants_over_workers(stack, 6)
    for t in teams:
        r = await api.post(
            "/memory/events", json={**EVENT, "body": f"of {t.id}"}, headers=t.headers
        )
        assert r.status_code == 201
    engine = stack.tenants._shared
    assert engine is not None
    for t in teams[:2]:  # tenants made before migration 0012, whose tables Citus misorders
        async with engine.begin() as conn:
            await conn.execute(text(f'SET LOCAL search_path TO "{schema(t)}"'))
            await conn.run_sync(migrate_tenant, "0010")
    added = await cluster.start_worker()
    with pytest.raises(asyncpg.InternalServerError, match="marked as essential"):
        await cluster.add_node(added, name)
    # The failed call changed nothing; the migration fixes those tenants, then it works.
    proc = await cli_migrate(cluster_db, tmp_path_factory)
    assert proc.returncode == 0, proc.stderr
    await cluster.add_node(added, name)
    assert added.port not in set((await cluster.placements(name)).values())
    await fetch(cluster_db, "SELECT citus_rebalance_start(shard_transfer_mode := 'block_writes')")
    await fetch(cluster_db, "SELECT citus_rebalance_wait()")
    placed = await cluster.placements(name)
    assert sum(1 for t in teams if port_of(placed, t) == added.port) >= 1
    assert {port_of(placed, t) for t in teams} == {w.port for w in cluster.workers}
    for t in teams:  # every tenant still serves its own memory, wherever it went
        r = await api.get(
            "/memory/events", params={"scope": "entity", "scopeRef": "ent_acme"}, headers=t.headers
        )
        assert [e["body"] for e in r.json()["items"]] == [f"of {t.id}"]
        r = await api.post("/memory/events", json={**EVENT, "body": "after"}, headers=t.headers)
        assert r.status_code == 201


async def test_migrate_brings_every_tenant_schema_of_the_cluster_to_head(
    cluster: CitusCluster,
    cluster_db: str,
    stack: Container,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from app.storage import migrate
    from tests.conftest import migrate_tenant

    teams = await tenants_over_workers(stack, 3)
    head = migrate.head_revision("tenant")
    engine = stack.tenants._shared
    assert engine is not None
    for t in teams:  # each schema one migration behind, as after a deploy of new code
        async with engine.begin() as conn:
            await conn.execute(text(f'SET LOCAL search_path TO "{schema(t)}"'))
            await conn.run_sync(migrate_tenant, "-1")
    behind = await fetch(
        cluster_db, f'SELECT version_num FROM "{schema(teams[0])}".alembic_version'
    )
    assert behind[0][0] != head
    proc = await cli_migrate(cluster_db, tmp_path_factory)
    assert proc.returncode == 0, proc.stderr
    assert "3 tenant databases, 3 migrated" in proc.stdout
    placed = await cluster.placements(cluster_db.rsplit("/", 1)[1])
    for t in teams:
        rows = await fetch(cluster_db, f'SELECT version_num FROM "{schema(t)}".alembic_version')
        assert rows[0][0] == head
        # The tables the migration made are in the tenant's distributed schema, on its worker.
        made = await fetch(
            cluster_db,
            "SELECT count(*) FROM citus_tables WHERE citus_table_type = 'schema' "
            "AND table_name::text LIKE $1",
            f"{schema(t)}.memory_changes%",
        )
        assert made[0][0] >= 1 and schema(t) in placed
