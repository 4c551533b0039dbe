"""Compaction throughput and memory: one run over N old events in B buckets against a local
gateway stub that answers after a fixed latency (tests/support/gateway_stub.py).

Reports gateway calls/s (one per entry) against the bound (compaction_concurrency / latency)
and the run's peak RSS, and repeats with fewer events to show that RSS does not grow.

Usage: .venv/bin/python -m bench.compaction [--events 100000] [--buckets 2000]
       [--latency 0.2] [--small-events 20000]
"""

import argparse
import asyncio
import json
import os
import random
import resource
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from app import ids
from app.config import Settings
from app.deps import build
from app.services import policies
from app.services import tenants as tenant_service
from bench import context as cb  # insert_events, the server's indexing

ROOT = Path(__file__).resolve().parents[1]
BATCH = 5_000

_CLIENTS = "Acme Globex Initech Umbrella Hooli Stark Wayne Wonka Tyrell Cyberdyne".split()
_PEOPLE = "Priya Marco Lena Tomasz Aiko Dmitri Sofia Kwame Ines Raj".split()
_BODIES = [
    "{client} call with {person}: the Q{q} budget of ${amount:,} was approved; next review "
    "on {date}. {person} wants weekly reporting and asked for the ROAS target to stay at "
    "{roas}.",
    "Decision: {client} moves {pct}% of search spend to video from {date}. {person} signed "
    "off; the agency commits to a creative refresh within two weeks.",
    "Campaign change for {client}: daily cap raised to ${amount:,} after CPA fell to "
    "${cpa}. {person} is pleased but worried about frequency in the {region} market.",
    "Sentiment: {person} at {client} was frustrated that the {date} report was late again; "
    "we promised delivery by 9am every Monday from now on.",
]
_REGIONS = "EMEA APAC LATAM DACH Nordics".split()


def _body(rng: random.Random, when: datetime) -> str:
    return rng.choice(_BODIES).format(
        client=rng.choice(_CLIENTS),
        person=rng.choice(_PEOPLE),
        q=rng.randint(1, 4),
        amount=rng.randrange(5_000, 250_000, 500),
        date=(when + timedelta(days=rng.randint(1, 30))).strftime("%Y-%m-%d"),
        roas=f"{rng.uniform(2, 6):.1f}",
        pct=rng.randint(5, 40),
        cpa=f"{rng.uniform(8, 60):.2f}",
        region=rng.choice(_REGIONS),
    )


def _sqlite_time(dt: datetime) -> str:
    # The text SQLAlchemy's DateTime stores in SQLite (naive UTC, see app/storage/types.py).
    return dt.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


async def make_tenant(data_dir: Path) -> str:
    """A tenant with its database created and migrated by the services."""
    container = await build(Settings(_env_file=None, data_dir=data_dir))
    try:
        tenant, _ = await tenant_service.create_tenant(
            container.control, container.tenants, "bench"
        )
        return tenant.id
    finally:
        await container.aclose()


def fill(db_path: Path, *, events: int, buckets: int, seed: int = 7) -> None:
    """`events` old events spread evenly over `buckets` entities, raw executemany batches."""
    rng = random.Random(seed)
    now = datetime.now(UTC)
    con = sqlite3.connect(db_path, isolation_level=None)
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("PRAGMA synchronous = OFF")  # a bench fixture: no need to survive power loss
    sql = (
        "INSERT INTO memory_events (id, scope, scope_ref, kind, body, source, source_ref,"
        " occurred_at, recorded_at) VALUES (?, 'entity', ?, ?, ?, 'bench', NULL, ?, ?)"
    )
    kinds = ("call_summary", "decision", "campaign_change", "sentiment_shift")
    rows: list[tuple[Any, ...]] = []
    for i in range(events):
        # 100 to 465 days old: every event is past the 90-day line.
        when = now - timedelta(days=100 + (i * 365) // events, minutes=i % 1440)
        rows.append(
            (
                ids.new_id(ids.EVENT),
                f"ent_{i % buckets:05d}",
                kinds[i % 4],
                _body(rng, when),
                _sqlite_time(when),
                _sqlite_time(now),
            )
        )
        if len(rows) == BATCH:
            _insert(con, sql, rows)
            rows.clear()
    if rows:
        _insert(con, sql, rows)
    con.close()


def _insert(con: sqlite3.Connection, sql: str, rows: list[tuple[Any, ...]]) -> None:
    con.execute("BEGIN")
    cb.insert_events(con, sql, rows)  # indexed for search, as the server's writer does
    con.execute("COMMIT")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_stub(latency: float) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.gateway_stub",
            "--port",
            str(port),
            "--latency",
            str(latency),
        ],
        cwd=ROOT,
    )
    deadline = time.monotonic() + 15
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{port}/v1"
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("the gateway stub did not start") from None
            time.sleep(0.05)


