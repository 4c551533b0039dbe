"""What search by meaning costs: CPU per embedded entry and per query, RSS with the local
model loaded, and memoryEntries search p95 at 16 concurrent clients with and without it
(keywordOnly), alternating in the same run, the search page cache off. A third mode, "fused,
full rows", reads the keyword side's whole rows as the fused search did before it read
only seq and rank (the A/B of that change).

Usage: .venv/bin/python -m bench.fusion_costs [--entries 100000] [--rounds 3] [--searches 40]
Through the services in one process (the API's own code path below the HTTP edge).
"""

import argparse
import asyncio
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from app.adapters import embedders
from app.config import Settings
from app.deps import build
from app.services import cursors, entries, entry_rows, tenants
from app.services.records import EntryFilter, Scope
from app.services.search import indexer, keywords
from app.storage import reads
from app.storage.models import entries_table as en
from app.storage.search import spec
from app.storage.transactions import write_transaction
from app.storage.types import utcnow

CLIENTS = 16
WORDS = (
    "budget roas campaign launch creative audience retargeting pacing invoice contract weekly "
    "report decision approved paused refund customer landing page video display search agency "
    "client meeting deadline design copy brief forecast spend conversion holiday promotion"
).split()
QUESTIONS = [
    "what did the client decide about the holiday promotion budget",
    "who asked for their money back",
    "when is the landing page deadline",
    "which campaign was paused and why",
    "how much did we spend on video last month",
    "what is the conversion forecast for the launch",
    "what feedback did the agency give on the creative brief",
    "did anyone approve the new contract",
]


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def seed(db: Any, n: int) -> None:
    """`n` entries in 20 scopes, inserted in bulk (their text random words)."""
    rng = random.Random(11)
    now = utcnow()
    rows = []
    for i in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 30))]
        rows.append(
            {
                "id": f"ent_bench{i:012d}",
                "scope": "entity",
                "scope_ref": f"client-{i % 20}",
                "title": " ".join(words[:5]).capitalize(),
                "summary": "- " + " ".join(words),
                "tags": [rng.choice(["decision", "note", "people"])],
                "importance": 3,
                "source": "manual",
                "created_at": now,
                "updated_at": now,
                "version": 1,
            }
        )
    for start in range(0, n, 5000):
        async with write_transaction(db.engine) as conn:
            await conn.execute(en.insert(), rows[start : start + 5000])


async def _full_rows_ranking(
    db: Any, flt: EntryFilter, hwm: int, limit: int
) -> list[tuple[int, float]]:
    """The keyword side as the fused search read it before: the best `limit` whole rows,
    each made an Entry, for their (seq, rank)."""
    target = spec.Target.of_engine(db.engine)
    cursor = cursors.encode("entries-search", [hwm, 0])
    stmt, values, _, _, words = keywords.search_query(target, flt, limit - 1, cursor)
    rows = await reads.search_rows(db, stmt, values, words)
    n = len(entry_rows.COLUMNS)
    for r in rows:
        entry_rows.to_entry(r)
    return [(int(r[n]), float(r[n + 1])) for r in rows]


MODES = {"keywords only": True, "fused": False, "fused, full rows": False}


async def clients(db: Any, keyword_only: bool, searches: int) -> list[float]:
    """Latencies (s) of CLIENTS concurrent clients each asking `searches` questions."""
    out: list[float] = []

    async def client(c: int) -> None:
        for i in range(searches):
            q = QUESTIONS[(c + i) % len(QUESTIONS)] + f" {WORDS[(c * 7 + i) % len(WORDS)]}"
            flt = EntryFilter(
                search=q,
                scope=Scope.ENTITY,
                scope_ref=f"client-{(c + i) % 20}",
                keyword_only=keyword_only,
            )
            t = time.perf_counter()
            await entries.list_entries(db, flt, first=10, after=None)
            out.append(time.perf_counter() - t)

    await asyncio.gather(*(client(c) for c in range(CLIENTS)))
    return out


def p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20)[18]


async def run(args: argparse.Namespace) -> None:
    base = rss_mb()
    t = time.process_time()
    local = embedders.load_local()
    assert local is not None, "the local embedder is installed by make"
    print(
        f"model load: {time.process_time() - t:.2f} s CPU; max RSS {base:.0f} -> {rss_mb():.0f} MB"
    )
    texts = [" ".join(random.Random(i).choices(WORDS, k=40)) for i in range(2000)]
    t = time.process_time()
    local.embed_now(texts)
    print(
        f"CPU per embedded entry (40 words, batch of 2000): "
        f"{(time.process_time() - t) / len(texts) * 1e6:.0f} µs"
    )
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(_env_file=None, data_dir=Path(tmp), search_cache_pages=0)
        c = await build(settings)
        try:
            tenant, _ = await tenants.create_tenant(c.control, c.tenants, "costs")
            async with c.tenants.lease(tenant.id) as db:
                t = time.perf_counter()
                await seed(db, args.entries)
                print(f"{args.entries} entries seeded in {time.perf_counter() - t:.0f} s")
                assert c.semantic is not None
                embedder = await c.semantic.embedder_for(tenant.id)
                assert embedder is not None
                w, t = time.perf_counter(), time.process_time()
                await indexer.catch_up(db, embedder, batch=512, owner="bench")
                cpu = time.process_time() - t
                print(
                    f"indexed in {time.perf_counter() - w:.0f} s wall, CPU per entry "
                    f"{cpu / args.entries * 1e6:.0f} µs (embed + store); max RSS "
                    f"{rss_mb():.0f} MB"
                )
                await clients(db, False, 2)  # warm: the tenant's vector matrix is read once
                print(f"max RSS with {args.entries} vectors held: {rss_mb():.0f} MB")
                p95s: dict[str, list[float]] = {m: [] for m in MODES}
                medians: dict[str, list[float]] = {m: [] for m in MODES}
                cpus: dict[str, list[float]] = {m: [] for m in MODES}
                seq_only = keywords.keyword_ranking
                for _ in range(args.rounds):
                    for mode, keyword_only in MODES.items():
                        full = mode == "fused, full rows"
                        keywords.keyword_ranking = _full_rows_ranking if full else seq_only
                        t = time.process_time()
                        lat = await clients(db, keyword_only, args.searches)
                        cpus[mode].append((time.process_time() - t) / len(lat))
                        p95s[mode].append(p95(lat))
                        medians[mode].append(statistics.median(lat))
                keywords.keyword_ranking = seq_only
        finally:
            await c.aclose()
    for mode in MODES:
        print(
            f"{mode:17s} p95 {statistics.median(p95s[mode]) * 1e3:7.1f} ms, median "
            f"{statistics.median(medians[mode]) * 1e3:7.1f} ms, CPU per query "
            f"{statistics.median(cpus[mode]) * 1e3:6.2f} ms"
        )
    for a, b in (("fused", "keywords only"), ("fused", "fused, full rows")):
        ratio = statistics.median(p95s[a]) / statistics.median(p95s[b])
        cpu_ratio = statistics.median(cpus[a]) / statistics.median(cpus[b])
        print(f"{a} / {b}: p95 x{ratio:.2f}, CPU per query x{cpu_ratio:.2f}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--entries", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--searches", type=int, default=40, help="per client per round")
    asyncio.run(run(p.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
