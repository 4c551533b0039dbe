"""HTTP benchmarks of issue 6: the real server (uvicorn, one process, 127.0.0.1), loaded from
other processes (wrk with bench/wrk_bench.lua; bench/http_load.py for what wrk cannot
express), each figure against a baseline measured in the same run. The machine is shared
and noisy: every figure is a median over rounds or a percentile over many requests, and
the ratio to its baseline is what to compare between runs.

Usage: .venv/bin/python bench/http_bench.py [--only trivial,append,batch,search,events,tenants]
       [--quick] [--rounds N] [--seconds S] [--events N] [--entries N] [--tenants N]
       [--data-dir DIR] [--profile] [--no-access-log]

Workloads (each alone with --only NAME; --quick scales every one down):
  trivial  `{ __typename }` through GraphQL vs a plain Starlette route of the same process
  append   appendMemoryEvent (GraphQL) and POST /memory/events, 64 clients, then every
           acknowledged append is looked up in the tenant database; vs raw aiosqlite
  batch    appendMemoryEvents / POST /memory/events with 500 events a request; vs raw
           aiosqlite executemany (indexed for search by the server's statement)
  search   memoryEntries(search) top 20, 100,000 entries in 10 scopes, 16 clients, common
           and rare terms, the search page cache off; vs the same FTS5 SELECT run by
           sqlite3; then the same load with the cache on and every question asked before
           (rows marked CACHED)
  events   memoryEvents by scope on 1,000,000 events, 16 clients; vs the same SELECT
  tenants  first request to a tenant not yet open, and open files over 10,000 tenants

Writes bench/results/http-<time>.json and .md (the table), server logs and, with
--profile, py-spy profiles of the server (raw collapsed stacks) summarised on stdout.
"""

import argparse
import asyncio
import json
import os
import shutil
import sqlite3
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiosqlite
import bench_data
import context_bench as cb
from harness import (
    RESULTS,
    Profiler,
    Row,
    Server,
    git_state,
    load_note,
    markdown_table,
    median,
    new_tenant,
    open_container,
    pct,
    proc_cpu_seconds,
    proc_fds,
    proc_rss_mib,
    read_acks,
    run_async,
    run_load,
    run_wrk,
    save_results,
)
from profile_summary import summarize

from app import ids
from app.config import Settings
from app.storage import fulltext