async def configure(data_dir: Path, tenant_id: str, gateway_url: str) -> None:
    """Point the tenant at the stub; DLP stays at its default (redact), as in production."""
    container = await build(Settings(_env_file=None, data_dir=data_dir))
    try:
        await policies.configure_tenant(
            container.control, tenant_id, gateway_url=gateway_url, models=["bench-model"]
        )
    finally:
        await container.aclose()


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def measure(data_dir: Path, tenant_id: str) -> dict[str, Any]:
    """One compaction run in this (fresh) process; its peak RSS is the run's."""
    from app.services.compaction import compact_tenant

    container = await build(Settings(_env_file=None, data_dir=data_dir))
    try:
        rss_before = _rss_kib()
        started = time.perf_counter()
        run = await compact_tenant(container, tenant_id, trigger="cli")
        wall = time.perf_counter() - started
    finally:
        await container.aclose()
    return {
        "status": str(run.status),
        "wall_s": wall,
        "buckets_compacted": run.buckets_compacted,
        "buckets_skipped": run.buckets_skipped,
        "periods": run.periods,
        "events_compressed": run.events_compressed,
        "problems": run.problems[:3],
        "rss_before_mib": rss_before / 1024,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "concurrency": container.settings.compaction_concurrency,
    }


def run_case(events: int, buckets: int, gateway_url: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="jet-bench-") as tmp:
        data_dir = Path(tmp) / "data"
        tenant_id = asyncio.run(make_tenant(data_dir))
        asyncio.run(configure(data_dir, tenant_id, gateway_url))
        started = time.perf_counter()
        fill(data_dir / "tenants" / f"{tenant_id}.db", events=events, buckets=buckets)
        fill_s = time.perf_counter() - started
        # A fresh process, so its peak RSS is the compaction's and nothing else's.
        out = subprocess.run(
            [sys.executable, "-m", "bench.compaction", "--measure", str(data_dir), tenant_id],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result | {"events": events, "buckets": buckets, "fill_s": fill_s}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=100_000)
    p.add_argument("--buckets", type=int, default=2_000)
    p.add_argument("--latency", type=float, default=0.2, help="the stub's answer time, s")
    p.add_argument(
        "--small-events",
        type=int,
        default=20_000,
        help="events of the second run (same bucket size; 0 skips it)",
    )
    p.add_argument("--measure", nargs=2, metavar=("DATA_DIR", "TENANT"), help=argparse.SUPPRESS)
    args = p.parse_args()

    if args.measure:
        print(json.dumps(asyncio.run(measure(Path(args.measure[0]), args.measure[1]))))
        return 0

    stub, url = start_stub(args.latency)
    try:
        cases = [(args.events, args.buckets)]
        if args.small_events:
            per_bucket = max(args.events // args.buckets, 1)
            cases.append((args.small_events, max(args.small_events // per_bucket, 1)))
        results = [run_case(events, buckets, url) for events, buckets in cases]
    finally:
        stub.terminate()
        stub.wait(10)

    ok = True
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} CPUs, load average {load} (other work skews the rate)")
    for r in results:
        # The bound is in gateway calls: a bucket over compaction_summary_max_tokens' share
        # folds into several entries, one call each, made one after another in its slot.
        bound = r["concurrency"] / args.latency
        rate = r["periods"] / r["wall_s"]
        print(
            f"{r['events']:>7,} events in {r['buckets']:,} buckets: {r['status']}, "
            f"{r['buckets_compacted']:,} buckets / {r['periods']:,} entries / "
            f"{r['events_compressed']:,} events folded in {r['wall_s']:.1f} s "
            f"(data generated in {r['fill_s']:.1f} s)"
        )
        print(
            f"  {r['buckets_compacted'] / r['wall_s']:.1f} buckets/s, "
            f"{rate:.1f} calls/s vs bound {bound:.1f} ({r['concurrency']} / "
            f"{args.latency:g} s) = {rate / bound:.0%}; peak RSS {r['peak_rss_mib']:.0f} MiB "
            f"(before the run {r['rss_before_mib']:.0f} MiB)"
        )
        if r["problems"]:
            print(f"  problems: {r['problems']}")
        ok &= rate / bound >= 0.8 and r["peak_rss_mib"] < 300
    if len(results) == 2:
        growth = results[0]["peak_rss_mib"] - results[1]["peak_rss_mib"]
        print(
            f"peak RSS {results[1]['events']:,} -> {results[0]['events']:,} events: "
            f"{growth:+.0f} MiB"
        )
    print("targets (>= 80% of the bound, peak RSS < 300 MiB):", "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
