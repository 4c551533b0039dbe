"""Workload 2: appendMemoryEvent (GraphQL) and POST /memory/events, 64 clients (wrk), against
raw aiosqlite; every acknowledged append is then looked up in the tenant database (none lost,
none stored twice). `python -m bench.appends [options of python -m bench]`."""

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import aiosqlite

from app import ids
from app.config import Settings
from app.storage.search import fulltext
from bench import context as cb
from bench.harness import (
    Row,
    median,
    new_tenant,
    open_container,
    read_acks,
    run_async,
    run_wrk,
)
from bench.runner import Run


def raw_append_rate(
    settings: Settings, path: Path, seconds: float, batch: int, *, index: bool = True
) -> float:
    """Raw aiosqlite into a migrated tenant database, one commit per `batch` rows, with
    the server's PRAGMAs (WAL, synchronous as configured) and, `index`, the server's
    full-text indexing: the same statements in each transaction as the event writer
    (app/storage/event_log.py), max(seq) before the INSERT and one INSERT ... SELECT into
    the FTS5 index after it. Without `index`, the events are not searchable (the
    diagnostic of what the index costs)."""

    async def go() -> float:
        async with aiosqlite.connect(path, isolation_level=None) as db:
            await db.execute(f"PRAGMA busy_timeout = {settings.sqlite_busy_timeout_ms}")
            await db.execute("PRAGMA journal_mode = WAL")
            await db.execute(f"PRAGMA synchronous = {settings.sqlite_synchronous}")
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


def verify_appends(db_path: Path, runs: dict[str, Path], batch: int) -> dict[str, dict[str, Any]]:
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


def surfaces(batch: int) -> list[tuple[str, str, str]]:
    """(surface, wrk_bench.lua mode, path) of the appends of `batch` events a request."""
    return [
        ("graphql", "append_gql" if batch == 1 else "batch_gql", "/graphql"),
        ("rest", "append_rest" if batch == 1 else "batch_rest", "/memory/events"),
    ]


def appends(b: Run, name: str, batch: int, connections: int) -> None:
    a = b.args
    title = "2. appendMemoryEvent, 64 clients" if batch == 1 else f"3. batches of {batch}"
    print(f"\n== {title} ==", flush=True)
    tenant_id, key = run_async(new_tenant(b.data_dir, f"bench-{name}-{b.stamp}"))
    raw_id, _ = run_async(new_tenant(b.data_dir, f"bench-{name}-raw-{b.stamp}"))
    container = run_async(open_container(b.data_dir))
    db_path, raw_path = container.tenants.path(tenant_id), container.tenants.path(raw_id)
    run_async(container.aclose())
    modes = surfaces(batch)
    results: dict[str, list[dict[str, Any]]] = {"raw": [], "graphql": [], "rest": []}
    raw_rates: list[float] = []
    nofts_rates: list[float] = []
    if batch > 1:
        # Diagnostic: the same raw writes without the full-text indexing statement (into
        # a tenant of their own, never searched), to show what the index costs per event.
        nofts_id, _ = run_async(new_tenant(b.data_dir, f"bench-{name}-nofts-{b.stamp}"))
        container = run_async(open_container(b.data_dir))
        nofts_path = container.tenants.path(nofts_id)
        run_async(container.aclose())
    acks: dict[str, Path] = {}
    with b.server(name) as srv:
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
            raw = raw_append_rate(b.settings, raw_path, a.seconds, batch)
            raw_rates.append(raw)
            print(
                f"  raw aiosqlite #{i + 1} {raw:>9,.0f} events/s (commit per {batch})",
                flush=True,
            )
            if batch > 1:
                nofts_rates.append(
                    raw_append_rate(b.settings, nofts_path, a.seconds, batch, index=False)
                )
                print(f"  raw, no FTS5 #{i + 1} {nofts_rates[-1]:>9,.0f} events/s", flush=True)
            for surface, mode, path in modes:
                run_id = f"r{b.stamp.replace('-', '')}{surface}{i}"
                acks[run_id] = b.work / f"acks-{name}-{run_id}"
                prof = f"{name}-{surface}" if i == a.rounds - 1 else None
                r = b.wrk_round(
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
    verify = verify_appends(db_path, acks, batch)
    raw_med = median(raw_rates)
    lost = sum(v["lost"] + v["partial_batches"] for v in verify.values())
    dup = sum(v["duplicated"] for v in verify.values())
    acked = sum(v["acked_events"] for v in verify.values())
    per_group = median([v["events_per_group"] for v in verify.values()])
    single = {"graphql": 3000, "rest": 5000}
    targets = single if batch == 1 else {"graphql": 50_000, "rest": 50_000}
    wl = "2 append" if batch == 1 else "3 batch 500"
    for surface in ("graphql", "rest"):
        rs = results[surface]
        rate = median([r["events_per_s"] for r in rs])
        p99 = median([r["lat_p99_us"] for r in rs]) / 1000
        label = "appendMemoryEvent" if surface == "graphql" else "POST /memory/events"
        if batch > 1:
            label = "appendMemoryEvents" if surface == "graphql" else "POST /memory/events [..]"
        b.rows.append(
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
                b.command(name),
                f"p50 {median([r['lat_p50_us'] for r in rs]) / 1000:.1f} ms, p99 {p99:.1f} ms; "
                f"server CPU {median([r['server_cpu_us_per_req'] for r in rs]) / batch:.0f}"
                f" us/event",
            )
        )
        if batch == 1:
            b.rows.append(
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
                    b.command(name),
                )
            )
    b.rows.append(
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
            b.command(name),
            f"{acked:,} acknowledged events checked in the tenant DB: {lost} lost, {dup} "
            f"duplicated; median {per_group:.1f} events per commit group",
        )
    )
    if nofts_rates:
        nofts = median(nofts_rates)
        b.rows.append(
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
                b.command(name),
                "the same rows, PRAGMAs and commit size without the INSERT ... SELECT into "
                "memory_events_fts (the events are not searchable)",
            )
        )
    b.details[name] = {
        "results": results,
        "raw": raw_rates,
        "raw_nofts": nofts_rates,
        "verify": verify,
    }


def run(b: Run) -> None:
    appends(b, "append", 1, 64)


if __name__ == "__main__":
    from bench.suite import main

    main(default_only="append")
