"""SQLite and PostgreSQL side by side (issue 8): the same workloads, the same data, the same
server, the same load generators, one figure per backend and their ratio.

Usage: .venv/bin/python -m bench.backends [--quick] [--only append,batch,search,events,
       tenants] [--rounds N] [--seconds S] [--entries N | --big] [--events N | --big]
       [--tenants N] [--keep-data]
       .venv/bin/python -m bench.backends --ranking [--entries N]

- **PostgreSQL** is a real server started by this script (tests/support/postgres_server.py's
  `PostgresServer`: initdb + postgres on 127.0.0.1, a child process stopped by its PID),
  but with durability ON (`fsync=on`, `synchronous_commit=on`, `full_page_writes=on`),
  unlike the test cluster's settings, so that an acknowledged append is on disk as it is
  with SQLite's `synchronous=FULL`. The settings in force are read back (`SHOW`) and the
  run stops if they are not durable. Its data directory is under /tmp, on the same disk as
  the SQLite files here. Other settings are PostgreSQL's defaults (shared_buffers 128MB).
- **The API server** is the real app under uvicorn, one worker process, 127.0.0.1
  (bench/harness.Server, as `python -m bench` runs it), once with SQLite files under a data
  dir and once with `JET_DATABASE_URL=postgresql+asyncpg://…` (JET_POSTGRES_POOL_SIZE left
  at its default). Both servers are up during a workload and their rounds alternate, so
  the machine's noise falls on both alike.
- **The load** comes from other processes: wrk (bench/wrk_bench.lua) for appends, and
  bench/http_load.py for reads and first requests.
- **The data** is generated once per run by bench/context.py's and bench/data.py's
  generators and written, row for row with the same ids, into both backends (SQLite by
  sqlite3 `executemany`, PostgreSQL by COPY into the tenant's schema, then VACUUM ANALYZE as
  autovacuum would); tenants are created by the services (so their schemas are migrated).

Workloads: append (appendMemoryEvent and POST /memory/events, 64 clients, every
acknowledged event looked up afterwards), batch (500 events a request, 8 clients), search
(memoryEntries top 20, N entries in 10 scopes, common and rare terms, 16 clients), events
(memoryEvents first 50 by scope over M events, 16 clients), tenants (first request to a
tenant not yet open, one client, against the same request to an open tenant).

`--ranking`: the same generated entries (same ids) in both backends; for 30 questions in
each of the 10 scopes (and without a scope), the service's top 10 on each backend:
overlap@10, Kendall tau over the shared ids, top-1 agreement, recall of SQLite's top 10 in
PostgreSQL's top 50; plus probes of tokenizer differences (diacritics, stemming, prefixes).

Writes bench/results/backends-<time>.json and .md; prints the table.
"""

import argparse
import asyncio
import itertools
import json
import os
import random
import shutil
import sqlite3
import statistics
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.ext.asyncio import AsyncEngine

from app.config import Settings
from app.deps import Container, build
from app.services import entries
from app.services import tenants as tenant_service
from app.services.records import EntryFilter, EntryIn, EntrySource, Scope
from app.services.search import analysis, keywords
from app.storage import postgres
from app.storage.search import fulltext, spec
from bench import context as cb
from bench import data as bench_data
from bench.harness import (
    RESULTS,
    Server,
    fmt,
    git_state,
    load_note,
    median,
    pct,
    proc_cpu_seconds,
    read_acks,
    run_load,
    run_wrk,
)
from tests.support import postgres_server as pgs

CMD = ".venv/bin/python -m bench.backends"
WORKLOADS = ["append", "batch", "search", "events", "tenants"]
BACKENDS = ["sqlite", "postgresql"]
# What the comparison needs: a commit is on disk when it is acknowledged, as with SQLite's
# synchronous=FULL. (tests/support/postgres_server.py runs its throwaway clusters with these off.)
DURABLE = {
    "fsync": "on",
    "synchronous_commit": "on",
    "full_page_writes": "on",
    "max_connections": "100",
}
CHUNK = 20_000
ENTRY_COLS = [
    "id",
    "scope",
    "scope_ref",
    "title",
    "summary",
    "tags",
    "importance",
    "source",
    "created_at",
    "updated_at",
    "version",
]
EVENT_COLS = [
    "id",
    "scope",
    "scope_ref",
    "kind",
    "body",
    "source",
    "source_ref",
    "occurred_at",
    "recorded_at",
    "compressed_at",
    "compressed_into",
]


# ------------------------------------------------------------------------ PostgreSQL


class DurablePostgres(pgs.PostgresServer):
    """tests/support/postgres_server.PostgresServer (same initdb, same child process, same stop by
    PID), started with DURABLE instead of the test cluster's settings.

    PostgresServer has no settings parameter: its command line is built from the module's
    SERVER_SETTINGS, which is swapped for DURABLE while the server starts (this process
    only), and `check_durable()` then reads the settings back from the running server.
    """

    def _start_server(self) -> None:
        saved = dict(pgs.SERVER_SETTINGS)
        pgs.SERVER_SETTINGS.clear()
        pgs.SERVER_SETTINGS.update(DURABLE)
        try:
            super()._start_server()
        finally:
            pgs.SERVER_SETTINGS.clear()
            pgs.SERVER_SETTINGS.update(saved)

    async def settings(self) -> dict[str, str]:
        conn = await asyncpg.connect(pgs.asyncpg_dsn(self.url))
        try:
            names = [
                *DURABLE,
                "wal_sync_method",
                "shared_buffers",
                "server_version",
                "data_directory",
            ]
            return {n: await conn.fetchval(f"SHOW {n}") for n in names}
        finally:
            await conn.close()

    def check_durable(self) -> dict[str, str]:
        got: dict[str, str] = asyncio.run(self.settings())
        wrong = {k: got[k] for k, v in DURABLE.items() if got[k] != v}
        if wrong:
            raise SystemExit(f"PostgreSQL is not running with the durable settings: {wrong}")
        return got


def pg_cpu_seconds(postmaster: int) -> float:
    """CPU of the postmaster and every process it started (backends, WAL writer, ...)."""
    total = 0.0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            fields = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(d) == postmaster or int(fields[1]) == postmaster:
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _dt(value: str | None) -> datetime | None:
    # bench/context.py's ts() text (naive UTC, SQLite's storage format) -> an aware datetime.
    return None if value is None else datetime.fromisoformat(value).replace(tzinfo=UTC)


