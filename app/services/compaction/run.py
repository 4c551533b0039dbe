"""One compaction run over one tenant: the run row, the buckets fanned out over the
summary slots, each bucket's failure kept to itself (ARCHITECTURE.md, "The compactor")."""

import asyncio
import logging
import time
from datetime import UTC, datetime, timedelta

from app import ids
from app.adapters.summarisers.base import Summariser
from app.config import Settings
from app.errors import BudgetExceeded
from app.services.compaction import runs
from app.services.compaction.folding import Folder
from app.services.compaction.planning import Bucket, Gone, LostRace, Planner, Skip
from app.services.policies import TenantPolicy
from app.services.records import CompactionRunRecord, RunStatus, RunTrigger
from app.storage.tenants import TenantDb
from app.storage.types import utcnow

log = logging.getLogger(__name__)

MAX_PROBLEMS = 1000  # problem lines kept on one run; the rest are counted in a last line
# A run beats this many times per compaction_stale_run_seconds: a late beat or two never
# gets it taken for dead.
HEARTBEATS_PER_WINDOW = 4


async def run_compaction(
    db: TenantDb,
    *,
    policy: TenantPolicy,
    summariser: Summariser,
    settings: Settings,
    trigger: RunTrigger | str,
    dry_run: bool = False,
    now: datetime | None = None,
) -> CompactionRunRecord:
    """Compact one tenant now; returns the finished run (its problems say what was left).

    An unexpected exception in a bucket is that bucket's problem line; one outside any
    bucket (or a cancellation) is recorded on the run as FAILED and raised.
    """
    return await _Run(db, policy, summariser, settings, RunTrigger(trigger), dry_run, now).go()


async def _stopped(task: "asyncio.Task[None]") -> None:
    task.cancel()
    await asyncio.wait([task])  # never raises the task's own cancellation into the run


