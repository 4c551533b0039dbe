"""The PostgreSQL backend on a local Citus cluster (docs/cluster.md): appends and search
over 100 tenants with one worker and then two, the cost of moving a tenant, and what a
query pays for the coordinator against plain PostgreSQL.

`python -m bench.citus [--quick]` (needs `make citus`). The app runs in-process (httpx over
ASGI, no sockets): every figure includes the app's own CPU, on the same machine as all nodes.
"""

import argparse
import asyncio
import json
import os
import random
import statistics
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from tempfile import mkdtemp
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import httpx

from app.config import Settings
from app.deps import Container, build
from app.edge.app import create_app
from app.services import tenants as tenant_service
from app.storage import postgres
from bench.harness import pct
from tests.support.citus_cluster import CitusCluster, citus_missing
from tests.support.postgres_server import PostgresServer, asyncpg_dsn, create_database

WORDS = "retargeting budget pricing launch renewal churn campaign roas onboarding".split()
EVENT = {"scope": "entity", "scopeRef": "ent_acme", "kind": "call_summary"}


class App:
    """The API in-process on one database, with tenants and their keys."""

    def __init__(self, container: Container, client: httpx.AsyncClient) -> None:
        self.container = container
        self.client = client
        self.tenants: list[tuple[str, dict[str, str]]] = []

    @classmethod
    async def open(cls, url: str) -> "App":
        settings = Settings(
            _env_file=None, data_dir=Path(mkdtemp(prefix="jet-bench-citus-")), database_url=url
        )
        container = await build(settings)
        transport = httpx.ASGITransport(app=create_app(container=container))
        client = httpx.AsyncClient(transport=transport, base_url="http://bench")
        return cls(container, client)

    async def close(self) -> None:
        await self.client.aclose()
        await self.container.aclose()

    async def add_tenants(self, n: int, entries: int) -> None:
        for i in range(n):
            tenant, issued = await tenant_service.create_tenant(
                self.container.control, self.container.tenants, f"bench-{i}"
            )
            headers = {"Authorization": f"Bearer {issued.secret}"}
            self.tenants.append((tenant.id, headers))
            for j in range(entries):
                entry = {
                    "scope": "entity",
                    "scopeRef": "ent_acme",
                    "title": f"{random.choice(WORDS)} note {j}",
                    "summary": " ".join(random.choices(WORDS, k=30)),
                    "tags": ["bench"],
                }
                r = await self.client.post("/memory", json=entry, headers=headers)
                assert r.status_code == 201, r.text


Request = Callable[[int], Awaitable[httpx.Response]]


async def load(clients: int, seconds: float, request: Request) -> dict[str, Any]:
    """`clients` loops calling `request(n)` for `seconds`: throughput, p50/p95, statuses."""
    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    deadline = time.perf_counter() + seconds
    counter = iter(range(10**9))

    async def loop() -> None:
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            r = await request(next(counter))
            latencies.append((time.perf_counter() - t0) * 1000)
            statuses[r.status_code] += 1

    started = time.perf_counter()
    await asyncio.gather(*(loop() for _ in range(clients)))
    elapsed = time.perf_counter() - started
    return {
        "requests_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(pct(latencies, 50), 2),
        "p95_ms": round(pct(latencies, 95), 2),
        "statuses": dict(statuses),
        "load_avg_1m": load_average(),
    }


def load_average() -> float:
    """The machine's 1-minute load average now: every node shares this machine's CPU, so
    each figure is read beside it."""
    return round(os.getloadavg()[0], 2)


async def spread(app: App, clients: int, seconds: float) -> dict[str, Any]:
    """Appends and searches spread over every tenant of `app`."""

    def append(n: int) -> Awaitable[httpx.Response]:
        _, headers = app.tenants[n % len(app.tenants)]
        body = {**EVENT, "body": f"{random.choice(WORDS)} event {n}"}
        return app.client.post("/memory/events", json=body, headers=headers)

    def search(n: int) -> Awaitable[httpx.Response]:
        _, headers = app.tenants[n % len(app.tenants)]
        return app.client.get("/memory", params={"search": random.choice(WORDS)}, headers=headers)

    return {
        "appends": await load(clients, seconds, append),
        "search": await load(clients, seconds, search),
    }