WORKLOADS = ["trivial", "append", "batch", "search", "events", "tenants"]
BENCH_CMD = ".venv/bin/python bench/http_bench.py"


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


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.data_dir: Path = args.data_dir.resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.stamp = time.strftime("%Y%m%d-%H%M%S")
        self.work = RESULTS / f"run-{self.stamp}"
        self.work.mkdir(parents=True, exist_ok=True)
        self.rows: list[Row] = []
        self.details: dict[str, Any] = {}
        self.settings = Settings(_env_file=None, data_dir=self.data_dir)

    # ------------------------------------------------------------------------ helpers

    def command(self, name: str, *extra: str) -> str:
        parts = [BENCH_CMD, "--only", name, *extra]
        if self.args.quick:
            parts.append("--quick")
        if not self.args.access_log:
            parts.append("--no-access-log")
        return " ".join(parts)

    def server(self, name: str, **env: str) -> Server:
        return Server(
            data_dir=self.data_dir,
            log_path=self.work / f"server-{name}.log",
            env=env,
            access_log=self.args.access_log,
        )

    def profile(self, srv: Server, label: str, seconds: float) -> Profiler | None:
        if not self.args.profile:
            return None
        return Profiler(srv.pid, self.work / f"profile-{label}.txt", seconds)

    def report_profile(self, prof: Profiler | None, label: str) -> None:
        if prof is None:
            return
        path = prof.wait()
        if path.exists():
            text = summarize(path)
            (self.work / f"profile-{label}.summary.txt").write_text(text)
            print(f"\n--- profile {label} ({path}) ---\n{text}", flush=True)

    def wrk_round(
        self, srv: Server, label: str, prof_label: str | None = None, **kw: Any
    ) -> dict[str, Any]:
        cpu0 = proc_cpu_seconds(srv.pid)
        prof = self.profile(srv, prof_label, kw["seconds"]) if prof_label else None
        r = run_wrk(srv.url, **kw)
        r["server_cpu_us_per_req"] = (
            (proc_cpu_seconds(srv.pid) - cpu0) * 1e6 / max(1, r["requests"])
        )
        print(
            f"  {label:<14} {r['rate']:>9,.0f} req/s  ok {r['ok']:>7,}  bad {r['bad']}"
            f"  p50 {r['lat_p50_us'] / 1000:6.2f}  p99 {r['lat_p99_us'] / 1000:6.2f} ms"
            f"  server CPU {r['server_cpu_us_per_req']:6.0f} us/req",
            flush=True,
        )
        if r["bad"] and r["bad_sample"]:
            print(f"    first bad response: {r['bad_sample'][:200]}", flush=True)
        if prof_label:
            self.report_profile(prof, prof_label)
        return r

    def wrk_replay(
        self,
        srv: Server,
        label: str,
        requests: list[dict[str, Any]],
        connections: int,
        seconds: float,
        mode: str,
        prof: str | None = None,
    ) -> dict[str, Any]:
        """`requests` (as for `load`, one key) sent in turn by wrk's replay modes."""
        path = self.work / f"{label}.requests"
        lines = []
        for r in requests:
            body = r.get("body", "")
            assert "\t" not in body and "\n" not in body, "one request a line"
            lines.append(f"{r['method']}\t{r['path']}\t{body}")
        path.write_text("\n".join(lines) + "\n")
        key = requests[0]["headers"]["authorization"].removeprefix("Bearer ")
        run_wrk(srv.url, mode=mode, key=key, path="/", seconds=1, connections=connections,
                requests_file=path)  # warm up  # fmt: skip
        r = self.wrk_round(srv, label, prof, mode=mode, key=key, path="/", seconds=seconds,
                           connections=connections, requests_file=path)  # fmt: skip
        r["lat_p95_us"] = r.get("lat_p95_us", 0)
        return r

    # ----------------------------------------------------------------- 1. trivial

    def trivial(self) -> None:
        a = self.args
        print("\n== 1. trivial GraphQL vs plain Starlette (same process) ==", flush=True)
        _, key = run_async(new_tenant(self.data_dir, f"bench-trivial-{self.stamp}"))
        plain: list[dict[str, Any]] = []
        gql: list[dict[str, Any]] = []
        with self.server("trivial") as srv:
            for path in ("/plain", "/graphql"):  # warm up
                run_wrk(srv.url, mode="static", key=key, path=path, seconds=1, connections=32)
            for i in range(a.rounds):
                common = dict(mode="static", key=key, seconds=a.seconds, connections=32)
                plain.append(self.wrk_round(srv, f"plain #{i + 1}", path="/plain", **common))
                prof = "trivial-graphql" if i == a.rounds - 1 else None
                gql.append(
                    self.wrk_round(srv, f"graphql #{i + 1}", prof, path="/graphql", **common)
                )
        g = median([r["ok"] / (r["duration_us"] / 1e6) for r in gql])
        p = median([r["ok"] / (r["duration_us"] / 1e6) for r in plain])
        ratio = g / p
        cpu_g = median([r["server_cpu_us_per_req"] for r in gql])
        cpu_p = median([r["server_cpu_us_per_req"] for r in plain])
        self.rows.append(
            Row(
                "1 trivial",
                "`{ __typename }` req/s (32 conns)",
                g,
                "req/s",
                p,
                "req/s plain /plain",
                ratio,
                ">= 0.35x plain",
                ratio >= 0.35,
                self.command("trivial"),
                f"p99 graphql {median([r['lat_p99_us'] for r in gql]) / 1000:.1f} ms, plain "
                f"{median([r['lat_p99_us'] for r in plain]) / 1000:.1f} ms; server CPU/request "
                f"graphql {cpu_g:.0f} us, plain {cpu_p:.0f} us ({cpu_p / cpu_g:.2f}x)",
            )
        )
        self.details["trivial"] = {"plain": plain, "graphql": gql}

    # ------------------------------------------------------------------ 2. append

    def raw_append_rate(
        self, path: Path, seconds: float, batch: int, *, index: bool = True
    ) -> float:
        """Raw aiosqlite into a migrated tenant database, one commit per `batch` rows, with
        the server's PRAGMAs (WAL, synchronous as configured) and, `index`, the server's
        full-text indexing: the same statements in each transaction as the event writer
        (app/storage/event_log.py), max(seq) before the INSERT and one INSERT ... SELECT into
        the FTS5 index after it. Without `index`, the events are not searchable (the
        diagnostic of what the index costs)."""

        async def go() -> float:
            async with aiosqlite.connect(path, isolation_level=None) as db:
                await db.execute(f"PRAGMA busy_timeout = {self.settings.sqlite_busy_timeout_ms}")
                await db.execute("PRAGMA journal_mode = WAL")
                await db.execute(f"PRAGMA synchronous = {self.settings.sqlite_synchronous}")
                sql = (
                    "INSERT INTO memory_events (id, scope, scope_ref, kind, body, source,"
                    " source_ref, occurred_at, recorded_at) VALUES (?,?,?,?,?,?,?,?,?)"
                )
                n = 0
                after = 0
                t0 = time.perf_counter()
                while time.perf_counter() - t0 < seconds:
                    now = cb.ts(cb.NOW)
                    rows = [
                        (
                            ids.new_id(ids.EVENT),
                            "entity",
                            "acme-outdoor",
                            "decision",
                            "Decision: move 20% of the display budget to search from April 1.",
                            "raw",
                            f"raw-{n + i}",
                            now,
                            now,
                        )
                        for i in range(batch)
                    ]
                    await db.execute("BEGIN")
                    if index:
                        async with db.execute(fulltext.LAST_EVENT_SEQ_SQL) as cur:
                            (after,) = await cur.fetchone()  # type: ignore[misc]
                    if batch == 1:
                        await db.execute(sql, rows[0])
                    else:
                        await db.executemany(sql, rows)
                    if index:
                        await db.execute(fulltext.INDEX_EVENTS_SQL, {"after": after})
                    await db.execute("COMMIT")
                    n += batch
                return n / (time.perf_counter() - t0)

        rate: float = asyncio.run(go())
        return rate

    def verify_appends(
        self, db_path: Path, runs: dict[str, Path], batch: int
    ) -> dict[str, dict[str, Any]]:
        """Every acknowledged request's events stored exactly once (by sourceRef)."""
        conn = sqlite3.connect(db_path)
        stored: dict[str, list[str]] = {}
        for ref, recorded in conn.execute(
            "SELECT source_ref, recorded_at FROM memory_events WHERE source = 'bench'"
        ):
            stored.setdefault(ref, []).append(recorded)
        conn.close()
        out: dict[str, dict[str, Any]] = {}
        for run_id, ack_dir in runs.items():
            acked = read_acks(ack_dir)
            mine = {ref: v for ref, v in stored.items() if ref.startswith(run_id + "-")}
            lost = [ref for ref in acked if len(mine.get(ref, [])) != batch]
            dup = [ref for ref, v in mine.items() if len(v) > batch]
            partial = [ref for ref, v in mine.items() if len(v) != batch]
            groups = len({t for v in mine.values() for t in v})  # a group commit shares `now`
            out[run_id] = {
                "acked_requests": len(acked),
                "acked_events": sum(acked.values()),
                "stored_requests": len(mine),
                "stored_events": sum(len(v) for v in mine.values()),
                "lost": len(lost),
                "duplicated": len(dup),
                "partial_batches": len(partial),
                "unacked_stored": len(set(mine) - set(acked)),
                "commit_groups": groups,
                "events_per_group": sum(len(v) for v in mine.values()) / max(1, groups),
            }
            v = out[run_id]
            print(
                f"  verify {run_id}: acked {v['acked_events']:,} stored {v['stored_events']:,}"
                f" lost {v['lost']} duplicated {v['duplicated']} partial {v['partial_batches']}"
                f" in flight at the end {v['unacked_stored']}"
                f" | {v['commit_groups']:,} commit groups, {v['events_per_group']:.1f} events each",
                flush=True,
            )
        return out

    def appends(self, name: str, batch: int, connections: int) -> None:
        a = self.args
        title = "2. appendMemoryEvent, 64 clients" if batch == 1 else f"3. batches of {batch}"
        print(f"\n== {title} ==", flush=True)
        tenant_id, key = run_async(new_tenant(self.data_dir, f"bench-{name}-{self.stamp}"))
        raw_id, _ = run_async(new_tenant(self.data_dir, f"bench-{name}-raw-{self.stamp}"))
        container = run_async(open_container(self.data_dir))
        db_path, raw_path = container.tenants.path(tenant_id), container.tenants.path(raw_id)
        run_async(container.aclose())
        modes = [
            ("graphql", "append_gql" if batch == 1 else "batch_gql", "/graphql"),
            ("rest", "append_rest" if batch == 1 else "batch_rest", "/memory/events"),
        ]
        results: dict[str, list[dict[str, Any]]] = {"raw": [], "graphql": [], "rest": []}
        raw_rates: list[float] = []
        nofts_rates: list[float] = []
        if batch > 1:
            # Diagnostic: the same raw writes without the full-text indexing statement (into
            # a tenant of their own, never searched), to show what the index costs per event.
            nofts_id, _ = run_async(new_tenant(self.data_dir, f"bench-{name}-nofts-{self.stamp}"))
            container = run_async(open_container(self.data_dir))
            nofts_path = container.tenants.path(nofts_id)
            run_async(container.aclose())
        acks: dict[str, Path] = {}
        with self.server(name) as srv:
            for surface, mode, path in modes:  # warm up (not verified, other run id)
                run_wrk(
                    srv.url,
                    mode=mode,
                    key=key,
                    path=path,
                    seconds=1,
                    connections=connections,
                    run_id=f"warm{surface}",
                    batch=batch,
                )
            for i in range(a.rounds):
                raw = self.raw_append_rate(raw_path, a.seconds, batch)
                raw_rates.append(raw)
                print(
                    f"  raw aiosqlite #{i + 1} {raw:>9,.0f} events/s (commit per {batch})",
                    flush=True,
                )
                if batch > 1:
                    nofts_rates.append(
                        self.raw_append_rate(nofts_path, a.seconds, batch, index=False)
                    )
                    print(f"  raw, no FTS5 #{i + 1} {nofts_rates[-1]:>9,.0f} events/s", flush=True)
                for surface, mode, path in modes:
                    run_id = f"r{self.stamp.replace('-', '')}{surface}{i}"
                    acks[run_id] = self.work / f"acks-{name}-{run_id}"
                    prof = f"{name}-{surface}" if i == a.rounds - 1 else None
                    r = self.wrk_round(
                        srv,
                        f"{surface} #{i + 1}",
                        prof,
                        mode=mode,
                        key=key,
                        path=path,
                        seconds=a.seconds,
                        connections=connections,
                        run_id=run_id,
                        ack_dir=acks[run_id],
                        batch=batch,
                    )
                    r["events_per_s"] = r["echoed"] / (r["duration_us"] / 1e6)
                    r["run_id"] = run_id
                    results[surface].append(r)
        verify = self.verify_appends(db_path, acks, batch)
        raw_med = median(raw_rates)
        lost = sum(v["lost"] + v["partial_batches"] for v in verify.values())
        dup = sum(v["duplicated"] for v in verify.values())
        acked = sum(v["acked_events"] for v in verify.values())
        per_group = median([v["events_per_group"] for v in verify.values()])
        if batch == 1:
            targets = {"graphql": 3000, "rest": 5000}
        else:
            targets = {"graphql": 50_000, "rest": 50_000}
        wl = "2 append" if batch == 1 else "3 batch 500"
        for surface in ("graphql", "rest"):
            rs = results[surface]
            rate = median([r["events_per_s"] for r in rs])
            p99 = median([r["lat_p99_us"] for r in rs]) / 1000
            label = "appendMemoryEvent" if surface == "graphql" else "POST /memory/events"
            if batch > 1:
                label = "appendMemoryEvents" if surface == "graphql" else "POST /memory/events [..]"
            self.rows.append(
                Row(
                    wl,
                    f"{label} events/s ({connections} conns)",
                    rate,
                    "events/s",
                    raw_med,
                    f"events/s raw aiosqlite commit per {'row' if batch == 1 else batch}",
                    rate / raw_med,
                    f">= {targets[surface]:,}/s",
                    rate >= targets[surface],
                    self.command(name),
                    f"p50 {median([r['lat_p50_us'] for r in rs]) / 1000:.1f} ms, p99 {p99:.1f} ms; "
                    f"server CPU {median([r['server_cpu_us_per_req'] for r in rs]) / batch:.0f}"
                    f" us/event",
                )
            )
            if batch == 1:
                self.rows.append(
                    Row(
                        wl,
                        f"{label} p99 latency",
                        p99,
                        "ms",
                        None,
                        "",
                        None,
                        "< 50 ms",
                        p99 < 50,
                        self.command(name),
                    )
                )
        self.rows.append(
            Row(
                wl,
                "acknowledged appends lost / duplicated",
                lost + dup,
                "events",
                None,
                "",
                None,
                "0 lost, 0 duplicated",
                lost == 0 and dup == 0,
                self.command(name),
                f"{acked:,} acknowledged events checked in the tenant DB: {lost} lost, {dup} "
                f"duplicated; median {per_group:.1f} events per commit group",
            )
        )
        if nofts_rates:
            nofts = median(nofts_rates)
            self.rows.append(
                Row(
                    wl,
                    "diagnostic: raw aiosqlite executemany without the FTS5 index",
                    nofts,
                    "events/s",
                    raw_med,
                    "events/s raw with it",
                    nofts / raw_med,
                    "",
                    None,
                    self.command(name),
                    "the same rows, PRAGMAs and commit size without the INSERT ... SELECT into "
                    "memory_events_fts (the events are not searchable)",
                )
            )
        self.details[name] = {
            "results": results,
            "raw": raw_rates,
            "raw_nofts": nofts_rates,
            "verify": verify,
        }

    # ------------------------------------------------------------------ 4. search

    def search(self) -> None:
        a = self.args
        print(f"\n== 4. memoryEntries search, {a.entries:,} entries, 10 scopes ==", flush=True)
        tenant_id, key = run_async(bench_data.search_tenant(self.data_dir, a.entries))
        container = run_async(open_container(self.data_dir))
        db_path = container.tenants.path(tenant_id)
        run_async(container.aclose())
        query = bench_data.SEARCH_QUERY
        cases = bench_data.search_cases()
        requests = [
            self.gql_request(
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
        with self.server("search", JET_BENCH_SERVER_TIMING="1", JET_SEARCH_CACHE_PAGES="0") as srv:
            c1 = self.load(srv, "search-c1", requests, 1, a.seconds, prof="search-c1")
            c16 = self.load(srv, "search-c16", requests, 16, a.seconds, prof="search-c16")
            rare_gql = [r for r in requests if r["tag"] == "rare"]
            rare_rest = [
                self.rest_get(key, "/memory", {"scope": s, "scopeRef": r, "search": q,
                                               "limit": 20}, tag)
                for tag, q, s, r in cases
                if tag == "rare"
            ]  # fmt: skip
            gql_rare = self.load(srv, "search-rare-gql-c16", rare_gql, 16, a.seconds)
            rest_rare = self.load(srv, "search-rare-rest-c16", rare_rest, 16, a.seconds,
                                  check="status")  # fmt: skip
        for tag in ("common", "rare"):
            s16 = [x for x in c16["samples"] if x[0] == tag]
            s1 = [x for x in c1["samples"] if x[0] == tag]
            p95 = pct([x[3] for x in s16], 95)
            raw_p95 = pct(raw[tag], 95)
            self.rows.append(
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
                    self.command("search"),
                    f"{len(s16):,} requests, {len(s16) / c16['elapsed']:.0f}/s for {tag}; p50 "
                    f"{pct([x[3] for x in s16], 50):.1f} ms, "
                    f"p99 {pct([x[3] for x in s16], 99):.1f} ms;"
                    f" server-time p95 {pct([x[4] for x in s16], 95):.1f} ms;"
                    f" mean {sum(x[5] for x in s16) / max(1, len(s16)):.1f} hits",
                )
            )
            server_med = median([x[4] for x in s1])
            raw_med = median(raw[tag])
            self.rows.append(
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
                    self.command("search"),
                    f"end to end median {median([x[3] for x in s1]):.2f} ms; server p95 "
                    f"{pct([x[4] for x in s1], 95):.2f} ms vs raw p95 {pct(raw[tag], 95):.2f} ms",
                )
            )
        only_rare = [x[3] for x in gql_rare["samples"]]
        self.rows.append(
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
                self.command("search"),
                f"{len(only_rare) / gql_rare['elapsed']:.0f} req/s; p50 {pct(only_rare, 50):.1f}"
                f" ms, p99 {pct(only_rare, 99):.1f} ms; server CPU "
                f"{gql_rare['server_cpu_ms_per_req']:.2f} ms/request (the rows above mix common"
                " and rare questions, as agents ask them)",
            )
        )
        self.rest_row(
            "4 search",
            "rare terms through REST GET /memory?search=, p95 (16 clients)",
            rest_rare,
            gql_rare,
            self.command("search"),
        )
        cached = self.search_cached(requests, raw)
        self.details["search"] = {"raw": raw, "cached": cached}

    def search_cached(
        self, requests: list[dict[str, Any]], raw: dict[str, list[float]]
    ) -> dict[str, float]:
        """Workload 4's load again with the search page cache on (its default size holds
        every question): agents ask the same questions at the start of many sessions, and
        entries change rarely. One pass over every question fills the cache first; the
        measured phases then repeat them, so they are (nearly) all hits. The server's
        cache counters before and after say how many were."""
        a = self.args
        with self.server("search-cached", JET_BENCH_SERVER_TIMING="1",
                         JET_SEARCH_CACHE_PAGES="2000") as srv:  # fmt: skip
            self.load(srv, "search-cached-fill", requests, 16, 0, order="once")
            before = cache_lookups(srv.url)
            c1 = self.load(srv, "search-cached-c1", requests, 1, a.seconds)
            c16 = self.load(srv, "search-cached-c16", requests, 16, a.seconds)
            after = cache_lookups(srv.url)
        counted = {r: after.get(r, 0.0) - before.get(r, 0.0) for r in ("hit", "miss", "stale")}
        hit_rate = counted["hit"] / max(1.0, sum(counted.values()))
        print(f"  cache lookups while measured: {counted} (hit rate {hit_rate:.1%})", flush=True)
        for tag in ("common", "rare"):
            s16 = [x for x in c16["samples"] if x[0] == tag]
            s1 = [x for x in c1["samples"] if x[0] == tag]
            p95 = pct([x[3] for x in s16], 95)
            self.rows.append(
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
                    self.command("search"),
                    f"search page cache on, every question asked before (hit rate "
                    f"{hit_rate:.1%} over both phases); {len(s16) / c16['elapsed']:.0f}/s for "
                    f"{tag}, p50 {pct([x[3] for x in s16], 50):.2f} ms, p99 "
                    f"{pct([x[3] for x in s16], 99):.1f} ms; server CPU "
                    f"{c16['server_cpu_ms_per_req']:.2f} ms/request",
                )
            )
            server_med = median([x[4] for x in s1])
            self.rows.append(
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
                    self.command("search"),
                    f"search page cache on; end to end median {median([x[3] for x in s1]):.2f} ms",
                )
            )
        return {"hit_rate": hit_rate, **counted}

    def rest_get(self, key: str, path: str, params: dict[str, Any], tag: str) -> dict[str, Any]:
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        return {
            "method": "GET",
            "path": f"{path}?{query}",
            "tag": tag,
            "headers": {"authorization": f"Bearer {key}"},
        }

    def rest_row(
        self, workload: str, metric: str, out: dict[str, Any], gql: dict[str, Any], cmd: str
    ) -> None:
        """An informational row: the same reads through REST (the same service call)."""
        e2e = [x[3] for x in out["samples"]]
        g = [x[3] for x in gql["samples"]]
        self.rows.append(
            Row(
                workload,
                metric,
                pct(e2e, 95),
                "ms",
                pct(g, 95),
                "ms through GraphQL",
                pct(e2e, 95) / pct(g, 95),
                "(diagnostic)",
                None,
                cmd,
                f"{len(e2e) / out['elapsed']:.0f} req/s vs {len(g) / gql['elapsed']:.0f} through "
                f"GraphQL; server CPU {out['server_cpu_ms_per_req']:.2f} ms/request vs "
                f"{gql['server_cpu_ms_per_req']:.2f}",
            )
        )

    def gql_request(
        self, key: str, query: str, variables: dict[str, Any], tag: str
    ) -> dict[str, Any]:
        return {
            "method": "POST",
            "path": "/graphql",
            "tag": tag,
            "headers": {"authorization": f"Bearer {key}", "content-type": "application/json"},
            "body": json.dumps({"query": query, "variables": variables}),
        }

    def load(
        self,
        srv: Server,
        label: str,
        requests: list[dict[str, Any]],
        concurrency: int,
        seconds: float,
        *,
        prof: str | None = None,
        order: str = "cycle",
        fd: bool = False,
        check: str = "graphql",
    ) -> dict[str, Any]:
        spec = {
            "base_url": srv.url,
            "concurrency": concurrency,
            "order": order,
            "duration": seconds,
            "warmup": 1 if order == "cycle" else 0,
            "check": check,
            "requests": requests,
            "fd_pid": srv.pid if fd else None,
            "fd_every": 0.1,
        }
        cpu0 = proc_cpu_seconds(srv.pid)
        # A phase of `order="once"` has no fixed length: profile its first 30 s.
        length = seconds + 1 if order == "cycle" else 30
        profiler = self.profile(srv, prof, length) if prof else None
        out = run_load(spec, self.work / label)
        samples = out["samples"]
        bad = [x for x in samples if not x[2]]
        out["server_cpu_ms_per_req"] = (
            (proc_cpu_seconds(srv.pid) - cpu0) * 1000 / max(1, len(samples))
        )
        e2e = [x[3] for x in samples]
        srv_ms = [x[4] for x in samples if x[4] is not None]
        print(
            f"  {label:<18} {len(samples):>6,} req {len(samples) / out['elapsed']:>7,.0f}/s"
            f"  e2e p50 {pct(e2e, 50):6.2f} p95 {pct(e2e, 95):6.2f} p99 {pct(e2e, 99):6.2f} ms"
            + (f"  server p50 {pct(srv_ms, 50):6.2f} p95 {pct(srv_ms, 95):6.2f}" if srv_ms else "")
            + f"  server CPU {out['server_cpu_ms_per_req']:.2f} ms/req"
            + f"  client CPU {out['client_cpu_ms_per_req']:.2f}  bad {len(bad)}",
            flush=True,
        )
        if bad:
            print(f"    first bad response: {out['bad_sample'][:300]}", flush=True)
        if prof:
            self.report_profile(profiler, prof)
        return out

    # ------------------------------------------------------------------ 5. events

    def events(self) -> None:
        a = self.args
        n_entries = max(1000, a.events // 100)
        print(f"\n== 5. memoryEvents by scope, {a.events:,} events ==", flush=True)
        tenant_id, key = run_async(bench_data.events_tenant(self.data_dir, a.events, n_entries))
        container = run_async(open_container(self.data_dir))
        db_path = container.tenants.path(tenant_id)
        run_async(container.aclose())
        query = (
            "query($f: MemoryEventFilter!) { memoryEvents(filter: $f, first: 50) { edges {"
            " cursor node { id scope scopeRef kind body source sourceRef occurredAt"
            " compressedAt } } pageInfo { hasNextPage endCursor } } }"
        )
        refs = cb.CLIENTS[:: max(1, len(cb.CLIENTS) // 40)]
        requests = [
            self.gql_request(key, query, {"f": {"scope": "ENTITY", "scopeRef": r}}, "scope+ref")
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
            f"  raw SELECT median {median(raw):6.2f}  p95 {pct(raw, 95):6.2f} ms"
            f" ({len(rows)} rows)",
            flush=True,
        )
        rest = [
            self.rest_get(key, "/memory/events", {"scope": "entity", "scopeRef": r, "limit": 50},
                          "rest")
            for r in refs
        ]  # fmt: skip
        with self.server("events", JET_BENCH_SERVER_TIMING="1") as srv:
            c1 = self.load(srv, "events-c1", requests, 1, a.seconds, prof="events-c1")
            # 16 clients from wrk: a Python client (~0.4 ms of CPU a page) would take a
            # quarter of what the server needs from the same two CPUs.
            c16 = self.wrk_replay(srv, "events-c16", requests, 16, a.seconds, "replay_gql",
                                  prof="events-c16")  # fmt: skip
            rest16 = self.wrk_replay(srv, "events-rest-c16", rest, 16, a.seconds, "replay_rest")
        p95 = c16["lat_p95_us"] / 1000
        raw_p95 = pct(raw, 95)
        self.rows.append(
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
                self.command("events", f"--events {a.events}"),
                f"{c16['rate']:.0f} req/s (wrk); p50 {c16['lat_p50_us'] / 1000:.1f} ms, p99 "
                f"{c16['lat_p99_us'] / 1000:.1f} ms, server CPU "
                f"{c16['server_cpu_us_per_req'] / 1000:.2f} ms/request; 1 client: e2e p95 "
                f"{pct([x[3] for x in c1['samples']], 95):.1f}"
                f" ms, server median {median([x[4] for x in c1['samples']]):.2f} ms vs raw median "
                f"{median(raw):.2f} ms",
            )
        )
        self.rows.append(
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
                self.command("events", f"--events {a.events}"),
                f"{rest16['rate']:.0f} req/s vs {c16['rate']:.0f} through GraphQL; server CPU "
                f"{rest16['server_cpu_us_per_req'] / 1000:.2f} ms/request vs "
                f"{c16['server_cpu_us_per_req'] / 1000:.2f}",
            )
        )
        self.details["events"] = {"raw": raw}

    # ----------------------------------------------------------------- 6. tenants

    def tenants(self) -> None:
        a = self.args
        print(
            f"\n== 6. first request to a tenant not yet open; {a.tenants:,} tenants ==", flush=True
        )
        tenants = run_async(bench_data.many_tenants(self.data_dir, a.tenants))
        query = "{ memoryEvents(first: 5) { edges { node { id } } } }"
        reqs = [self.gql_request(key, query, {}, "first") for _, key in tenants]
        n_seq = min(1000 if not a.quick else 200, len(reqs) // 4)
        cache = self.settings.tenant_cache_size
        with self.server("tenants", JET_BENCH_SERVER_TIMING="1") as srv:
            fd_start = proc_fds(srv.pid)
            # Baseline: the same request to a tenant already open (and its key cached).
            warm_req = {**reqs[0], "tag": "warm"}
            self.load(srv, "tenants-open-warmup", [warm_req], 1, 1, order="cycle")
            warm = self.load(srv, "tenants-open", [warm_req], 1, min(a.seconds, 3))
            first = self.load(srv, "tenants-first-c1", reqs[1 : 1 + n_seq], 1, 0, order="once")
            fd_after_seq = proc_fds(srv.pid)
            rest = self.load(
                srv,
                "tenants-first-c16",
                reqs[1 + n_seq :],
                16,
                0,
                order="once",
                fd=True,
                prof="tenants-first-c16",
            )
            fd_end = proc_fds(srv.pid)
            rss = proc_rss_mib(srv.pid)
        w = [x[3] for x in warm["samples"]]
        f1 = [x[3] for x in first["samples"]]
        f16 = [x[3] for x in rest["samples"]]
        p95, warm_p95 = pct(f1, 95), pct(w, 95)
        series = rest["fd_series"]
        fd_max = max([s[2] for s in series] + [fd_after_seq, fd_end])
        half = [s[2] for s in series if s[1] >= len(f16) / 2]
        first_half = [s[2] for s in series if s[1] < len(f16) / 2] or [fd_after_seq]
        pool = self.settings.tenant_pool_size
        # Per cached tenant: the pool's connections and the InlineReader's, each the file
        # and its -wal, and the -shm once.
        per_tenant = 2 * (pool + 1) + 1
        bound = fd_start + cache * per_tenant
        flat = max(half or [0]) <= max(first_half) + 2 * per_tenant
        self.rows.append(
            Row(
                "6 tenants",
                "first request to a tenant not yet open, p95 (1 client)",
                p95,
                "ms",
                warm_p95,
                "ms same request, tenant open",
                p95 / warm_p95,
                "< 15 ms",
                p95 < 15,
                self.command("tenants", f"--tenants {a.tenants}"),
                f"{len(f1):,} tenants one after another: p50 {pct(f1, 50):.1f} ms, p99 "
                f"{pct(f1, 99):.1f} ms, server p95 {pct([x[4] for x in first['samples']], 95):.1f}"
                f" ms; then {len(f16):,} more with 16 clients: p50 {pct(f16, 50):.1f} ms, p95 "
                f"{pct(f16, 95):.1f} ms, {len(f16) / rest['elapsed']:.0f} tenants/s",
            )
        )
        self.rows.append(
            Row(
                "6 tenants",
                f"open files of the server, {len(tenants):,} tenants touched",
                fd_max,
                "fds (max)",
                fd_start,
                "fds at start",
                fd_max / fd_start,
                f"bounded (<= {bound} = start + {cache} cached x {per_tenant})",
                fd_max <= bound and flat,
                self.command("tenants", f"--tenants {a.tenants}"),
                f"after {n_seq + 1:,} tenants {fd_after_seq}, at the end {fd_end}; second half max "
                f"{max(half or [0])} vs first half max {max(first_half)}; RSS {rss:.0f} MiB",
            )
        )
        self.details["tenants"] = {"fd_series": series, "fd_start": fd_start}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated workloads")
    p.add_argument("--quick", action="store_true", help="small sizes, short rounds")
    p.add_argument("--rounds", type=int, help="rounds per rate workload (default 3, quick 2)")
    p.add_argument("--seconds", type=float, help="seconds per round (default 5, quick 2)")
    p.add_argument("--events", type=int, help="events of workload 5 (default 1,000,000)")
    p.add_argument("--entries", type=int, help="entries of workload 4 (default 100,000)")
    p.add_argument("--tenants", type=int, help="tenants of workload 6 (default 10,000)")
    p.add_argument(
        "--data-dir",
        type=Path,
        default=RESULTS / "data",
        help="JET_DATA_DIR of the server; generated tenants are reused here",
    )
    p.add_argument("--fresh", action="store_true", help="delete --data-dir first")
    p.add_argument("--profile", action="store_true", help="py-spy the server in one round each")
    p.add_argument(
        "--no-access-log",
        dest="access_log",
        action="store_false",
        help="uvicorn without its access log (jet-memory serve logs every request)",
    )
    a = p.parse_args()
    q = a.quick
    a.rounds = a.rounds or (2 if q else 3)
    a.seconds = a.seconds or (2.0 if q else 5.0)
    a.events = a.events or (100_000 if q else 1_000_000)
    a.entries = a.entries or (20_000 if q else 100_000)
    a.tenants = a.tenants or (1_000 if q else 10_000)
    only = [w.strip() for w in a.only.split(",") if w.strip()]
    unknown = set(only) - set(WORKLOADS)
    if unknown:
        p.error(f"unknown workloads {sorted(unknown)}; choose from {WORKLOADS}")
    if a.fresh and a.data_dir.exists():
        shutil.rmtree(a.data_dir)
    bench = Bench(a)
    started = time.time()
    load_before = load_note()
    code = git_state()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M:%S')}  {load_before}; code {code}; results in "
        f"{bench.work}",
        flush=True,
    )
    run: dict[str, Callable[[], None]] = {
        "trivial": bench.trivial,
        "append": lambda: bench.appends("append", 1, 64),
        "batch": lambda: bench.appends("batch", 500, 8),
        "search": bench.search,
        "events": bench.events,
        "tenants": bench.tenants,
    }
    for name in WORKLOADS:
        if name in only:
            run[name]()
    load_after = load_note()
    print(f"\n{time.strftime('%Y-%m-%d %H:%M:%S')}  {load_after}\n")
    print(markdown_table(bench.rows))
    print()
    for r in bench.rows:
        if r.notes:
            print(f"- {r.workload} / {r.metric}: {r.notes}")
    path = save_results(
        bench.rows,
        {
            "started": started,
            "load_before": load_before,
            "load_after": load_after,
            "code": code,
            "args": {k: str(v) for k, v in vars(a).items()},
            "details": bench.details,
            "python": sys.version,
            "pid": os.getpid(),
        },
        "http",
    )
    print(f"\nresults: {path}")
    if any(r.met is False for r in bench.rows):
        print("some targets were missed (see the table)")


if __name__ == "__main__":
    main()
