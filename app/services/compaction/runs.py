"""Compaction run records: their statuses, who runs them, their counters, reading them
back, and the writer every run row and fold goes through. Nothing here decides what a
run folds."""

import os
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, TypeVar, cast

from sqlalchemy import and_, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from app.services import cursors, validation
from app.services.records import CompactionRunRecord, Edge, Page, RunStatus, RunTrigger
from app.storage.group_commit import GroupCommitter
from app.storage.models import compaction_runs_table as runs_t
from app.storage.tenants import TenantDb
from app.storage.transactions import read_transaction

INTERRUPTED = "interrupted: the run never finished (its worker stopped or crashed)"
CANCELLED = "cancelled: the run was stopped before it finished (job timeout or worker shutdown)"


T = TypeVar("T")
_Op = Callable[[AsyncConnection], Awaitable[object]]


async def _apply(conn: AsyncConnection, ops: Sequence[_Op]) -> list[object | BaseException]:
    # An op that raises (a budget stop, a lost race) aborts the shared transaction; the
    # committer then retries each op alone, so it fails alone. Ops are safe to rerun.
    return [await op(conn) for op in ops]


async def write(db: TenantDb, op: Callable[[AsyncConnection], Awaitable[T]]) -> T:
    """Run `op` in the tenant database's compaction writer: concurrent buckets' writes
    share one transaction (group commit) instead of contending for SQLite's write lock
    from several connections, each waiting in busy-handler sleeps."""
    writer = db.compaction_writer
    if writer is None:
        writer = GroupCommitter[_Op, object](db.engine, _apply)
        db.compaction_writer = writer
    return cast(T, await cast(GroupCommitter[_Op, object], writer).submit(op))


# ------------------------------------------------------------------------ reading runs


def _record(row: Any) -> CompactionRunRecord:
    m = {name: row._mapping[name] for name in CompactionRunRecord.__slots__}
    m["status"] = RunStatus(m["status"])
    m["trigger"] = RunTrigger(m["trigger"])
    m["problems"] = list(m["problems"])
    m["entries_created"] = list(m["entries_created"])
    return CompactionRunRecord(**m)


async def get_run(db: TenantDb, run_id: str) -> CompactionRunRecord | None:
    """One run by id, or None."""
    async with read_transaction(db.engine) as conn:
        row = (await conn.execute(select(runs_t).where(runs_t.c.id == run_id))).first()
        return None if row is None else _record(row)


async def list_runs(db: TenantDb, *, first: int, after: str | None) -> Page[CompactionRunRecord]:
    """Newest first."""
    validation.check_first(first)
    stmt = select(runs_t)
    if after is not None:
        at, rid = cursors.decode("runs", after, types=(str, str))
        at_dt = cursors.decode_time(at)
        stmt = stmt.where(
            or_(runs_t.c.started_at < at_dt, and_(runs_t.c.started_at == at_dt, runs_t.c.id < rid))
        )
    stmt = stmt.order_by(runs_t.c.started_at.desc(), runs_t.c.id.desc()).limit(first + 1)
    async with read_transaction(db.engine) as conn:
        runs = [_record(r) for r in await conn.execute(stmt)]
    edges = [
        Edge(cursors.encode("runs", [r.started_at.isoformat(), r.id]), r) for r in runs[:first]
    ]
    return Page(edges, has_next_page=len(runs) > first)


# ------------------------------------------------------------------------ writing runs


@dataclass(frozen=True, slots=True)
class Owner:
    """The process running a run: its host name and pid."""

    host: str
    pid: int

    @classmethod
    def this_process(cls) -> "Owner":
        return cls(socket.gethostname()[:255], os.getpid())

    def is_gone(self, host: str | None, pid: int | None) -> bool:
        """True when (host, pid) is a process of this host that no longer exists."""
        if host != self.host or pid is None or pid == self.pid:
            return False
        try:
            os.kill(pid, 0)  # signal 0: only asks whether the process exists
        except ProcessLookupError:
            return True
        except PermissionError:  # it exists, under another user
            return False
        return False


async def open_run(
    conn: AsyncConnection, record: CompactionRunRecord, *, owner: Owner, stale: datetime
) -> int:
    """Insert `record` (RUNNING, owned by `owner`) after marking interrupted every RUNNING
    run whose owner process is gone from this host or whose heartbeat is older than
    `stale`; returns how many were marked."""
    running = await conn.execute(
        select(
            runs_t.c.id,
            runs_t.c.owner_host,
            runs_t.c.owner_pid,
            func.coalesce(runs_t.c.heartbeat_at, runs_t.c.started_at).label("seen_at"),
        ).where(runs_t.c.status == RunStatus.RUNNING.value)
    )
    dead = [r.id for r in running if r.seen_at < stale or owner.is_gone(r.owner_host, r.owner_pid)]
    if dead:
        await conn.execute(
            update(runs_t)
            .where(runs_t.c.id.in_(dead), runs_t.c.status == RunStatus.RUNNING.value)
            .values(
                status=RunStatus.FAILED.value,
                finished_at=record.started_at,
                problems=[INTERRUPTED],
                buckets_skipped=runs_t.c.buckets_considered - runs_t.c.buckets_compacted,
            )
        )
    await conn.execute(
        insert(runs_t).values(
            asdict(record)
            | {"owner_host": owner.host, "owner_pid": owner.pid, "heartbeat_at": record.started_at}
        )
    )
    return len(dead)


async def count(conn: AsyncConnection, run_id: str, *, at: datetime, **added: int) -> None:
    """Add to a run's counters (a fold's, in the fold's own transaction) and beat its heart."""
    values: dict[str, Any] = {name: runs_t.c[name] + n for name, n in added.items() if n}
    await conn.execute(
        update(runs_t).where(runs_t.c.id == run_id).values(heartbeat_at=at, **values)
    )


async def close_run(conn: AsyncConnection, record: CompactionRunRecord) -> None:
    """Store a finished run's status and counts."""
    values = asdict(record)  # the enums are str: stored as their values
    del values["id"]
    await conn.execute(update(runs_t).where(runs_t.c.id == record.id).values(values))