async def sql_medians(url: str, schema: str, rounds: int) -> dict[str, float]:
    """Median ms of single statements on one tenant's tables, one connection."""
    conn = await asyncpg.connect(asyncpg_dsn(url))
    queries = {
        "point read (entry by id)": f'SELECT * FROM "{schema}".memory_entries WHERE id = $1',
        "events page (50)": f'SELECT * FROM "{schema}".memory_events ORDER BY seq DESC LIMIT 50',
    }
    some_id = await conn.fetchval(f'SELECT id FROM "{schema}".memory_entries LIMIT 1')
    out: dict[str, float] = {}
    try:
        for label, q in queries.items():
            args = (some_id,) if "$1" in q else ()
            times = []
            for _ in range(rounds):
                t0 = time.perf_counter()
                await conn.fetch(q, *args)
                times.append((time.perf_counter() - t0) * 1000)
            out[label] = round(statistics.median(times), 3)
    finally:
        await conn.close()
    return out


async def api_medians(app: App, rounds: int) -> dict[str, float]:
    _, headers = app.tenants[0]
    out: dict[str, float] = {}
    calls: dict[str, Callable[[], Awaitable[httpx.Response]]] = {
        "GET /memory?search=": lambda: app.client.get(
            "/memory", params={"search": "pricing"}, headers=headers
        ),
        "POST /memory/events": lambda: app.client.post(
            "/memory/events", json={**EVENT, "body": "one more"}, headers=headers
        ),
    }
    for label, call in calls.items():
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            r = await call()
            assert r.status_code < 300, r.text
            times.append((time.perf_counter() - t0) * 1000)
        out[label] = round(statistics.median(times), 3)
    return out


