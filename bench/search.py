"""Workload 4: memoryEntries(search) top 20 over 100,000 entries in 10 scopes, common and rare
terms, the search page cache off, against the same FTS5 SELECT by sqlite3; then the same load
with the cache on (rows marked CACHED). `python -m bench.search [options of python -m bench]`."""

import sqlite3
import time
import urllib.request
from typing import Any

from bench import data as bench_data
from bench.harness import Row, median, open_container, pct, run_async
from bench.runner import Run


def cache_lookups(base_url: str) -> dict[str, float]:
    """The server's jet_entry_search_cache_lookups_total by result, from its /metrics."""
    with urllib.request.urlopen(f"{base_url}/metrics", timeout=10) as response:
        text = response.read().decode()
    prefix = 'jet_entry_search_cache_lookups_total{result="'
    return {
        line[len(prefix) :].split('"', 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(prefix)
    }


def run(b: Run) -> None:
    a = b.args
    print(f"\n== 4. memoryEntries search, {a.entries:,} entries, 10 scopes ==", flush=True)
    tenant_id, key = run_async(bench_data.search_tenant(b.data_dir, a.entries))
    container = run_async(open_container(b.data_dir))
    db_path = container.tenants.path(tenant_id)
    run_async(container.aclose())
    query = bench_data.SEARCH_QUERY
    cases = bench_data.search_cases()
    requests = [
        b.gql_request(
            key, query, {"f": {"search": q, "scope": scope.upper(), "scopeRef": ref}}, tag
        )
        for tag, q, scope, ref in cases
    ]

    # Baseline: the same SELECT (compiled from the service's own statement) by sqlite3.
    raw: dict[str, list[float]] = {"common": [], "rare": []}
    conn = sqlite3.connect(db_path)
    hwm = conn.execute("SELECT coalesce(max(seq), 0) FROM memory_entries").fetchone()[0]
    sqls = [(tag, bench_data.fts_sql(q, s, r, hwm, 20)) for tag, q, s, r in cases]
    for rep in range(3):
        for tag, sql in sqls:
            t0 = time.perf_counter()
            conn.execute("SELECT coalesce(max(seq), 0) FROM memory_entries").fetchone()
            conn.execute(sql).fetchall()
            if rep:  # the first pass warms the page cache
                raw[tag].append((time.perf_counter() - t0) * 1000)
    conn.close()
    for tag, xs in raw.items():
        print(
            f"  raw FTS5 {tag:<6} median {median(xs):6.2f}  p95 {pct(xs, 95):6.2f} ms",
            flush=True,
        )
    # Without the search page cache (JET_SEARCH_CACHE_PAGES=0): every question is
    # answered by FTS5, as before the cache; the rows below with "cached" come after.
    with b.server("search", JET_BENCH_SERVER_TIMING="1", JET_SEARCH_CACHE_PAGES="0") as srv:
        c1 = b.load(srv, "search-c1", requests, 1, a.seconds, prof="search-c1")
        c16 = b.load(srv, "search-c16", requests, 16, a.seconds, prof="search-c16")
        rare_gql = [r for r in requests if r["tag"] == "rare"]
        rare_rest = [
            b.rest_get(key, "/memory", {"scope": s, "scopeRef": r, "search": q, "limit": 20}, tag)
            for tag, q, s, r in cases
            if tag == "rare"
        ]
        gql_rare = b.load(srv, "search-rare-gql-c16", rare_gql, 16, a.seconds)
        rest_rare = b.load(srv, "search-rare-rest-c16", rare_rest, 16, a.seconds, check="status")
    for tag in ("common", "rare"):
        s16 = [x for x in c16["samples"] if x[0] == tag]
        s1 = [x for x in c1["samples"] if x[0] == tag]
        p95 = pct([x[3] for x in s16], 95)
        raw_p95 = pct(raw[tag], 95)
        b.rows.append(
            Row(
                "4 search",
                f"{tag} terms p95 end to end (16 clients)",
                p95,
                "ms",
                raw_p95,
                "ms raw FTS5 p95",
                p95 / raw_p95,
                "< 25 ms",
                p95 < 25,
                b.command("search"),
                f"{len(s16):,} requests, {len(s16) / c16['elapsed']:.0f}/s for {tag}; p50 "
                f"{pct([x[3] for x in s16], 50):.1f} ms, "
                f"p99 {pct([x[3] for x in s16], 99):.1f} ms;"
                f" server-time p95 {pct([x[4] for x in s16], 95):.1f} ms;"
                f" mean {sum(x[5] for x in s16) / max(1, len(s16)):.1f} hits",
            )
        )
        server_med = median([x[4] for x in s1])
        raw_med = median(raw[tag])
        b.rows.append(
            Row(
                "4 search",
                f"{tag} terms server time, median (1 client)",
                server_med,
                "ms",
                raw_med,
                "ms raw FTS5 median",
                server_med / raw_med,
                "<= 2x raw",
                server_med <= 2 * raw_med,
                b.command("search"),
                f"end to end median {median([x[3] for x in s1]):.2f} ms; server p95 "
                f"{pct([x[4] for x in s1], 95):.2f} ms vs raw p95 {pct(raw[tag], 95):.2f} ms",
            )
        )
    only_rare = [x[3] for x in gql_rare["samples"]]
    b.rows.append(
        Row(
            "4 search",
            "rare terms p95 end to end, 16 clients asking rare terms only",
            pct(only_rare, 95),
            "ms",
            pct(raw["rare"], 95),
            "ms raw FTS5 p95",
            pct(only_rare, 95) / pct(raw["rare"], 95),
            "(diagnostic)",
            None,
            b.command("search"),
            f"{len(only_rare) / gql_rare['elapsed']:.0f} req/s; p50 {pct(only_rare, 50):.1f}"
            f" ms, p99 {pct(only_rare, 99):.1f} ms; server CPU "
            f"{gql_rare['server_cpu_ms_per_req']:.2f} ms/request (the rows above mix common"
            " and rare questions, as agents ask them)",
        )
    )
    b.rest_row(
        "4 search",
        "rare terms through REST GET /memory?search=, p95 (16 clients)",
        rest_rare,
        gql_rare,
        b.command("search"),
    )
    cached = search_cached(b, requests, raw)
    b.details["search"] = {"raw": raw, "cached": cached}


def search_cached(
    b: Run, requests: list[dict[str, Any]], raw: dict[str, list[float]]
) -> dict[str, float]:
    """Workload 4's load again with the search page cache on (its default size holds
    every question): agents ask the same questions at the start of many sessions, and
    entries change rarely. One pass over every question fills the cache first; the
    measured phases then repeat them, so they are (nearly) all hits. The server's
    cache counters before and after say how many were."""
    a = b.args
    with b.server(
        "search-cached", JET_BENCH_SERVER_TIMING="1", JET_SEARCH_CACHE_PAGES="2000"
    ) as srv:
        b.load(srv, "search-cached-fill", requests, 16, 0, order="once")
        before = cache_lookups(srv.url)
        c1 = b.load(srv, "search-cached-c1", requests, 1, a.seconds)
        c16 = b.load(srv, "search-cached-c16", requests, 16, a.seconds)
        after = cache_lookups(srv.url)
    counted = {r: after.get(r, 0.0) - before.get(r, 0.0) for r in ("hit", "miss", "stale")}
    hit_rate = counted["hit"] / max(1.0, sum(counted.values()))
    print(f"  cache lookups while measured: {counted} (hit rate {hit_rate:.1%})", flush=True)
    for tag in ("common", "rare"):
        s16 = [x for x in c16["samples"] if x[0] == tag]
        s1 = [x for x in c1["samples"] if x[0] == tag]
        p95 = pct([x[3] for x in s16], 95)
        b.rows.append(
            Row(
                "4 search",
                f"CACHED, repeat questions: {tag} terms p95 end to end (16 clients)",
                p95,
                "ms",
                pct(raw[tag], 95),
                "ms raw FTS5 p95",
                p95 / pct(raw[tag], 95),
                "< 25 ms",
                p95 < 25,
                b.command("search"),
                f"search page cache on, every question asked before (hit rate "
                f"{hit_rate:.1%} over both phases); {len(s16) / c16['elapsed']:.0f}/s for "
                f"{tag}, p50 {pct([x[3] for x in s16], 50):.2f} ms, p99 "
                f"{pct([x[3] for x in s16], 99):.1f} ms; server CPU "
                f"{c16['server_cpu_ms_per_req']:.2f} ms/request",
            )
        )
        server_med = median([x[4] for x in s1])
        b.rows.append(
            Row(
                "4 search",
                f"CACHED, repeat questions: {tag} terms server time, median (1 client)",
                server_med,
                "ms",
                median(raw[tag]),
                "ms raw FTS5 median",
                server_med / median(raw[tag]),
                "<= 2x raw",
                server_med <= 2 * median(raw[tag]),
                b.command("search"),
                f"search page cache on; end to end median {median([x[3] for x in s1]):.2f} ms",
            )
        )
    return {"hit_rate": hit_rate, **counted}


if __name__ == "__main__":
    from bench.suite import main

    main(default_only="search")