def pg_entry(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return (*row[:8], _dt(row[8]), _dt(row[9]), row[10])


def pg_event(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return (*row[:7], _dt(row[7]), _dt(row[8]), _dt(row[9]), row[10])


# ---------------------------------------------------------------------------- setup


@dataclass
class Tenant:
    backend: str
    id: str
    key: str
    path: Path | None = None  # SQLite file
    schema: str | None = None  # PostgreSQL schema


class Backends:
    """Both backends' settings: a SQLite data dir and a PostgreSQL database."""

    def __init__(self, work: Path, pg_url: str) -> None:
        self.work = work
        self.pg_url = pg_url
        self.dirs = {b: work / f"data-{b}" for b in BACKENDS}
        for d in self.dirs.values():
            d.mkdir(parents=True, exist_ok=True)

    def settings(self, backend: str) -> Settings:
        if backend == "sqlite":
            return Settings(_env_file=None, data_dir=self.dirs[backend])
        return Settings(_env_file=None, data_dir=self.dirs[backend], database_url=self.pg_url)

    def server_env(self, backend: str) -> dict[str, str]:
        return {} if backend == "sqlite" else {"JET_DATABASE_URL": self.pg_url}

    async def container(self, backend: str) -> Container:
        return await build(self.settings(backend))

    async def new_tenant(self, backend: str, name: str) -> Tenant:
        c = await self.container(backend)
        try:
            t, key = await tenant_service.create_tenant(c.control, c.tenants, name)
            if backend == "sqlite":
                return Tenant(backend, t.id, key.secret, path=c.tenants.path(t.id))
            return Tenant(backend, t.id, key.secret, schema=postgres.tenant_schema(t.id))
        finally:
            await c.aclose()

    async def pair(self, name: str) -> dict[str, Tenant]:
        stamp = time.time_ns()
        return {b: await self.new_tenant(b, f"{name}-{stamp}") for b in BACKENDS}


class Sinks:
    """Writes the same rows into a SQLite tenant file and a PostgreSQL tenant schema."""

    def __init__(self, sqlite_path: Path, pg: asyncpg.Connection, schema: str) -> None:
        self.lite = sqlite3.connect(sqlite_path, isolation_level=None)
        self.lite.execute("PRAGMA journal_mode = WAL")
        self.lite.execute("PRAGMA synchronous = OFF")  # a bulk load, not a durability test
        self.pg = pg
        self.schema = schema
        self.seconds = {"sqlite": 0.0, "postgresql": 0.0}

    async def put(self, table: str, cols: list[str], rows: list[tuple[Any, ...]]) -> None:
        t0 = time.perf_counter()
        sql = f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
        self.lite.execute("BEGIN")
        if table == "memory_events":
            cb.insert_events(self.lite, sql, rows)  # indexed as the server's writer does
        else:
            self.lite.executemany(sql, rows)  # entries: the FTS5 triggers index them
        self.lite.execute("COMMIT")
        t1 = time.perf_counter()
        conv = pg_entry if table == "memory_entries" else pg_event
        await self.pg.copy_records_to_table(
            table, schema_name=self.schema, columns=cols, records=[conv(r) for r in rows]
        )
        self.seconds["sqlite"] += t1 - t0
        self.seconds["postgresql"] += time.perf_counter() - t1

    async def finish(self) -> None:
        t0 = time.perf_counter()
        self.lite.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.lite.close()
        t1 = time.perf_counter()
        # What autovacuum does after a bulk load: planner statistics and the visibility map.
        for table in ("memory_entries", "memory_events"):
            await self.pg.execute(f'VACUUM ANALYZE "{self.schema}".{table}')
        self.seconds["sqlite"] += t1 - t0
        self.seconds["postgresql"] += time.perf_counter() - t1


def chunks(rows: Iterator[tuple[Any, ...]]) -> Iterator[list[tuple[Any, ...]]]:
    while chunk := list(itertools.islice(rows, CHUNK)):
        yield chunk


async def seed_search(backends: Backends, tenants: dict[str, Tenant], n: int) -> dict[str, float]:
    """bench/data.py's search entries (n, 10 scopes, planted rare words) into both."""
    pg = await asyncpg.connect(pgs.asyncpg_dsn(backends.pg_url))
    try:
        sinks = Sinks(tenants["sqlite"].path, pg, tenants["postgresql"].schema)  # type: ignore[arg-type]
        for chunk in chunks(bench_data.search_entry_rows(n, random.Random(42))):
            await sinks.put("memory_entries", ENTRY_COLS, chunk)
        await sinks.finish()
        return sinks.seconds
    finally:
        await pg.close()


async def seed_events(
    backends: Backends, tenants: dict[str, Tenant], n_events: int, n_entries: int
) -> dict[str, float]:
    """bench/context.py's generate()'s data (same generator, same seed) into both."""
    pg = await asyncpg.connect(pgs.asyncpg_dsn(backends.pg_url))
    try:
        sinks = Sinks(tenants["sqlite"].path, pg, tenants["postgresql"].schema)  # type: ignore[arg-type]
        rng = random.Random(42)
        summary_of: dict[Any, str] = {}
        for chunk in chunks(cb.entry_rows(n_entries, rng)):
            await sinks.put("memory_entries", ENTRY_COLS, chunk)
            summary_of.update({(r[1], r[2]): r[0] for r in chunk})
        done = 0
        for chunk in chunks(cb.event_rows(n_events, rng, summary_of)):
            await sinks.put("memory_events", EVENT_COLS, chunk)
            done += len(chunk)
            if done % 200_000 == 0:
                print(f"  {done:,} events", flush=True)
        await sinks.finish()
        return sinks.seconds
    finally:
        await pg.close()


# ------------------------------------------------------------------------- results


@dataclass
class Cmp:
    workload: str
    metric: str
    unit: str
    sqlite: float
    postgresql: float
    command: str
    better: str = "lower"  # which way is better for this metric
    notes: str = ""

    @property
    def ratio(self) -> float:
        return self.postgresql / self.sqlite if self.sqlite else float("nan")


def table(rows: Sequence[Cmp]) -> str:
    head = ["workload", "metric", "SQLite", "PostgreSQL", "PG/SQLite", "command"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ratio = "-" if r.ratio != r.ratio else f"{r.ratio:.2f}x"
        out.append(
            f"| {r.workload} | {r.metric} ({r.better} is better) | {fmt(r.sqlite)} {r.unit} "
            f"| {fmt(r.postgresql)} {r.unit} | {ratio} | `{r.command}` |"
        )
    return "\n".join(out)


# --------------------------------------------------------------------------- bench


def gql(key: str, query: str, variables: dict[str, Any], tag: str) -> dict[str, Any]:
    return {
        "method": "POST",
        "path": "/graphql",
        "tag": tag,
        "headers": {"authorization": f"Bearer {key}", "content-type": "application/json"},
        "body": json.dumps({"query": query, "variables": variables}),
    }


class Bench:
    def __init__(self, args: argparse.Namespace, pg: DurablePostgres, pg_url: str) -> None:
        self.a = args
        self.pg = pg
        self.stamp = time.strftime("%Y%m%d-%H%M%S")
        self.work = RESULTS / f"backends-{self.stamp}"
        self.work.mkdir(parents=True, exist_ok=True)
        self.backends = Backends(self.work, pg_url)
        self.rows: list[Cmp] = []
        self.details: dict[str, Any] = {}

    def command(self, name: str, *extra: str) -> str:
        parts = [CMD, "--only", name, *extra]
        if self.a.quick:
            parts.append("--quick")
        return " ".join(parts)

    def servers(self, name: str, **env: str) -> dict[str, Server]:
        return {
            b: Server(
                data_dir=self.backends.dirs[b],
                log_path=self.work / f"server-{name}-{b}.log",
                env={**self.backends.server_env(b), **env},
            )
            for b in BACKENDS
        }

    @contextmanager
    def running(self, name: str, **env: str) -> Iterator[dict[str, Server]]:
        """Both backends' servers for workload `name`, started, and stopped by PID after."""
        srvs = self.servers(name, **env)
        try:
            for s in srvs.values():
                s.start()
            yield srvs
        finally:
            for s in srvs.values():
                s.stop()

    def settle(self, srv: Server, timeout: float = 60.0) -> None:
        """Wait until the server and PostgreSQL are idle again: requests still in flight
        when a load generator stops must not run into the next backend's round."""
        deadline = time.monotonic() + timeout
        last = self.cpu(srv)
        while time.monotonic() < deadline:
            time.sleep(0.25)
            now = self.cpu(srv)
            if (now[0] - last[0]) + (now[1] - last[1]) < 0.025:  # under 10% of a core
                return
            last = now

    def cpu(self, srv: Server) -> tuple[float, float]:
        assert self.pg.pid is not None
        return proc_cpu_seconds(srv.pid), pg_cpu_seconds(self.pg.pid)

    # ----------------------------------------------------------------- appends

    def appends(self, name: str, batch: int, connections: int) -> None:
        a = self.a
        print(
            f"\n== {name}: {'single appends' if batch == 1 else f'batches of {batch}'},"
            f" {connections} clients ==",
            flush=True,
        )
        tenants = asyncio.run(self.backends.pair(f"bench-{name}"))
        # A batch request takes seconds at 8 clients: longer rounds count more of them.
        seconds = a.seconds if batch == 1 else 2 * a.seconds
        modes = [
            ("graphql", "append_gql" if batch == 1 else "batch_gql", "/graphql"),
            ("rest", "append_rest" if batch == 1 else "batch_rest", "/memory/events"),
        ]
        res: dict[tuple[str, str], list[dict[str, Any]]] = {}
        acks: dict[str, dict[str, Path]] = {b: {} for b in BACKENDS}
        with self.running(name) as srvs:
            for b in BACKENDS:
                for surface, mode, path in modes:
                    run_wrk(
                        srvs[b].url,
                        mode=mode,
                        key=tenants[b].key,
                        path=path,
                        seconds=1,
                        connections=connections,
                        run_id=f"warm{surface}",
                        batch=batch,
                    )
                    self.settle(srvs[b])
            for i in range(a.rounds):
                for surface, mode, path in modes:
                    for b in BACKENDS if i % 2 == 0 else BACKENDS[::-1]:
                        run_id = f"r{self.stamp.replace('-', '')}{b[0]}{surface}{i}"
                        acks[b][run_id] = self.work / f"acks-{name}-{run_id}"
                        cpu0 = self.cpu(srvs[b])
                        r = run_wrk(
                            srvs[b].url,
                            mode=mode,
                            key=tenants[b].key,
                            path=path,
                            seconds=seconds,
                            connections=connections,
                            run_id=run_id,
                            ack_dir=acks[b][run_id],
                            batch=batch,
                        )
                        cpu1 = self.cpu(srvs[b])
                        self.settle(srvs[b])
                        r["events_per_s"] = r["echoed"] / (r["duration_us"] / 1e6)
                        r["app_cpu_us_per_event"] = (cpu1[0] - cpu0[0]) * 1e6 / max(1, r["echoed"])
                        r["pg_cpu_us_per_event"] = (cpu1[1] - cpu0[1]) * 1e6 / max(1, r["echoed"])
                        res.setdefault((b, surface), []).append(r)
                        print(
                            f"  {b:<10} {surface:<7} #{i + 1} {r['events_per_s']:>8,.0f} events/s"
                            f"  p50 {r['lat_p50_us'] / 1000:6.1f}"
                            f"  p99 {r['lat_p99_us'] / 1000:6.1f}"
                            f" ms  bad {r['bad']}  app CPU {r['app_cpu_us_per_event']:.0f}"
                            f" us/event, postgres CPU {r['pg_cpu_us_per_event']:.0f} us/event",
                            flush=True,
                        )
                        if r["bad"]:
                            print(f"    first bad response: {r['bad_sample'][:200]}", flush=True)
        verify = {b: asyncio.run(self.verify(tenants[b], acks[b], batch)) for b in BACKENDS}
        cmd = self.command(name)
        for surface in ("graphql", "rest"):
            label = {
                (1, "graphql"): "appendMemoryEvent",
                (1, "rest"): "POST /memory/events",
            }.get(
                (batch, surface),
                ("appendMemoryEvents" if surface == "graphql" else "POST /memory/events")
                + f" [{batch}]",
            )
            rs = {b: res[(b, surface)] for b in BACKENDS}

            def med(key: str, scale: float = 1.0, rs: dict[str, Any] = rs) -> dict[str, float]:
                return {b: median([r[key] for r in rs[b]]) * scale for b in BACKENDS}

            rate = med("events_per_s")
            notes = "; ".join(
                f"{b}: app CPU {med('app_cpu_us_per_event')[b]:.0f} us/event"
                + (
                    f", postgres CPU {med('pg_cpu_us_per_event')[b]:.0f} us/event"
                    if b == "postgresql"
                    else ""
                )
                + f", {verify[b]['events_per_group']:.1f} events per commit"
                for b in BACKENDS
            )
            self.rows.append(
                Cmp(
                    name,
                    f"{label} events/s ({connections} clients)",
                    "/s",
                    rate["sqlite"],
                    rate["postgresql"],
                    cmd,
                    "higher",
                    notes,
                )
            )
            if batch == 1:
                for p, key in (("p50", "lat_p50_us"), ("p99", "lat_p99_us")):
                    v = med(key, 1 / 1000)
                    self.rows.append(
                        Cmp(name, f"{label} {p}", "ms", v["sqlite"], v["postgresql"], cmd)
                    )
        bad = {
            b: verify[b]["lost"] + verify[b]["duplicated"] + verify[b]["partial"] for b in BACKENDS
        }
        checked = {b: verify[b]["acked_events"] for b in BACKENDS}
        self.rows.append(
            Cmp(
                name,
                "acknowledged events lost + duplicated",
                "events",
                bad["sqlite"],
                bad["postgresql"],
                cmd,
                "lower",
                f"checked {checked['sqlite']:,} (SQLite) and {checked['postgresql']:,} (PostgreSQL)"
                " acknowledged events by sourceRef after the servers stopped",
            )
        )
        self.details[name] = {
            "results": {f"{b}/{s}": v for (b, s), v in res.items()},
            "verify": verify,
        }

    async def stored(self, t: Tenant) -> list[tuple[str, Any]]:
        if t.backend == "sqlite":
            assert t.path is not None
            with sqlite3.connect(t.path) as conn:
                return list(
                    conn.execute(
                        "SELECT source_ref, recorded_at FROM memory_events WHERE source = 'bench'"
                    )
                )
        conn = await asyncpg.connect(pgs.asyncpg_dsn(self.backends.pg_url))
        try:
            rows = await conn.fetch(
                f'SELECT source_ref, recorded_at FROM "{t.schema}".memory_events'
                " WHERE source = 'bench'"
            )
            return [(r[0], r[1]) for r in rows]
        finally:
            await conn.close()

    async def verify(self, t: Tenant, runs: dict[str, Path], batch: int) -> dict[str, Any]:
        """Every acknowledged request's events stored exactly once (by sourceRef)."""
        by_ref: dict[str, list[Any]] = {}
        for ref, recorded in await self.stored(t):
            by_ref.setdefault(ref, []).append(recorded)
        out: dict[str, Any] = {
            "acked_events": 0,
            "stored_events": 0,
            "lost": 0,
            "duplicated": 0,
            "partial": 0,
            "unacked_stored": 0,
            "groups": 0,
        }
        for run_id, ack_dir in runs.items():
            acked = read_acks(ack_dir)
            mine = {r: v for r, v in by_ref.items() if r.startswith(run_id + "-")}
            out["acked_events"] += sum(acked.values())
            out["stored_events"] += sum(len(v) for v in mine.values())
            out["lost"] += sum(1 for r in acked if r not in mine)
            out["duplicated"] += sum(1 for v in mine.values() if len(v) > batch)
            out["partial"] += sum(1 for v in mine.values() if len(v) < batch)
            out["unacked_stored"] += len(set(mine) - set(acked))
            out["groups"] += len({x for v in mine.values() for x in v})
        out["events_per_group"] = out["stored_events"] / max(1, out["groups"])
        print(
            f"  verify {t.backend}: acked {out['acked_events']:,} stored "
            f"{out['stored_events']:,} lost {out['lost']} duplicated {out['duplicated']} "
            f"partial {out['partial']} (in flight at the end: {out['unacked_stored']}); "
            f"{out['events_per_group']:.1f} events per commit",
            flush=True,
        )
        return out

    # ------------------------------------------------------------------ reads

    def phases(
        self,
        name: str,
        requests: dict[str, list[dict[str, Any]]],
        concurrency: int,
        srvs: dict[str, Server],
        *,
        check: str = "graphql",
    ) -> dict[str, dict[str, Any]]:
        """Rounds of `seconds` per backend, alternating; samples pooled per backend."""
        out: dict[str, dict[str, Any]] = {
            b: {"samples": [], "elapsed": 0.0, "app_cpu": 0.0, "pg_cpu": 0.0} for b in BACKENDS
        }
        for i in range(self.a.rounds):
            for b in BACKENDS if i % 2 == 0 else BACKENDS[::-1]:
                spec = {
                    "base_url": srvs[b].url,
                    "concurrency": concurrency,
                    "order": "cycle",
                    "duration": self.a.seconds,
                    "warmup": 1,
                    "check": check,
                    "requests": requests[b],
                }
                cpu0 = self.cpu(srvs[b])
                r = run_load(spec, self.work / f"{name}-{b}-{i}")
                cpu1 = self.cpu(srvs[b])
                self.settle(srvs[b])
                o = out[b]
                o["samples"] += r["samples"]
                o["elapsed"] += r["elapsed"]
                o["app_cpu"] += cpu1[0] - cpu0[0]
                o["pg_cpu"] += cpu1[1] - cpu0[1]
                e2e = [x[3] for x in r["samples"]]
                bad = sum(1 for x in r["samples"] if not x[2])
                print(
                    f"  {b:<10} #{i + 1} {len(e2e):>6,} req {len(e2e) / r['elapsed']:>6,.0f}/s"
                    f"  p50 {pct(e2e, 50):6.1f}  p95 {pct(e2e, 95):6.1f} ms  bad {bad}",
                    flush=True,
                )
                if bad:
                    print(f"    first bad response: {r['bad_sample'][:300]}", flush=True)
        return out

    def latency_rows(
        self, workload: str, metric: str, ms: dict[str, list[float]], cmd: str, note: str
    ) -> None:
        """The p50 and p95 rows of latencies `ms` per backend; `metric` has a `{p}` for the
        percentile, and `note` goes on the p95 row."""
        for p in (50, 95):
            self.rows.append(
                Cmp(
                    workload,
                    metric.format(p=p),
                    "ms",
                    pct(ms["sqlite"], p),
                    pct(ms["postgresql"], p),
                    cmd,
                    "lower",
                    note if p == 95 else "",
                )
            )

    def cpu_note(self, out: dict[str, dict[str, Any]]) -> str:
        parts = []
        for b in BACKENDS:
            n = max(1, len(out[b]["samples"]))
            s = (
                f"{b}: {n / out[b]['elapsed']:.0f} req/s, app CPU "
                f"{out[b]['app_cpu'] * 1000 / n:.2f} ms/req"
            )
            if b == "postgresql":
                s += f", postgres CPU {out[b]['pg_cpu'] * 1000 / n:.2f} ms/req"
            parts.append(s)
        return "; ".join(parts)

    def search(self) -> None:
        a = self.a
        print(f"\n== search: memoryEntries top 20, {a.entries:,} entries, 10 scopes ==", flush=True)
        tenants = asyncio.run(self.backends.pair(f"bench-search-{a.entries}"))
        t0 = time.perf_counter()
        seed = asyncio.run(seed_search(self.backends, tenants, a.entries))
        print(
            f"  seeded in {time.perf_counter() - t0:.0f}s (SQLite {seed['sqlite']:.0f}s, "
            f"PostgreSQL {seed['postgresql']:.0f}s incl. VACUUM ANALYZE)",
            flush=True,
        )
        query = bench_data.SEARCH_QUERY
        cases = bench_data.search_cases()
        requests = {
            b: [
                gql(
                    tenants[b].key,
                    query,
                    {"f": {"search": q, "scope": s.upper(), "scopeRef": r}},
                    tag,
                )
                for tag, q, s, r in cases
            ]
            for b in BACKENDS
        }
        raw = asyncio.run(self.raw_search(tenants, cases))
        # The search page cache off: the backends' full-text search is what is compared.
        with self.running("search", JET_SEARCH_CACHE_PAGES="0") as srvs:
            out = self.phases("search", requests, 16, srvs)
        cmd = self.command("search") + ("" if a.entries == 20_000 else f" --entries {a.entries}")
        for tag in ("common", "rare"):
            e2e = {b: [x[3] for x in out[b]["samples"] if x[0] == tag] for b in BACKENDS}
            hits = {
                b: statistics.fmean([x[5] for x in out[b]["samples"] if x[0] == tag] or [0])
                for b in BACKENDS
            }
            self.latency_rows(
                "search",
                f"{tag} terms p{{p}} (16 clients)",
                e2e,
                cmd,
                f"the query alone (1 connection, no HTTP): SQLite median "
                f"{median(raw['sqlite'][tag]):.2f} ms, PostgreSQL "
                f"{median(raw['postgresql'][tag]):.2f} ms; mean hits per page "
                f"{hits['sqlite']:.1f} vs {hits['postgresql']:.1f}; " + self.cpu_note(out),
            )
        self.details["search"] = {"seed_seconds": seed, "raw": raw}

    async def raw_search(
        self, tenants: dict[str, Tenant], cases: list[tuple[str, str, str, str | None]]
    ) -> dict[str, dict[str, list[float]]]:
        """The service's own SELECT (entry_search.search_statement, the first page's, which
        reads the high-water mark itself), run alone in-process on each backend: the
        database's share of a search."""
        out: dict[str, dict[str, list[float]]] = {}
        for b in BACKENDS:
            c = await self.backends.container(b)
            out[b] = {"common": [], "rare": []}
            try:
                async with c.tenants.lease(tenants[b].id) as db:
                    eng: AsyncEngine = db.engine
                    async with eng.connect() as conn:
                        target = spec.Target.of(conn)
                        for rep in range(2):
                            for tag, q, scope, ref in cases:
                                s = spec.Search(analysis.words(q, "q"), scope=scope, scope_ref=ref)
                                flt = EntryFilter(search=q, scope=Scope(scope), scope_ref=ref)
                                stmt = keywords.search_statement(
                                    target.dialect, flt, s, cursor=False
                                )
                                values = fulltext.params(target, s)
                                values.update(page_offset=0, page_limit=21)
                                t0 = time.perf_counter()
                                (await conn.execute(stmt, values)).fetchall()
                                if rep:
                                    out[b][tag].append((time.perf_counter() - t0) * 1000)
                            await conn.rollback()
            finally:
                await c.aclose()
            print(
                f"  raw query {b:<10} common median {median(out[b]['common']):6.2f} p95 "
                f"{pct(out[b]['common'], 95):6.2f} | rare median {median(out[b]['rare']):6.2f}"
                f" p95 {pct(out[b]['rare'], 95):6.2f} ms",
                flush=True,
            )
        return out

    def events(self) -> None:
        a = self.a
        n_entries = max(1000, a.events // 100)
        print(f"\n== events: memoryEvents by scope, {a.events:,} events ==", flush=True)
        tenants = asyncio.run(self.backends.pair(f"bench-events-{a.events}"))
        t0 = time.perf_counter()
        seed = asyncio.run(seed_events(self.backends, tenants, a.events, n_entries))
        print(
            f"  seeded in {time.perf_counter() - t0:.0f}s (SQLite {seed['sqlite']:.0f}s, "
            f"PostgreSQL {seed['postgresql']:.0f}s incl. VACUUM ANALYZE)",
            flush=True,
        )
        query = (
            "query($f: MemoryEventFilter!) { memoryEvents(filter: $f, first: 50) { edges {"
            " cursor node { id scope scopeRef kind body source sourceRef occurredAt"
            " compressedAt } } pageInfo { hasNextPage endCursor } } }"
        )
        refs = cb.CLIENTS[:: max(1, len(cb.CLIENTS) // 40)]
        requests = {
            b: [
                gql(tenants[b].key, query, {"f": {"scope": "ENTITY", "scopeRef": r}}, "scope")
                for r in refs
            ]
            for b in BACKENDS
        }
        raw = asyncio.run(self.raw_events(tenants, refs))
        with self.running("events") as srvs:
            out = self.phases("events", requests, 16, srvs)
        cmd = self.command("events") + ("" if a.events == 200_000 else f" --events {a.events}")
        e2e = {b: [x[3] for x in out[b]["samples"]] for b in BACKENDS}
        self.latency_rows(
            "events",
            "memoryEvents(scope, scopeRef) first 50 p{p} (16 clients)",
            e2e,
            cmd,
            f"the SELECT alone: SQLite median {median(raw['sqlite']):.2f} ms, "
            f"PostgreSQL {median(raw['postgresql']):.2f} ms; " + self.cpu_note(out),
        )
        self.details["events"] = {"seed_seconds": seed, "raw": raw}

    async def raw_events(self, tenants: dict[str, Tenant], refs: list[str]) -> dict[str, Any]:
        out: dict[str, list[float]] = {"sqlite": [], "postgresql": []}
        assert tenants["sqlite"].path is not None
        with sqlite3.connect(tenants["sqlite"].path) as lite:
            for rep in range(3):
                for r in refs:
                    t0 = time.perf_counter()
                    lite.execute(bench_data.EVENTS_SQL, ("entity", r, 51)).fetchall()
                    if rep:
                        out["sqlite"].append((time.perf_counter() - t0) * 1000)
        pg = await asyncpg.connect(pgs.asyncpg_dsn(self.backends.pg_url))
        try:
            sql = (
                bench_data.EVENTS_SQL.replace(
                    "FROM memory_events", f'FROM "{tenants["postgresql"].schema}".memory_events'
                )
                .replace("?", "$1", 1)
                .replace("?", "$2", 1)
                .replace("?", "$3", 1)
            )
            stmt = await pg.prepare(sql)
            for rep in range(3):
                for r in refs:
                    t0 = time.perf_counter()
                    await stmt.fetch("entity", r, 51)
                    if rep:
                        out["postgresql"].append((time.perf_counter() - t0) * 1000)
        finally:
            await pg.close()
        return out

    # ---------------------------------------------------------------- tenants

    def tenants(self) -> None:
        a = self.a
        print(f"\n== tenants: first request to {a.tenants} tenants not yet open ==", flush=True)
        made: dict[str, list[Tenant]] = {}
        create_ms: dict[str, list[float]] = {}
        for b in BACKENDS:
            made[b], create_ms[b] = asyncio.run(self.many_tenants(b, a.tenants))
            print(
                f"  {b:<10} created {a.tenants} tenants: median {median(create_ms[b]):.0f} ms,"
                f" p95 {pct(create_ms[b], 95):.0f} ms each (services, migration included)",
                flush=True,
            )
        cost = asyncio.run(self.tenant_cost(made))
        query = "{ memoryEvents(first: 5) { edges { node { id } } } }"
        reqs = {b: [gql(t.key, query, {}, "first") for t in made[b]] for b in BACKENDS}
        first: dict[str, list[float]] = {b: [] for b in BACKENDS}
        warm: dict[str, list[float]] = {b: [] for b in BACKENDS}
        with self.running("tenants") as srvs:
            n_rounds = max(1, a.rounds)
            per = (len(reqs["sqlite"]) - 1) // n_rounds
            for i in range(n_rounds):
                for b in BACKENDS if i % 2 == 0 else BACKENDS[::-1]:
                    part = reqs[b][1 + i * per : 1 + (i + 1) * per]
                    spec = {
                        "base_url": srvs[b].url,
                        "concurrency": 1,
                        "order": "once",
                        "requests": part,
                        "check": "graphql",
                    }
                    r = run_load(spec, self.work / f"tenants-{b}-{i}")
                    first[b] += [x[3] for x in r["samples"]]
                    # The same request to a tenant already open: the first tenant, warmed.
                    spec = {
                        "base_url": srvs[b].url,
                        "concurrency": 1,
                        "order": "cycle",
                        "duration": min(a.seconds, 2),
                        "warmup": 0.5,
                        "check": "graphql",
                        "requests": reqs[b][:1],
                    }
                    w = run_load(spec, self.work / f"tenants-warm-{b}-{i}")
                    warm[b] += [x[3] for x in w["samples"]]
                    bad = sum(1 for x in r["samples"] + w["samples"] if not x[2])
                    print(
                        f"  {b:<10} #{i + 1} first requests p50 "
                        f"{pct([x[3] for x in r['samples']], 50):.1f} p95 "
                        f"{pct([x[3] for x in r['samples']], 95):.1f} ms; open tenant p50 "
                        f"{pct([x[3] for x in w['samples']], 50):.2f} ms; bad {bad}",
                        flush=True,
                    )
        cmd = self.command("tenants") + ("" if a.tenants == 300 else f" --tenants {a.tenants}")
        self.latency_rows(
            "tenants",
            "first request to a tenant not yet open p{p} (1 client)",
            first,
            cmd,
            f"{len(first['sqlite'])} tenants each; the same request to an open tenant: "
            f"p50 {pct(warm['sqlite'], 50):.2f} ms (SQLite), "
            f"{pct(warm['postgresql'], 50):.2f} ms (PostgreSQL)",
        )
        self.rows.append(
            Cmp(
                "tenants",
                "create a tenant (services: control rows + migration), median",
                "ms",
                median(create_ms["sqlite"]),
                median(create_ms["postgresql"]),
                cmd,
                "lower",
                f"an empty migrated tenant: SQLite {cost['sqlite_bytes'] / 1024:.0f} KiB file; "
                f"PostgreSQL schema {cost['pg_bytes'] / 1024:.0f} KiB in {cost['pg_relations']} "
                f"relations ({cost['pg_catalog_rows']} pg_class rows, "
                f"{cost['pg_files']} files on disk)",
            )
        )
        self.details["tenants"] = {"create_ms": create_ms, "cost": cost}

    async def many_tenants(self, backend: str, n: int) -> tuple[list[Tenant], list[float]]:
        c = await self.backends.container(backend)
        out: list[Tenant] = []
        times: list[float] = []
        stamp = time.time_ns()
        try:
            for i in range(n):
                t0 = time.perf_counter()
                t, key = await tenant_service.create_tenant(
                    c.control, c.tenants, f"bench-many-{stamp}-{i}"
                )
                times.append((time.perf_counter() - t0) * 1000)
                out.append(
                    Tenant(
                        backend,
                        t.id,
                        key.secret,
                        path=c.tenants.path(t.id) if backend == "sqlite" else None,
                        schema=postgres.tenant_schema(t.id),
                    )
                )
        finally:
            await c.aclose()
        return out, times

    async def tenant_cost(self, made: dict[str, list[Tenant]]) -> dict[str, Any]:
        path = made["sqlite"][-1].path
        assert path is not None
        lite = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
        pg = await asyncpg.connect(pgs.asyncpg_dsn(self.backends.pg_url))
        try:
            schema = made["postgresql"][-1].schema
            row = await pg.fetchrow(
                "SELECT count(*) AS n, coalesce(sum(pg_relation_size(c.oid, 'main')"
                " + pg_relation_size(c.oid, 'fsm') + pg_relation_size(c.oid, 'vm')"
                " + pg_relation_size(c.oid, 'init')), 0) AS bytes,"
                " count(*) FILTER (WHERE c.relkind IN ('r', 'i', 't', 'S')) AS rels,"
                " count(*) FILTER (WHERE c.relfilenode <> 0) AS files"
                " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = $1",
                schema,
            )
        finally:
            await pg.close()
        return {
            "sqlite_bytes": lite,
            "pg_bytes": int(row["bytes"]),
            "pg_relations": row["rels"],
            "pg_catalog_rows": row["n"],
            "pg_files": row["files"],
        }


# ------------------------------------------------------------------------- ranking


def kendall_tau(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Kendall tau-a over the ids both lists hold (their relative order), None below 2."""
    common = [x for x in a if x in set(b)]
    if len(common) < 2:
        return None
    pos = {x: i for i, x in enumerate(b)}
    conc = disc = 0
    for i in range(len(common)):
        for j in range(i + 1, len(common)):
            if pos[common[i]] < pos[common[j]]:
                conc += 1
            else:
                disc += 1
    return (conc - disc) / (conc + disc)


PROBES: list[tuple[str, str, list[str]]] = [
    # (title, summary, questions): tokenizer and stemmer differences
    (
        "Crème brûlée launch at Café Müller",
        "Dessert campaign for the café.",
        ["creme", "cafe", "muller", "café", "müller"],
    ),
    (
        "Organisation of the e-mail follow-ups",
        "Follow-up emails after each webinar.",
        ["organization", "organisation", "email", "e-mail", "followup", "follow"],
    ),
    (
        "Retargeting lookalikes generously funded",
        "Running re-targeting with generous caps.",
        ["retarget", "retargeted", "generous", "generously", "run", "ran", "lookalike"],
    ),
    (
        "Quarterly reporting for analytics",
        "Analyses of the quarter's analytic reports.",
        ["analysis", "analyse", "analyze", "analytical", "report", "quart", "ana"],
    ),
    (
        "Contact dana.whitfield@acme-outdoor.com",
        "Tiers at https://acme-outdoor.com/pricing.",
        ["dana", "whitfield", "acme", "outdoor", "pricing", "tiers"],
    ),
    (
        "ROAS 4.0 target and 3x CPA",
        "Target for 2026-Q3: ROAS 4.0, CPA $31.40, v2 pixel.",
        ["4.0", "4", "31.40", "q3", "2026", "v2", "3x"],
    ),
]


async def ranking(pg_url: str, work: Path, n: int) -> dict[str, Any]:
    backends = Backends(work, pg_url)
    tenants = await backends.pair(f"bench-ranking-{n}")
    await seed_search(backends, tenants, n)
    questions = bench_data.COMMON_QUERIES + bench_data.RARE_QUERIES[:10]  # 30
    scopes: list[tuple[str, str | None] | None] = [*bench_data.SEARCH_SCOPES, None]
    tops: dict[str, dict[tuple[Any, ...], list[str]]] = {}
    for b in BACKENDS:
        c = await backends.container(b)
        tops[b] = {}
        try:
            async with c.tenants.lease(tenants[b].id) as db:
                for q in questions:
                    for sc in scopes:
                        flt = (
                            EntryFilter(search=q)
                            if sc is None
                            else EntryFilter(search=q, scope=Scope(sc[0]), scope_ref=sc[1])
                        )
                        page = await entries.list_entries(db, flt, first=50, after=None)
                        tops[b][(q, sc)] = [e.node.id for e in page.edges]
        finally:
            await c.aclose()
    per: list[dict[str, Any]] = []
    for key in tops["sqlite"]:
        lite, pg = tops["sqlite"][key], tops["postgresql"][key]
        tau = kendall_tau(lite[:10], pg[:10])
        per.append(
            {
                "question": key[0],
                "scope": key[1],
                "rare": key[0] in bench_data.RARE_QUERIES,
                "sqlite_hits": len(lite),
                "pg_hits": len(pg),
                # Both empty: they agree, and the case is left out of the means (see "empty").
                "empty": not lite and not pg,
                "overlap10": len(set(lite[:10]) & set(pg[:10]))
                / max(1, len(lite[:10]), len(pg[:10])),
                "tau10": tau,
                "top1": bool(lite and pg and lite[0] == pg[0]),
                "recall10in50": len(set(lite[:10]) & set(pg)) / max(1, len(lite[:10])),
            }
        )

    def summary(every: list[dict[str, Any]]) -> dict[str, Any]:
        rows = [r for r in every if not r["empty"]] or every
        taus = [r["tau10"] for r in rows if r["tau10"] is not None]
        return {
            "cases": len(rows),
            "both_empty": sum(r["empty"] for r in every),
            "overlap10_mean": statistics.fmean(r["overlap10"] for r in rows),
            "overlap10_median": statistics.median(r["overlap10"] for r in rows),
            "tau10_mean": statistics.fmean(taus) if taus else None,
            "tau10_cases": len(taus),
            "top1_agreement": statistics.fmean(r["top1"] for r in rows),
            "recall10_in_pg50_mean": statistics.fmean(r["recall10in50"] for r in rows),
            "same_hit_count": statistics.fmean(r["sqlite_hits"] == r["pg_hits"] for r in rows),
        }

    result = {
        "entries": n,
        "questions": len(questions),
        "all": summary(per),
        "common": summary([r for r in per if not r["rare"]]),
        "rare": summary([r for r in per if r["rare"]]),
        "scoped": summary([r for r in per if r["scope"] is not None]),
        "unscoped": summary([r for r in per if r["scope"] is None]),
        "per_question": per,
        "probes": await probes(backends),
    }
    return result


async def probes(backends: Backends) -> list[dict[str, Any]]:
    """Which probe questions find which probe entry on each backend."""
    tenants = await backends.pair("bench-probes")
    found: dict[str, dict[str, bool]] = {b: {} for b in BACKENDS}
    for b in BACKENDS:
        c = await backends.container(b)
        try:
            async with c.tenants.lease(tenants[b].id) as db:
                made: dict[str, str] = {}
                for title, summary, _ in PROBES:
                    e = await entries.create_entry(
                        db,
                        EntryIn(
                            scope=Scope.INSTITUTIONAL,
                            scope_ref=None,
                            title=title,
                            summary=summary,
                            tags=[],
                            importance=3,
                            source=EntrySource.MANUAL,
                        ),
                    )
                    made[title] = e.id
                for title, _, qs in PROBES:
                    for q in qs:
                        page = await entries.list_entries(
                            db, EntryFilter(search=q), first=10, after=None
                        )
                        found[b][f"{title} | {q}"] = made[title] in {x.node.id for x in page.edges}
        finally:
            await c.aclose()
    return [
        {
            "entry": k.split(" | ")[0],
            "question": k.split(" | ")[1],
            "sqlite": found["sqlite"][k],
            "postgresql": found["postgresql"][k],
        }
        for k in found["sqlite"]
    ]


def print_ranking(r: dict[str, Any]) -> str:
    lines = [
        f"Ranking comparison: {r['entries']:,} entries (the same ids in both backends), "
        f"{r['questions']} questions x 10 scopes + no scope; the service's top 10 "
        "(entries.list_entries, filter.search)",
        "",
        "| cases | n (+ both empty) | overlap@10 mean (median) | Kendall tau, shared ids (n)"
        " | top-1 same | SQLite top 10 in PG top 50 | same number of hits (<= 50) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in ("all", "common", "rare", "scoped", "unscoped"):
        s = r[name]
        tau = "n/a" if s["tau10_mean"] is None else f"{s['tau10_mean']:.2f}"
        lines.append(
            f"| {name} | {s['cases']} (+{s['both_empty']}) "
            f"| {s['overlap10_mean']:.2f} ({s['overlap10_median']:.2f}) "
            f"| {tau} ({s['tau10_cases']}) | {s['top1_agreement']:.2f} "
            f"| {s['recall10_in_pg50_mean']:.2f} | {s['same_hit_count']:.2f} |"
        )
    lines += [
        "",
        "| probe entry | question | SQLite finds it | PostgreSQL finds it |",
        "|---|---|---|---|",
    ]
    for p in r["probes"]:
        mark = "" if p["sqlite"] == p["postgresql"] else " **differs**"
        lines.append(
            f"| {p['entry']} | `{p['question']}` | {'yes' if p['sqlite'] else 'no'} "
            f"| {'yes' if p['postgresql'] else 'no'}{mark} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------- main


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated workloads")
    p.add_argument("--quick", action="store_true", help="small sizes, short rounds (smoke run)")
    p.add_argument("--rounds", type=int, help="rounds per backend (default 3, quick 1)")
    p.add_argument("--seconds", type=float, help="seconds per round (default 5, quick 2)")
    p.add_argument("--entries", type=int, help="search entries (default 20,000, quick 2,000)")
    p.add_argument("--events", type=int, help="events (default 200,000, quick 20,000)")
    p.add_argument("--big", action="store_true", help="100,000 entries and 1,000,000 events")
    p.add_argument("--tenants", type=int, help="tenants first opened (default 300, quick 30)")
    p.add_argument("--ranking", action="store_true", help="compare search rankings instead")
    p.add_argument("--keep-data", action="store_true", help="keep the SQLite data dirs")
    a = p.parse_args()
    q = a.quick
    a.rounds = a.rounds or (1 if q else 3)
    a.seconds = a.seconds or (2.0 if q else 5.0)
    a.entries = a.entries or (2_000 if q else 100_000 if a.big else 20_000)
    a.events = a.events or (20_000 if q else 1_000_000 if a.big else 200_000)
    a.tenants = a.tenants or (30 if q else 300)
    only = [w.strip() for w in a.only.split(",") if w.strip()]
    if set(only) - set(WORKLOADS):
        p.error(f"unknown workloads {sorted(set(only) - set(WORKLOADS))}; from {WORKLOADS}")
    # The SQLite server must not inherit a PostgreSQL URL from this shell.
    os.environ.pop("JET_DATABASE_URL", None)

    started = time.strftime("%Y-%m-%d %H:%M:%S")
    load_before = load_note()
    pg = DurablePostgres(use_env=False)
    work: Path | None = None
    try:
        pg.start()
        got = pg.check_durable()
        print(
            f"{started}  {load_before}; code {git_state()}\nPostgreSQL {got['server_version']}"
            f" pid {pg.pid}: "
            + ", ".join(f"{k}={v}" for k, v in got.items() if k not in ("server_version",)),
            flush=True,
        )
        pg_url = asyncio.run(pgs.create_database(pg.url, "jet_bench"))
        if a.ranking:
            work = RESULTS / f"ranking-{time.strftime('%Y%m%d-%H%M%S')}"
            result = asyncio.run(ranking(pg_url, work, a.entries))
            text_out = print_ranking(result)
            print("\n" + text_out)
            RESULTS.mkdir(parents=True, exist_ok=True)
            (work / "ranking.json").write_text(json.dumps(result, indent=2, default=str))
            (work / "ranking.md").write_text(text_out + "\n")
            print(f"\nresults: {work}")
            return
        bench = Bench(a, pg, pg_url)
        work = bench.work
        run = {
            "append": lambda: bench.appends("append", 1, 64),
            "batch": lambda: bench.appends("batch", 500, 8),
            "search": bench.search,
            "events": bench.events,
            "tenants": bench.tenants,
        }
        for name in WORKLOADS:
            if name in only:
                run[name]()
    finally:
        pg.stop()
        if work is not None and not a.keep_data:
            for d in work.glob("data-*"):
                shutil.rmtree(d, ignore_errors=True)
    load_after = load_note()
    ended = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"\n{ended}  {load_after}\n")
    print(table(bench.rows))
    notes = [f"- {r.workload} / {r.metric}: {r.notes}" for r in bench.rows if r.notes]
    print("\n" + "\n".join(notes))
    extra = {
        "started": started,
        "ended": ended,
        "load_before": load_before,
        "load_after": load_after,
        "code": git_state(),
        "postgres": got,
        "args": {k: str(v) for k, v in vars(a).items()},
        "details": bench.details,
    }
    out = RESULTS / f"backends-{bench.stamp}.json"
    out.write_text(
        json.dumps({"rows": [asdict(r) for r in bench.rows], **extra}, indent=2, default=str)
    )
    (RESULTS / f"backends-{bench.stamp}.md").write_text(
        f"{started} → {ended}; {load_before} → {load_after}\n\n"
        + table(bench.rows)
        + "\n\n"
        + "\n".join(notes)
        + "\n"
    )
    print(f"\nresults: {out}")


if __name__ == "__main__":
    main()
