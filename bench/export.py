"""Export and import on SQLite: events per second of `jet-memory export`'s service and of
the import, each against raw sqlite3 doing the same reads (keyset pages) or inserts
(batched, indexed for search) in the same run; and the export's peak RSS as the tenant
grows (each size exported by a child process that reports its own maximum RSS).

--insert-table instead prints what the event table itself takes: raw sqlite3 inserts by
batch size, with and without the search index and the table's secondary indexes.

Usage: .venv/bin/python -m bench.export [--events 100000] [--rounds 3]
       [--rss-sizes 100000,1000000] (--rss-sizes "" skips the memory part)
       .venv/bin/python -m bench.export --insert-table [--events 100000]
"""

import argparse
import asyncio
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from app import ids
from app.config import Settings
from app.deps import Container, build
from app.services import tenants
from app.services.data_rights import importer, portability
from app.storage.search import fulltext
from app.storage.transactions import BULK_CACHE_KIB
from app.storage.types import sqlite_text

COLUMNS = (
    "id, scope, scope_ref, kind, body, source, source_ref, occurred_at, recorded_at, "
    "compressed_at, compressed_into, idempotency_key"
)
START = datetime(2026, 1, 1, tzinfo=UTC)


def settings(data_dir: Path) -> Settings:
    return Settings(_env_file=None, data_dir=data_dir)


def rows(n: int, first: int = 0) -> list[tuple[object, ...]]:
    """`n` events over 200 clients, bodies of a call summary's length, numbered from
    `first` (their idempotency keys are unique)."""
    out: list[tuple[object, ...]] = []
    for i, event_id in enumerate(ids.new_ids("evt", n), first):
        at = sqlite_text(START + timedelta(seconds=i))
        body = (
            f"Call {i} with client {i % 200}: ROAS target {i % 7}.0, budget moves to search. " * 3
        )
        out.append(
            (
                event_id,
                "entity",
                f"ent_{i % 200}",
                "call_summary",
                body,
                "inbox",
                f"msg_{i}",
                at,
                at,
                None,
                None,
                f"key-{i}",
            )
        )
    return out


def raw_insert(
    path: Path,
    data: list[tuple[object, ...]],
    batch: int = importer.BATCH_RECORDS,
    *,
    index: bool = True,
    secondary: bool = True,
) -> float:
    """Seconds to insert `data` with sqlite3 as the import does: batches of the import's
    size, one transaction each, with the import's page cache, indexed for search
    (fulltext.INDEX_EVENTS_SQL) unless `index` is False (seeding a tenant only to export
    it: the export does not read the index). `secondary=False` drops the event table's
    secondary indexes first and builds them again after the inserts, in the time."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
    dropped = [] if secondary else conn.execute(_SECONDARY_SQL).fetchall()
    for name, _ in dropped:
        conn.execute(f'DROP INDEX "{name}"')
    marks = ",".join("?" * 12)
    started = time.perf_counter()
    for i in range(0, len(data), batch):
        conn.execute("BEGIN IMMEDIATE")
        after = conn.execute(fulltext.LAST_EVENT_SEQ_SQL).fetchone()[0]
        conn.executemany(
            f"INSERT INTO memory_events ({COLUMNS}) VALUES ({marks})", data[i : i + batch]
        )
        if index:
            conn.execute(fulltext.INDEX_EVENTS_SQL, {"after": after})
        conn.execute("COMMIT")
    for _, sql in dropped:
        conn.execute(sql)
    took = time.perf_counter() - started
    conn.close()
    return took


# The event table's own indexes (not those behind its primary key and unique constraints).
_SECONDARY_SQL = (
    "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'memory_events'"
    " AND sql IS NOT NULL"
)


async def insert_table(n: int, work: Path) -> None:
    """Raw inserts of `n` events into fresh tenants: what the table itself takes, by batch
    size, with and without the search index and the secondary indexes."""
    data = rows(n)
    c = await build(settings(work / "data"))
    try:
        print(f"{n:,} events, raw sqlite3 inserts (events/s), a fresh tenant each:")
        print(
            f"  {'batch':>7} {'indexed for search':>20} {'no search index':>17}"
            f" {'neither, nor the secondary indexes':>36}"
        )
        for batch in (2000, 10_000, 50_000):
            rates = []
            for index, secondary in ((True, True), (False, True), (False, False)):
                _, path = await new_tenant(c, f"raw-{batch}-{index}-{secondary}")
                rates.append(n / raw_insert(path, data, batch, index=index, secondary=secondary))
            print(f"  {batch:>7,} {rates[0]:>20,.0f} {rates[1]:>17,.0f} {rates[2]:>36,.0f}")
    finally:
        await c.aclose()


def raw_read(path: Path, page: int = portability.PAGE_SIZE) -> tuple[float, int]:
    """Seconds for sqlite3 to read every event by the export's keyset pages, and the count."""
    conn = sqlite3.connect(path)
    started = time.perf_counter()
    after, n = 0, 0
    while True:
        got = conn.execute(
            f"SELECT {COLUMNS}, seq FROM memory_events WHERE seq > ? ORDER BY seq LIMIT ?",
            (after, page),
        ).fetchall()
        n += len(got)
        if len(got) < page:
            break
        after = got[-1][-1]
    took = time.perf_counter() - started
    conn.close()
    return took, n


