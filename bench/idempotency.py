"""Appends with an idempotency key on a big tenant, against appends without one (A/B in one
run, append by append): what the lookup of the keys already stored costs an append.

Usage: .venv/bin/python -m bench.idempotency [--events 1000000] [--entries 100000]
       [--appends 200] [--data-dir DIR (reuses the tenant of bench.context generated there)]
Prints the median ms per append of each side and the median of the pairs' ratios.
"""

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from app.config import Settings
from app.deps import build
from app.services import events
from app.services.records import EventIn, Scope
from bench.context import tenant_for


async def run(args: argparse.Namespace, data_dir: Path) -> None:
    container = await build(Settings(_env_file=None, data_dir=data_dir))
    try:
        tenant_id = await tenant_for(container, data_dir, args.events, args.entries)
        without: list[float] = []
        keyed: list[float] = []
        async with container.tenants.lease(tenant_id) as db:
            for i in range(args.appends + 10):
                # The sides alternate, each first in turn: the machine's speed drifts.
                sides = (
                    ((False, without), (True, keyed))
                    if i % 2
                    else ((True, keyed), (False, without))
                )
                for with_key, samples in sides:
                    event = EventIn(
                        Scope.ENTITY,
                        "acme-outdoor",
                        "note",
                        f"idempotency bench {i} {with_key}",
                        idempotency_key=f"bench-{time.time_ns()}-{i}" if with_key else None,
                    )
                    started = time.perf_counter()
                    await events.append_events(db, [event])
                    if i >= 10:  # the first appends warm the connections
                        samples.append((time.perf_counter() - started) * 1000)
    finally:
        await container.aclose()
    ratios = [b / a for a, b in zip(without, keyed, strict=True)]
    print(
        f"one append among {args.events:,} events: without a key {statistics.median(without):.2f}"
        f" ms, with one {statistics.median(keyed):.2f} ms (medians of {len(keyed)});"
        f" median of the pairs' ratios {statistics.median(ratios):.2f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--appends", type=int, default=200)
    parser.add_argument("--data-dir", type=Path, help="keep (and reuse) the tenant here")
    args = parser.parse_args()
    if args.data_dir:
        args.data_dir.mkdir(parents=True, exist_ok=True)
        asyncio.run(run(args, args.data_dir))
        return
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run(args, Path(tmp)))


if __name__ == "__main__":
    main()