async def move_cost(cluster: CitusCluster, url: str, app: App, events: int) -> dict[str, Any]:
    """Fill one tenant with `events` events, then move its schema while 4 clients append to
    it (retrying a 503 after its Retry-After, with the same Idempotency-Key)."""
    tenant_id, headers = app.tenants[0]
    schema = postgres.tenant_schema(tenant_id)
    for start in range(0, events, 1000):
        batch = [
            {**EVENT, "body": f"backfill {i}"} for i in range(start, min(events, start + 1000))
        ]
        r = await app.client.post("/memory/events", json=batch, headers=headers)
        assert r.status_code == 201, r.text
    conn = await asyncpg.connect(asyncpg_dsn(url))
    try:
        source = await conn.fetchval(
            "SELECT n.nodeport FROM citus_schemas s JOIN pg_dist_partition p "
            "ON p.colocationid = s.colocation_id JOIN pg_dist_shard sh USING (logicalrelid) "
            "JOIN pg_dist_placement pl USING (shardid) JOIN pg_dist_node n USING (groupid) "
            "WHERE s.schema_name = $1::regnamespace LIMIT 1",
            schema,
        )
        target = next(w.port for w in cluster.workers if w.port != source)
        stop = asyncio.Event()
        seen: Counter[str] = Counter()
        acked = 0

        async def writer(w: int) -> None:
            nonlocal acked
            n = 0
            while not stop.is_set():
                n += 1
                key = f"mv-{w}-{n}"
                while True:
                    r = await app.client.post(
                        "/memory/events",
                        json={**EVENT, "body": key},
                        headers={**headers, "Idempotency-Key": key},
                    )
                    seen[str(r.status_code)] += 1
                    if r.status_code < 300:
                        acked += 1
                        break
                    await asyncio.sleep(float(r.headers.get("Retry-After", "1")))

        tasks = [asyncio.create_task(writer(w)) for w in range(4)]
        await asyncio.sleep(0.5)
        t0 = time.perf_counter()
        await conn.execute(
            "SELECT citus_schema_move($1::regnamespace, '127.0.0.1'::text, $2::int)", schema, target
        )
        seconds = time.perf_counter() - t0
        stop.set()
        await asyncio.gather(*tasks)
        stored = await conn.fetchval(
            f"SELECT count(DISTINCT body) FROM \"{schema}\".memory_events WHERE body LIKE 'mv-%'"
        )
        rows = await conn.fetchval(
            f"SELECT count(*) FROM \"{schema}\".memory_events WHERE body LIKE 'mv-%'"
        )
    finally:
        await conn.close()
    return {
        "events": events,
        "move_s": round(seconds, 2),
        "s_per_100k_events": round(seconds * 100_000 / events, 2),
        "client_answers": dict(seen),
        "acknowledged": acked,
        "stored_distinct": stored,
        "stored_rows": rows,
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    missing = citus_missing()
    if missing is not None:
        raise SystemExit(f"bench.citus: {missing}")
    tenants, entries = args.tenants or (20 if args.quick else 100), 3
    seconds = 3.0 if args.quick else 8.0
    move_events = args.move_events or (10_000 if args.quick else 100_000)
    results: dict[str, Any] = {"tenants": tenants, "clients": args.clients, "seconds": seconds}
    # One cluster grown by a worker, as an operator grows one: the same tenants are measured
    # on one worker, then again after `citus_add_node` and a rebalance spread them over two.
    with CitusCluster(workers=1) as cluster:
        name = f"bench_{uuid.uuid4().hex[:8]}"
        url = await cluster.create_database(name)
        app = await App.open(url)
        try:
            t0 = time.perf_counter()
            await app.add_tenants(tenants, entries)
            results["tenant_setup_s"] = round(time.perf_counter() - t0, 1)
            results["one_worker"] = await spread(app, args.clients, seconds)
            print("one_worker:", json.dumps(results["one_worker"]), flush=True)
            t0 = time.perf_counter()
            await cluster.add_worker()
            conn = await asyncpg.connect(asyncpg_dsn(url))
            try:
                await conn.execute(
                    "SELECT citus_rebalance_start(shard_transfer_mode := 'block_writes')"
                )
                await conn.execute("SELECT citus_rebalance_wait()")
            finally:
                await conn.close()
            results["add_worker_and_rebalance_s"] = round(time.perf_counter() - t0, 1)
            placed = await cluster.placements(name)
            results["tenants_per_worker"] = dict(Counter(str(p) for p in placed.values()))
            results["two_workers"] = await spread(app, args.clients, seconds)
            print("two_workers:", json.dumps(results["two_workers"]), flush=True)
            schema = postgres.tenant_schema(app.tenants[0][0])
            results["coordinator_sql_ms"] = await sql_medians(url, schema, args.rounds)
            results["coordinator_api_ms"] = await api_medians(app, args.rounds)
            results["coordinator_load_avg_1m"] = load_average()
            results["move"] = await move_cost(cluster, url, app, move_events)
            results["move"]["load_avg_1m"] = load_average()
            print("move:", json.dumps(results["move"]), flush=True)
        finally:
            await app.close()
    with PostgresServer(use_env=False) as plain:
        url = await create_database(plain.url, f"bench_{uuid.uuid4().hex[:8]}")
        app = await App.open(url)
        try:
            await app.add_tenants(1, entries)
            schema = postgres.tenant_schema(app.tenants[0][0])
            results["plain_sql_ms"] = await sql_medians(url, schema, args.rounds)
            results["plain_api_ms"] = await api_medians(app, args.rounds)
            results["plain_load_avg_1m"] = load_average()
        finally:
            await app.close()
    results["coordinator_ratio"] = {
        k: round(results["coordinator_sql_ms"][k] / results["plain_sql_ms"][k], 2)
        for k in results["plain_sql_ms"]
    } | {
        k: round(results["coordinator_api_ms"][k] / results["plain_api_ms"][k], 2)
        for k in results["plain_api_ms"]
    }
    return results


def cli() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.citus", description=__doc__)
    p.add_argument("--quick", action="store_true", help="20 tenants, 3 s loads, 10,000-event move")
    p.add_argument("--clients", type=int, default=16, help="concurrent clients (default 16)")
    p.add_argument("--rounds", type=int, default=300, help="rounds of each single query")
    p.add_argument("--tenants", type=int, help="tenants the load spreads over (100)")
    p.add_argument("--move-events", type=int, help="events of the moved tenant (100,000)")
    p.add_argument("--out", type=Path, help="also write the results as JSON here")
    args = p.parse_args()
    results = asyncio.run(main(args))
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    cli()