async def new_tenant(c: Container, name: str) -> tuple[str, Path]:
    tenant, _ = await tenants.create_tenant(c.control, c.tenants, name)
    return tenant.id, c.tenants.path(tenant.id)


async def export_to(c: Container, tenant_id: str, out: Path) -> float:
    started = time.perf_counter()
    with out.open("wb") as f:
        async with c.tenants.lease(tenant_id) as db:
            async for chunk in portability.export_lines(db):
                f.write(chunk)
    return time.perf_counter() - started


async def import_from(c: Container, tenant_id: str, source: Path) -> float:
    started = time.perf_counter()
    with source.open("rb") as f:
        async with c.tenants.lease(tenant_id) as db:
            result = await importer.import_file(db, f)
    assert result.stored.get("event", 0) > 0
    return time.perf_counter() - started


async def throughput(n: int, rounds: int, work: Path) -> None:
    data = rows(n)
    c = await build(settings(work / "data"))
    try:
        source, source_path = await new_tenant(c, "source")
        raw_insert(source_path, data)
        exp, imp, raw_r, raw_w = [], [], [], []
        for r in range(rounds):  # interleaved: the machine is shared and noisy
            out = work / f"export-{r}.jsonl"
            exp.append(n / await export_to(c, source, out))
            took, read = raw_read(source_path)
            assert read == n
            raw_r.append(n / took)
            target, _ = await new_tenant(c, f"import-{r}")
            imp.append(n / await import_from(c, target, out))
            _, raw_path = await new_tenant(c, f"raw-{r}")
            raw_w.append(n / raw_insert(raw_path, data))
            out.unlink()
    finally:
        await c.aclose()
    e, i, rr, rw = (statistics.median(x) for x in (exp, imp, raw_r, raw_w))
    print(f"{n:,} events, {rounds} rounds, medians (events/s):")
    print(
        f"  export (service, to a file)   {e:>10,.0f}   raw sqlite3 keyset read {rr:>10,.0f}"
        f"   ratio {e / rr:.2f}"
    )
    print(
        f"  import (verify + store)       {i:>10,.0f}   raw sqlite3 insert      {rw:>10,.0f}"
        f"   ratio {i / rw:.2f}"
    )


async def seed_for_rss(work: Path, n: int) -> str:
    c = await build(settings(work / "data"))
    try:
        tenant_id, path = await new_tenant(c, f"rss-{n}")
        for start in range(0, n, 100_000):
            raw_insert(path, rows(min(100_000, n - start), start), 100_000, index=False)
        return tenant_id
    finally:
        await c.aclose()


def child_export(data_dir: str, tenant_id: str, out: str) -> None:
    async def go() -> float:
        c = await build(settings(Path(data_dir)))
        try:
            if out == "-":  # the floor: a process that opens the tenant and exports nothing
                async with c.tenants.lease(tenant_id):
                    return 0.0
            return await export_to(c, tenant_id, Path(out))
        finally:
            await c.aclose()

    took = asyncio.run(go())
    print(f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} {took}")


def rss(work: Path, sizes: list[int]) -> None:
    print("export peak RSS by tenant size (a child process per export):")
    for n in sizes:
        tenant_id = asyncio.run(seed_for_rss(work, n))
        runs = {}
        for what in ("-", str(work / f"rss-{n}.jsonl")):
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "bench.export",
                    "--child",
                    str(work / "data"),
                    tenant_id,
                    what,
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            kib, secs = done.stdout.split()
            runs[what] = (int(kib) / 1024, float(secs))
        base, (peak, took) = runs["-"][0], runs[str(work / f"rss-{n}.jsonl")]
        size = (work / f"rss-{n}.jsonl").stat().st_size / 2**20
        bar = "#" * round(peak / 4)
        print(
            f"  {n:>9,} events  {size:7.0f} MiB file  {took:6.1f} s  peak RSS {peak:6.1f} MiB"
            f" (no export: {base:.1f})  {bar}"
        )
        (work / f"rss-{n}.jsonl").unlink()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rss-sizes", default="100000,1000000")
    p.add_argument("--insert-table", action="store_true")
    p.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child_export(*args.child)
        return
    with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
        work = Path(tmp)
        if args.insert_table:
            asyncio.run(insert_table(args.events, work))
            return
        asyncio.run(throughput(args.events, args.rounds, work))
        sizes = [int(s) for s in args.rss_sizes.split(",") if s]
        if sizes:
            rss(work / "rss", sizes)


if __name__ == "__main__":
    main()
