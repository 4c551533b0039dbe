"""Erasure and entry history: the time to erase a subject of `--subject-events` events
among `--events` (SQLite, through the service: the deletes, the full-text merge and the
checkpoint), and the cost of the versions write on an entry update (A/B in one run, update
by update: updates whose locked read writes no version, and the real ones; per-update
medians and the median of the pairs' ratios).

Usage: .venv/bin/python -m bench.erasure [--events 1000000] [--subject-events 10000]
       [--subjects 3] [--updates 300] [--rounds 10]
"""

import argparse
import asyncio
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import bindparam, select

from app import ids
from app.config import Settings
from app.deps import build
from app.services import entries, entry_rows, tenants
from app.services.data_rights import erasure, history
from app.services.records import EntryIn, EntryPatch, Scope
from app.storage.models import entries_table as en
from app.storage.types import sqlite_text, utcnow
from bench.context import insert_events

WORDS = (
    "budget campaign client call decision launch creative spend roas cpc ctr audience "
    "landing page agency review pricing contract renewal forecast pipeline quarter "
    "approval brief channel search social video display retargeting conversion"
).split()
BATCH = 50_000
_INSERT = (
    "INSERT INTO memory_events (id, scope, scope_ref, kind, body, source, source_ref,"
    " occurred_at, recorded_at, compressed_at, compressed_into) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
)


def _rows(refs: list[str], per_ref: int, rng: random.Random) -> Iterator[tuple[Any, ...]]:
    now = utcnow()
    for i in range(per_ref * len(refs)):
        ref = refs[i % len(refs)]
        body = " ".join(rng.choice(WORDS) for _ in range(20)) + f" #{i}"
        at = sqlite_text(now - timedelta(minutes=i))
        yield (
            ids.new_id(ids.EVENT),
            "entity",
            ref,
            "call_summary",
            body,
            None,
            None,
            at,
            at,
            None,
            None,
        )


def _fill(path: Path, rows: Iterator[tuple[Any, ...]], total: int, shown: bool) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous = OFF")  # a bulk load, not a durability test
    started, done = time.perf_counter(), 0
    while chunk := [r for _, r in zip(range(BATCH), rows, strict=False)]:
        conn.execute("BEGIN")
        insert_events(conn, _INSERT, chunk)
        conn.execute("COMMIT")
        done += len(chunk)
        if shown:
            print(
                f"\r  {done:,}/{total:,} events, {time.perf_counter() - started:.0f}s",
                end="",
                flush=True,
            )
    conn.execute("INSERT INTO memory_events_fts (memory_events_fts) VALUES ('optimize')")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    # The load wrote without syncing; a tenant's memory is at rest on disk, and otherwise
    # the first erasure's checkpoint would wait for the whole load to reach the disk.
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    if shown:
        print(flush=True)


async def erase_subjects(args: argparse.Namespace, data_dir: Path) -> list[float]:
    """Seconds per subject erasure, one per target subject."""
    settings = Settings(_env_file=None, data_dir=data_dir)
    c = await build(settings)
    try:
        tenant, _ = await tenants.create_tenant(c.control, c.tenants, "bench-erasure")
        path = c.tenants.path(tenant.id)
        targets = [f"ent_target_{i}" for i in range(args.subjects)]
        background = args.events - args.subject_events * args.subjects
        rng = random.Random(7)
        refs = [f"ent_bg_{i}" for i in range(200)]
        rows = _chain(
            _rows(refs, background // len(refs), rng), _rows(targets, args.subject_events, rng)
        )
        _fill(path, rows, args.events, args.progress)
        took: list[float] = []
        async with c.tenants.lease(tenant.id) as db:
            for ref in targets:
                for n in range(20):  # entries of the subject, each with a version
                    e = await entries.create_entry(db, EntryIn(Scope.ENTITY, ref, f"n{n}", "x"))
                    await entries.update_entry(db, e.id, EntryPatch(summary="y"), by="bench")
                started = time.perf_counter()
                receipt = await erasure.erase_subject(db, Scope.ENTITY, ref, by="bench")
                took.append(time.perf_counter() - started)
                assert receipt.events == args.subject_events and receipt.entries == 20
        return took
    finally:
        await c.aclose()


def _chain(*its: Iterator[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    for it in its:
        yield from it


async def history_ab(args: argparse.Namespace, data_dir: Path) -> tuple[float, float, float]:
    """Median seconds per update without the versions write (A) and with it (B), and the
    median of the pairs' ratios B/A."""
    settings = Settings(_env_file=None, data_dir=data_dir)
    c = await build(settings)
    real_keep = history.keep_current

    # The update without history: the same locked read, no versions row written; its
    # statement built once, as the real one is.
    locked = select(*entry_rows.COLUMNS).where(en.c.id == bindparam("id")).with_for_update()

    async def read_only(conn: Any, entry_id: str, **_: Any) -> Any:
        return (await conn.execute(locked, {"id": entry_id})).first()

    a: list[float] = []
    b: list[float] = []
    try:
        tenant, _ = await tenants.create_tenant(c.control, c.tenants, "bench-history")
        async with c.tenants.lease(tenant.id) as db:
            made = [
                await entries.create_entry(db, EntryIn(Scope.ENTITY, f"ent_{i % 10}", "t", "s"))
                for i in range(args.updates)
            ]
            # A and B alternate update by update (the first of each pair alternating too),
            # so both see the machine at the same speed: it drifts 2x within minutes here.
            for r in range(args.rounds):
                for i, e in enumerate(made):
                    pair = (("A", a), ("B", b)) if (r + i) % 2 else (("B", b), ("A", a))
                    for label, samples in pair:
                        history.keep_current = real_keep if label == "B" else read_only
                        started = time.perf_counter()
                        await entries.update_entry(
                            db, e.id, EntryPatch(summary=f"{label}{r} " * 20), by="bench"
                        )
                        samples.append(time.perf_counter() - started)
    finally:
        history.keep_current = real_keep
        await c.aclose()
    ratios = [y / x for x, y in zip(a, b, strict=True)]
    return statistics.median(a), statistics.median(b), statistics.median(ratios)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--subject-events", type=int, default=10_000)
    p.add_argument("--subjects", type=int, default=3, help="subjects erased one after another")
    p.add_argument("--updates", type=int, default=300, help="entries updated per round")
    p.add_argument("--rounds", type=int, default=10, help="A/B rounds, alternating order")
    args = p.parse_args()
    args.progress = sys.stdout.isatty()
    with tempfile.TemporaryDirectory(prefix="jet-bench-erasure-") as tmp:
        ab = asyncio.run(history_ab(args, Path(tmp) / "history"))
        print(
            f"entry update, median: without versions write {ab[0] * 1e3:.3f} ms, "
            f"with {ab[1] * 1e3:.3f} ms; ratio of medians {ab[1] / ab[0]:.3f}, "
            f"median of the pairs' ratios {ab[2]:.3f}"
        )
        took = asyncio.run(erase_subjects(args, Path(tmp) / "erasure"))
        print(
            f"erase a subject of {args.subject_events:,} events among {args.events:,} "
            f"(SQLite): "
            + ", ".join(f"{t:.2f}s" for t in took)
            + f"; median {statistics.median(took):.2f}s"
        )


if __name__ == "__main__":
    main()
