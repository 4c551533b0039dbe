"""The per-scope summary's cost and worth: `python -m bench.scopes [--seconds S] [--rounds N]
[--events N]`.

1. The append path, raw SQLite: one transaction per group (1 or 50 events over 7 scopes),
   the event writer's statements (insert, full-text index, outbox) with and without the
   summary's upsert (app/storage/scopes.COUNT_EVENTS_SQL), alternating transaction by
   transaction: each side's median, and the median of the pairs' ratios.
2. memoryScopes on a tenant with N events (default 1,000,000) over 1,000 scopes: a page of
   20 through the service (the summary's key) against counting the log with GROUP BY.
"""

import argparse
import asyncio
import json
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from app import ids
from app.services import scopes as scopes_service
from app.storage import scopes
from app.storage.changes import outbox
from app.storage.models import events_table as ev
from app.storage.search import fulltext
from app.storage.transactions import read_rows
from bench import context as cb
from bench.changes import INSERT, raw_cost
from bench.harness import load_note, median, new_tenant, open_container


async def part_append(work: Path, seconds: float, rounds: int) -> dict[str, Any]:
    # Both sides announce the change (the outbox), as every append does.
    announce = [outbox.ANNOUNCE_EVENTS_SQL]
    return await raw_cost(
        work, seconds, rounds, announce, [*announce, scopes.COUNT_EVENTS_SQL], "summary"
    )


def seed(path: Path, events: int, scopes_n: int) -> None:
    """`events` events over `scopes_n` scopes, counted into the summary as writers do (not
    indexed for search: neither read below uses the index)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = OFF")
    now = cb.ts(cb.NOW)
    chunk = 50_000
    for start in range(0, events, chunk):
        conn.execute("BEGIN")
        (after,) = conn.execute(fulltext.LAST_EVENT_SEQ_SQL).fetchone()
        conn.executemany(
            INSERT,
            [
                (
                    ids.new_id(ids.EVENT),
                    "entity",
                    f"ent_{i % scopes_n:04}",
                    "note",
                    "A call about budgets.",
                    "seed",
                    None,
                    now,
                    now,
                )
                for i in range(start, min(start + chunk, events))
            ],
        )
        conn.execute(scopes.COUNT_EVENTS_SQL, {"after": after})
        conn.execute("COMMIT")
    conn.close()


async def part_read(work: Path, events: int, rounds: int) -> dict[str, Any]:
    tenant_id, _ = await new_tenant(work / "read", "read")
    seed(work / "read" / "tenants" / f"{tenant_id}.db", events, 1_000)
    container = await open_container(work / "read")
    key = func.coalesce(ev.c.scope_ref, "")
    group_by = (
        select(ev.c.scope, key, func.count(), func.max(ev.c.recorded_at))
        .group_by(ev.c.scope, key)
        .order_by(ev.c.scope, key)
        .limit(21)
    )
    page_ms, group_ms = [], []
    try:
        async with container.tenants.lease(tenant_id) as db:
            for _ in range(rounds * 5):
                t = time.perf_counter()
                page = await scopes_service.list_scopes(db, scope=None, first=20, after=None)
                page_ms.append((time.perf_counter() - t) * 1000)
                assert len(page.edges) == 20 and page.edges[0].node.event_count == events // 1000
                t = time.perf_counter()
                await read_rows(db.engine, group_by)
                group_ms.append((time.perf_counter() - t) * 1000)
    finally:
        await container.aclose()
    return {
        "events": events,
        "memoryScopes page of 20, median ms": round(median(page_ms), 3),
        "GROUP BY over the log, median ms": round(median(group_ms), 1),
        "ratio GROUP BY/page": round(median(group_ms) / median(page_ms)),
    }


async def main(seconds: float, rounds: int, events: int) -> None:
    print(load_note())
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        append = await part_append(work, seconds, rounds)
        print(json.dumps({"scope summary on the append path (raw SQLite)": append}, indent=2))
        read = await part_read(work, events, rounds)
        print(json.dumps({"listing scopes": read}, indent=2))


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=3)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--events", type=int, default=1_000_000)
    a = p.parse_args()
    asyncio.run(main(a.seconds, a.rounds, a.events))
