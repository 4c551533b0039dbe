"""Workload 5: memoryEvents by scope (first 50) on 1,000,000 events, 1 client (bench/http_load.py)
and 16 (wrk), GraphQL and REST, against the same SELECT by sqlite3.
`python -m bench.events [options of python -m bench]`."""

import sqlite3
import time

from bench import context as cb
from bench import data as bench_data
from bench.harness import Row, median, open_container, pct, run_async
from bench.runner import Run

QUERY = (
    "query($f: MemoryEventFilter!) { memoryEvents(filter: $f, first: 50) { edges {"
    " cursor node { id scope scopeRef kind body source sourceRef occurredAt"
    " compressedAt } } pageInfo { hasNextPage endCursor } } }"
)
REFS = cb.CLIENTS[:: max(1, len(cb.CLIENTS) // 40)]  # about 40 clients, every scope size


def run(b: Run) -> None:
    a = b.args
    n_entries = max(1000, a.events // 100)
    print(f"\n== 5. memoryEvents by scope, {a.events:,} events ==", flush=True)
    tenant_id, key = run_async(bench_data.events_tenant(b.data_dir, a.events, n_entries))
    container = run_async(open_container(b.data_dir))
    db_path = container.tenants.path(tenant_id)
    run_async(container.aclose())
    refs = REFS
    requests = [
        b.gql_request(key, QUERY, {"f": {"scope": "ENTITY", "scopeRef": r}}, "scope+ref")
        for r in refs
    ]
    conn = sqlite3.connect(db_path)
    raw: list[float] = []
    for rep in range(4):
        for r in refs:
            t0 = time.perf_counter()
            rows = conn.execute(bench_data.EVENTS_SQL, ("entity", r, 51)).fetchall()
            if rep:
                raw.append((time.perf_counter() - t0) * 1000)
    conn.close()
    print(
        f"  raw SELECT median {median(raw):6.2f}  p95 {pct(raw, 95):6.2f} ms ({len(rows)} rows)",
        flush=True,
    )
    rest = [
        b.rest_get(key, "/memory/events", {"scope": "entity", "scopeRef": r, "limit": 50}, "rest")
        for r in refs
    ]
    with b.server("events", JET_BENCH_SERVER_TIMING="1") as srv:
        c1 = b.load(srv, "events-c1", requests, 1, a.seconds, prof="events-c1")
        # 16 clients from wrk: a Python client (~0.4 ms of CPU a page) would take a
        # quarter of what the server needs from the same two CPUs.
        c16 = b.wrk_replay(
            srv, "events-c16", requests, 16, a.seconds, "replay_gql", prof="events-c16"
        )
        rest16 = b.wrk_replay(srv, "events-rest-c16", rest, 16, a.seconds, "replay_rest")
    p95 = c16["lat_p95_us"] / 1000
    raw_p95 = pct(raw, 95)
    b.rows.append(
        Row(
            "5 events",
            "memoryEvents(scope, scopeRef) first 50, p95 end to end (16 clients)",
            p95,
            "ms",
            raw_p95,
            "ms raw SELECT p95",
            p95 / raw_p95,
            "< 20 ms",
            p95 < 20 and c16["bad"] == 0,
            b.command("events", f"--events {a.events}"),
            f"{c16['rate']:.0f} req/s (wrk); p50 {c16['lat_p50_us'] / 1000:.1f} ms, p99 "
            f"{c16['lat_p99_us'] / 1000:.1f} ms, server CPU "
            f"{c16['server_cpu_us_per_req'] / 1000:.2f} ms/request; 1 client: e2e p95 "
            f"{pct([x[3] for x in c1['samples']], 95):.1f}"
            f" ms, server median {median([x[4] for x in c1['samples']]):.2f} ms vs raw median "
            f"{median(raw):.2f} ms",
        )
    )
    b.rows.append(
        Row(
            "5 events",
            "the same through REST GET /memory/events, p95 (16 clients)",
            rest16["lat_p95_us"] / 1000,
            "ms",
            p95,
            "ms through GraphQL",
            rest16["lat_p95_us"] / 1000 / p95,
            "(diagnostic)",
            None,
            b.command("events", f"--events {a.events}"),
            f"{rest16['rate']:.0f} req/s vs {c16['rate']:.0f} through GraphQL; server CPU "
            f"{rest16['server_cpu_us_per_req'] / 1000:.2f} ms/request vs "
            f"{c16['server_cpu_us_per_req'] / 1000:.2f}",
        )
    )
    b.details["events"] = {"raw": raw}


if __name__ == "__main__":
    from bench.suite import main

    main(default_only="events")