class _Run:
    def __init__(
        self,
        db: TenantDb,
        policy: TenantPolicy,
        summariser: Summariser,
        settings: Settings,
        trigger: RunTrigger,
        dry_run: bool,
        now: datetime | None,
    ) -> None:
        self.db, self.summariser, self.settings = db, summariser, settings
        self.trigger, self.dry_run = trigger, dry_run
        # One clock for the run: `now` (tests control it) advanced by elapsed real time.
        self._start = (now or utcnow()).astimezone(UTC)  # budget days and months are UTC
        self._t0 = time.monotonic()
        self.id = ids.new_id(ids.RUN)
        self.cutoff = self._start - timedelta(days=settings.compaction_age_days)
        self.considered = self.compacted = self.periods = self.events = 0
        self.budget_exceeded = False
        self.problems: list[str] = []
        self.more_problems = 0
        self.failures = 0  # problems other than buckets lost to a concurrent run
        self.entries: list[str] = []
        self.planner = Planner(
            db, settings=settings, policy=policy, remote=summariser.remote, cutoff=self.cutoff
        )
        self.folder = Folder(
            db,
            run_id=self.id,
            settings=settings,
            policy=policy,
            summariser=summariser,
            planner=self.planner,
            clock=self.clock,
        )

    def clock(self) -> datetime:
        return self._start + timedelta(seconds=time.monotonic() - self._t0)

    async def go(self) -> CompactionRunRecord:
        await self._begin()
        heart = asyncio.create_task(self._heartbeat())
        try:
            buckets = await self.planner.buckets()
            self.considered = len(buckets)
            await self._count(buckets_considered=self.considered)
            await self._fan_out(buckets)
        except BaseException as exc:
            await _stopped(heart)
            if isinstance(exc, asyncio.CancelledError):
                self._problem(None, runs.CANCELLED)
            else:
                self._problem(None, f"unexpected error: {type(exc).__name__}")
            try:
                await self._finish(RunStatus.FAILED)
            except Exception:  # the sweep at the next run start marks it instead
                log.exception("compaction run %s: could not record its failure", self.id)
            raise
        await _stopped(heart)
        # A bucket lost to a concurrent run was folded all the same (its line says so): not a
        # failure, or every overlap of two workers would page someone.
        if self.failures == 0:
            status = RunStatus.SUCCEEDED
        else:
            status = RunStatus.PARTIAL if self.compacted else RunStatus.FAILED
        return await self._finish(status)

    # --- the run row

    def _record(self, status: RunStatus, finished_at: datetime | None) -> CompactionRunRecord:
        problems = list(self.problems)
        if self.more_problems:
            problems.append(f"… and {self.more_problems} more problems")
        folder = self.folder
        return CompactionRunRecord(
            id=self.id,
            status=status,
            trigger=self.trigger,
            dry_run=self.dry_run,
            started_at=self._start,
            finished_at=finished_at,
            cutoff=self.cutoff,
            buckets_considered=self.considered,
            buckets_compacted=self.compacted,
            buckets_skipped=self.considered - self.compacted,
            periods=self.periods,
            events_compressed=self.events,
            prompt_tokens=folder.prompt_tokens,
            completion_tokens=folder.completion_tokens,
            budget_exceeded=self.budget_exceeded,
            problems=problems,
            entries_created=list(self.entries),
            summariser=", ".join(sorted(folder.models)) or self.summariser.name,
        )

    async def _begin(self) -> None:
        stale = self._start - timedelta(seconds=self.settings.compaction_stale_run_seconds)
        record, owner = self._record(RunStatus.RUNNING, None), runs.Owner.this_process()
        swept = await runs.write(
            self.db, lambda conn: runs.open_run(conn, record, owner=owner, stale=stale)
        )
        if swept:
            log.warning(
                "tenant %s: %d dead compaction run(s) marked failed (interrupted)",
                self.db.tenant_id,
                swept,
            )

    async def _count(self, **added: int) -> None:
        await runs.write(self.db, lambda conn: runs.count(conn, self.id, at=self.clock(), **added))

    async def _heartbeat(self) -> None:
        """Refresh the run's heartbeat while it runs, so no other run takes it for dead."""
        every = self.settings.compaction_stale_run_seconds / HEARTBEATS_PER_WINDOW
        while True:
            await asyncio.sleep(every)
            try:
                await self._count()
            except Exception:  # a missed beat is retried; the window allows several
                log.warning("compaction run %s: heartbeat not written", self.id, exc_info=True)

    async def _finish(self, status: RunStatus) -> CompactionRunRecord:
        record = self._record(status, self.clock())
        await runs.write(self.db, lambda conn: runs.close_run(conn, record))
        log.info(
            "tenant %s: compaction run %s %s%s: %d/%d buckets, %d entries, %d events, "
            "%d+%d tokens, summariser %s, %d problems",
            self.db.tenant_id,
            self.id,
            status.value,
            " (dry run)" if self.dry_run else "",
            record.buckets_compacted,
            record.buckets_considered,
            record.periods,
            record.events_compressed,
            record.prompt_tokens,
            record.completion_tokens,
            record.summariser,
            len(self.problems) + self.more_problems,
        )
        return record

    def _problem(self, bucket: Bucket | None, why: str, *, failure: bool = True) -> None:
        line = why if bucket is None else f"{bucket.label}: {why}"
        self.failures += failure
        log.warning("tenant %s: compaction run %s: %s", self.db.tenant_id, self.id, line)
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(line)
        else:
            self.more_problems += 1

    # --- the buckets

    async def _fan_out(self, buckets: list[Bucket]) -> None:
        # turns[i] is set once bucket i has reserved its budget (or is done): bucket i+1
        # reserves only after it, so the oldest buckets get the budget first however their
        # reads interleave, and they queue for the gateway's slots in that order. A bucket
        # that waited for a slot before letting the next one reserve left slots idle for a
        # reservation's write each time one came free (docs/compaction.md).
        turns = [asyncio.Event() for _ in buckets]
        pending = iter(enumerate(buckets))

        async def worker() -> None:
            for i, bucket in pending:  # shared: each bucket goes to the next free worker
                await self._bucket(bucket, turns[i - 1] if i else None, turns[i])

        # Twice as many buckets in flight as summaries: while `concurrency` buckets wait on
        # the gateway, the others are read, reserved and folded, so that database work never
        # holds a gateway slot and the run keeps `concurrency` calls going.
        workers = min(2 * self.settings.compaction_concurrency, len(buckets))
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(workers):
                    group.create_task(worker())
        except BaseExceptionGroup as eg:
            if len(eg.exceptions) == 1:
                raise eg.exceptions[0] from None
            raise

    async def _bucket(
        self, bucket: Bucket, after: asyncio.Event | None, turn: asyncio.Event
    ) -> None:
        calls: list[str] = []
        try:
            plan = await self.planner.plan(bucket)
            if after is not None:
                await after.wait()
            if self.dry_run:
                await self.folder.check_budget_dry(plan)
            else:
                calls = await self.folder.reserve(plan)
                turn.set()
                results, usage = await self.folder.summarise(bucket, plan, calls)
                self.entries += await self.folder.fold(plan, results, calls, usage)
        except LostRace as lost:
            self._problem(bucket, str(lost), failure=False)
            return
        except Skip as skip:
            self._problem(bucket, str(skip))
            return
        except BudgetExceeded as exc:
            self.budget_exceeded = True
            self._problem(bucket, f"budget: {exc.message}")
            return
        except Gone:  # another run folded it since it was listed: nothing to consider
            self.considered -= 1
            return
        except Exception as exc:
            # A bug or a surprise (a library error no adapter translated) fails this bucket
            # only: the others go on. The class name alone: its text may quote event text.
            self._problem(bucket, f"unexpected error: {type(exc).__name__}")
            return
        finally:
            turn.set()
        self.compacted += 1
        self.periods += len(plan)
        self.events += sum(len(p.seqs) for p in plan)
