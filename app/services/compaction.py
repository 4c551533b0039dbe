"""The compactor: folds old raw events into summary entries; a bucket folds in one transaction.

It never speaks HTTP: a `Summariser` (app/adapters/summarisers.py) turns event texts into a
summary. The rules are ARCHITECTURE.md's "The compactor", step by step.
"""

import asyncio
import logging
import time
from array import array
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol, TypeVar, cast

from sqlalchemy import and_, func, insert, literal, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from app import ids
from app.adapters import dlp
from app.adapters.gateway import estimate_messages_tokens, estimate_tokens
from app.adapters.summariser import EventText, build_compaction_messages
from app.config import Settings
from app.errors import BudgetExceeded, JetError
from app.services import budget, cursors, entries, limits, validation
from app.services.policies import TenantPolicy
from app.services.records import Edge, EntryIn, EntrySource, Page, Scope
from app.storage.engine import read_transaction
from app.storage.group_commit import GroupCommitter
from app.storage.models import compaction_runs_table as runs_t
from app.storage.models import entry_sources_table as src_t
from app.storage.models import events_table as ev
from app.storage.tenants import TenantDb
from app.storage.types import utcnow

log = logging.getLogger(__name__)

IMPORTANCE = 4
TAG = "compactor"
PAGE_ROWS = 500  # events read per query while planning a bucket
IN_CHUNK = 500  # ids per IN (...) list, well under any database's parameter limit
MAX_PROBLEMS = 1000  # problem lines kept on one run; the rest are counted in a last line
# An entry's tags are "compactor" plus the kinds it folded, within the documented tag limit:
# a period closes before it would fold a kind more than this allows.
MAX_KINDS = limits.TAGS_MAX - 1
# What one event adds to build_compaction_messages' user message besides its body, kind and
# source: `<event n=… at=… kind= source=>`, newlines and `</event>` (77 bytes at most).
EVENT_FRAMING_TOKENS = 20
INTERRUPTED = "interrupted: the run never finished (its worker stopped or crashed)"
CANCELLED = "cancelled: the run was stopped before it finished (job timeout or worker shutdown)"


class RunStatus(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    PARTIAL = "partial"
    FAILED = "failed"


class RunTrigger(StrEnum):
    CRON = "cron"
    CLI = "cli"
    API = "api"


@dataclass(frozen=True, slots=True)
class CompactionRunRecord:
    """One compaction pass over one tenant, as stored in compaction_runs."""

    id: str
    status: RunStatus
    trigger: RunTrigger
    dry_run: bool
    started_at: datetime
    finished_at: datetime | None
    cutoff: datetime  # events that occurred strictly before it were eligible
    buckets_considered: int
    buckets_compacted: int  # a dry run: that would be
    buckets_skipped: int
    periods: int  # entries written (a dry run: that would be)
    events_compressed: int  # a dry run: that would be
    prompt_tokens: int
    completion_tokens: int
    budget_exceeded: bool  # some bucket was left because the token budget would be exceeded
    problems: list[str]  # one line per skipped or failed bucket: "scope scopeRef: why"
    entries_created: list[str]
    summariser: str  # the model(s) that answered, or builtin-extractive-v1


# --------------------------------------------------------------------- the summariser port


@dataclass(frozen=True, slots=True)
class SummaryResult:
    title: str  # one line
    body: str  # Markdown, ending with a provenance line (what was folded, by what)
    model: str  # the model that answered, or builtin-extractive-v1
    prompt_tokens: int
    completion_tokens: int


class SummaryFailed(Exception):
    """These events could not be summarised. str() is safe to record: no text, no key."""

    def __init__(
        self,
        reason: str,
        *,
        model: str | None = None,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
    ) -> None:
        super().__init__(reason)
        self.model = model
        # Usage known to have been spent on the failed attempt; charged to the budget.
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens


class Summariser(Protocol):
    @property
    def name(self) -> str:
        """The model it asks first, or builtin-extractive-v1 (for logs and the run)."""
        ...

    @property
    def remote(self) -> bool:
        """True when event text leaves the service: DLP and the token budget apply."""
        ...

    async def summarise(
        self,
        events: list[EventText],
        *,
        scope_label: str,
        period_label: str,
        max_output_tokens: int,
    ) -> SummaryResult:
        """One summary of `events` (oldest first); SummaryFailed when there is none."""
        ...


# ------------------------------------------------------------------------ the run


@dataclass(frozen=True, slots=True)
class _Bucket:
    scope: Scope
    scope_ref: str | None

    @property
    def label(self) -> str:
        return (
            self.scope.value if self.scope_ref is None else f"{self.scope.value} {self.scope_ref}"
        )


@dataclass(slots=True)
class _Period:
    """Consecutive events of a bucket whose request fits compaction_max_input_tokens."""

    tokens: int  # an upper bound of the request's prompt tokens
    first_at: datetime
    last_at: datetime
    seqs: "array[int]" = field(default_factory=lambda: array("q"))  # 8 bytes per event
    kinds: set[str] = field(default_factory=set)
    # The texts to send, kept only while the bucket fits one period: a bigger bucket is
    # re-read period by period, so memory never holds more than one request's worth.
    texts: list[EventText] | None = None

    @property
    def label(self) -> str:
        first, last = f"{self.first_at:%Y-%m-%d}", f"{self.last_at:%Y-%m-%d}"
        return first if first == last else f"{first} to {last}"


class _Skip(Exception):
    """This bucket is left untouched for the next run; the message is its problem line."""


T = TypeVar("T")


def _raced(missing: int) -> str:
    return f"{missing} of its events were folded by another run meanwhile; left to it"


class _LostRace(_Skip):
    """Another run folded some of this bucket's events after they were read."""


class _Gone(Exception):
    """The bucket has no eligible events any more."""


class _Raced(Exception):
    def __init__(self, missing: int) -> None:
        super().__init__(missing)
        self.missing = missing


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
        self.db, self.policy, self.summariser, self.settings = db, policy, summariser, settings
        self.trigger, self.dry_run = trigger, dry_run
        # One clock for the run: `now` (tests control it) advanced by elapsed real time.
        self._start = (now or utcnow()).astimezone(UTC)  # budget days and months are UTC
        self._t0 = time.monotonic()
        self.id = ids.new_id(ids.RUN)
        self.cutoff = self._start - timedelta(days=settings.compaction_age_days)
        self.considered = self.compacted = self.periods = self.events = 0
        self.prompt_tokens = self.completion_tokens = 0
        self.budget_exceeded = False
        self.problems: list[str] = []
        self.more_problems = 0
        self.failures = 0  # problems other than buckets lost to a concurrent run
        self.entries: list[str] = []
        self.models: set[str] = set()
        self.dry_reserved = 0  # a dry run's would-be reservations, so its budget check adds up
        self.slots = asyncio.Semaphore(settings.compaction_concurrency)  # summaries at once

    def clock(self) -> datetime:
        return self._start + timedelta(seconds=time.monotonic() - self._t0)

    async def go(self) -> CompactionRunRecord:
        await self._begin()
        try:
            buckets = await self._buckets()
            self.considered = len(buckets)
            await self._fan_out(buckets)
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                self._problem(None, CANCELLED)
            else:
                self._problem(None, f"unexpected error: {type(exc).__name__}")
            try:
                await self._finish(RunStatus.FAILED)
            except Exception:  # the sweep at the next run start marks it instead
                log.exception("compaction run %s: could not record its failure", self.id)
            raise
        # A bucket lost to a concurrent run was folded all the same (its line says so): not a
        # failure, or every overlap of two workers would page someone.
        if self.failures == 0:
            status = RunStatus.SUCCEEDED
        else:
            status = RunStatus.PARTIAL if self.compacted else RunStatus.FAILED
        return await self._finish(status)

    # --- the run row

    async def _write(self, op: Callable[[AsyncConnection], Awaitable[T]]) -> T:
        """Run `op` in the tenant's compaction writer (see _writer)."""
        return cast(T, await _writer(self.db).submit(op))

    async def _begin(self) -> None:
        stale = self._start - timedelta(seconds=self.settings.compaction_stale_run_seconds)

        async def op(conn: AsyncConnection) -> int:
            swept = await conn.execute(
                update(runs_t)
                .where(runs_t.c.status == RunStatus.RUNNING.value, runs_t.c.started_at < stale)
                .values(
                    status=RunStatus.FAILED.value, finished_at=self._start, problems=[INTERRUPTED]
                )
            )
            await conn.execute(
                insert(runs_t).values(
                    id=self.id,
                    status=RunStatus.RUNNING.value,
                    trigger=self.trigger.value,
                    dry_run=self.dry_run,
                    started_at=self._start,
                    cutoff=self.cutoff,
                    problems=[],
                    entries_created=[],
                    summariser=self.summariser.name,
                )  # fmt: skip
            )
            return swept.rowcount

        swept = await self._write(op)
        if swept:
            log.warning(
                "tenant %s: %d stale compaction run(s) marked failed (interrupted)",
                self.db.tenant_id, swept,
            )  # fmt: skip

    async def _finish(self, status: RunStatus) -> CompactionRunRecord:
        problems = list(self.problems)
        if self.more_problems:
            problems.append(f"… and {self.more_problems} more problems")
        record = CompactionRunRecord(
            id=self.id, status=status, trigger=self.trigger, dry_run=self.dry_run,
            started_at=self._start, finished_at=self.clock(), cutoff=self.cutoff,
            buckets_considered=self.considered, buckets_compacted=self.compacted,
            buckets_skipped=self.considered - self.compacted, periods=self.periods,
            events_compressed=self.events, prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens, budget_exceeded=self.budget_exceeded,
            problems=problems, entries_created=list(self.entries),
            summariser=", ".join(sorted(self.models)) or self.summariser.name,
        )  # fmt: skip
        values = asdict(record)  # the enums are str: stored as their values
        del values["id"]

        async def op(conn: AsyncConnection) -> None:
            await conn.execute(update(runs_t).where(runs_t.c.id == self.id).values(values))

        await self._write(op)
        log.info(
            "tenant %s: compaction run %s %s%s: %d/%d buckets, %d entries, %d events, "
            "%d+%d tokens, summariser %s, %d problems",
            self.db.tenant_id, self.id, status.value, " (dry run)" if self.dry_run else "",
            record.buckets_compacted, record.buckets_considered, record.periods,
            record.events_compressed, record.prompt_tokens, record.completion_tokens,
            record.summariser, len(self.problems) + self.more_problems,
        )  # fmt: skip
        return record

    def _problem(self, bucket: _Bucket | None, why: str, *, failure: bool = True) -> None:
        line = why if bucket is None else f"{bucket.label}: {why}"
        self.failures += failure
        log.warning("tenant %s: compaction run %s: %s", self.db.tenant_id, self.id, line)
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(line)
        else:
            self.more_problems += 1

    # --- buckets

    async def _buckets(self) -> list[_Bucket]:
        """Buckets with enough old uncompressed events, oldest first (partial index)."""
        n = func.count()
        stmt = (
            select(ev.c.scope, ev.c.scope_ref)
            .where(ev.c.compressed_at.is_(None), ev.c.occurred_at < self.cutoff)
            .group_by(ev.c.scope, ev.c.scope_ref)
            .having(n >= self.settings.compaction_min_events)
            .order_by(func.min(ev.c.occurred_at), ev.c.scope, ev.c.scope_ref)
        )
        async with read_transaction(self.db.engine) as conn:
            return [_Bucket(Scope(r.scope), r.scope_ref) for r in await conn.execute(stmt)]

    async def _fan_out(self, buckets: list[_Bucket]) -> None:
        # turns[i] is set once bucket i holds a gateway slot (or is done): bucket i+1
        # reserves budget and takes a slot only after it, so the oldest buckets get the
        # budget and the gateway first however their reads interleave.
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
        self, bucket: _Bucket, after: asyncio.Event | None, turn: asyncio.Event
    ) -> None:
        calls: list[str] = []
        try:
            plan = await self._plan(bucket)
            if after is not None:
                await after.wait()
            if self.dry_run:
                await self._check_budget_dry(plan)
            else:
                calls = await self._reserve(plan)
                results, usage = await self._summarise(bucket, plan, calls, turn)
                await self._fold(plan, results, calls, usage)
        except _LostRace as lost:
            self._problem(bucket, str(lost), failure=False)
            return
        except _Skip as skip:
            self._problem(bucket, str(skip))
            return
        except BudgetExceeded as exc:
            self.budget_exceeded = True
            self._problem(bucket, f"budget: {exc.message}")
            return
        except _Gone:  # another run folded it since it was listed: nothing to consider
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

    # --- step 2: plan the periods (streamed; DLP before any byte leaves)

    async def _plan(self, bucket: _Bucket) -> list[_Period]:
        limit = self.settings.compaction_max_input_tokens
        findings: Counter[str] = Counter()
        label = self._scope_label(bucket, findings)
        base = _request_base_tokens(label)
        periods: list[_Period] = []
        current: _Period | None = None
        async for rows in self._pages(bucket):
            for row in rows:
                text = self._event_text(row, findings)
                if findings and self.policy.dlp_mode is dlp.DlpMode.BLOCK:
                    continue  # blocked; keep counting what DLP finds for the problem line
                tokens = _event_tokens(text)
                if base + tokens > limit:
                    raise _Skip(
                        f"event {row.id} alone needs ~{base + tokens:,} prompt tokens, over "
                        f"compaction_max_input_tokens ({limit:,}); it is never truncated"
                    )
                if current is None or (
                    current.tokens + tokens > limit
                    or (row.kind not in current.kinds and len(current.kinds) >= MAX_KINDS)
                ):
                    if current is not None:
                        periods.append(current)
                        periods[0].texts = None  # more than one request: re-read each later
                    texts: list[EventText] | None = None if periods else []
                    current = _Period(base, row.occurred_at, row.occurred_at, texts=texts)
                current.tokens += tokens
                current.last_at = row.occurred_at
                current.seqs.append(row.seq)
                current.kinds.add(row.kind)
                if current.texts is not None:
                    current.texts.append(text)
        if findings and self.policy.dlp_mode is dlp.DlpMode.BLOCK:
            counts = ", ".join(f"{n} {kind}" for kind, n in findings.most_common())
            raise _Skip(f"blocked by DLP: {counts}")
        if current is not None:
            periods.append(current)
        if not periods:
            raise _Gone
        if findings:
            log.info(
                "tenant %s: %s: DLP redacted %s before sending",
                self.db.tenant_id, bucket.label, dict(findings),
            )  # fmt: skip
        return periods

    async def _pages(self, bucket: _Bucket) -> AsyncIterator[list[Any]]:
        """The bucket's eligible events, oldest first, a page per query."""
        after: tuple[datetime, int] | None = None
        while True:
            conds = [*self._eligible(bucket)]
            if after is not None:
                at, seq = after
                conds.append(
                    or_(ev.c.occurred_at > at, and_(ev.c.occurred_at == at, ev.c.seq > seq))
                )
            stmt = (
                select(ev.c.seq, ev.c.id, ev.c.occurred_at, ev.c.kind, ev.c.body, ev.c.source)
                .where(*conds)
                .order_by(ev.c.occurred_at, ev.c.seq)
                .limit(PAGE_ROWS)
            )
            async with read_transaction(self.db.engine) as conn:
                rows = list(await conn.execute(stmt))
            if rows:
                yield rows
            if len(rows) < PAGE_ROWS:
                return
            after = (rows[-1].occurred_at, rows[-1].seq)

    def _eligible(self, bucket: _Bucket) -> list[Any]:
        ref = (
            ev.c.scope_ref.is_(None)
            if bucket.scope_ref is None
            else ev.c.scope_ref == bucket.scope_ref
        )
        return [
            ev.c.scope == bucket.scope.value,
            ref,
            ev.c.compressed_at.is_(None),
            ev.c.occurred_at < self.cutoff,
        ]

    def _scope_label(self, bucket: _Bucket, findings: Counter[str]) -> str:
        if not self.summariser.remote:
            return bucket.label
        return self._redact(bucket.label, findings)

    def _event_text(self, row: Any, findings: Counter[str]) -> EventText:
        body, source = row.body, row.source
        if self.summariser.remote:  # nothing leaves the service with the built-in one
            body = self._redact(body, findings)
            source = None if source is None else self._redact(source, findings)
        return EventText(occurred_at=row.occurred_at, kind=row.kind, body=body, source=source)

    def _redact(self, text: str, findings: Counter[str]) -> str:
        result = dlp.scan(text, mode=self.policy.dlp_mode, custom_patterns=self.policy.dlp_patterns)
        findings.update(result.counts())
        return result.text

    # --- the budget

    async def _check_budget_dry(self, plan: list[_Period]) -> None:
        if not self.summariser.remote:
            return
        need = sum(self._estimates(plan))
        async with read_transaction(self.db.engine) as conn:
            await budget.check(conn, self.policy, need=need + self.dry_reserved, at=self.clock())
        self.dry_reserved += need

    def _estimates(self, plan: list[_Period]) -> list[int]:
        """Per call: its prompt's upper bound plus the most it may answer."""
        return [p.tokens + self.settings.compaction_max_output_tokens for p in plan]

    def _unfinished(self, period: _Period) -> budget.Usage:
        """A call stopped mid-flight (cancelled, or an unexpected error): the gateway may
        have processed and billed it, so it stays charged at its estimate, as failed."""
        max_output = self.settings.compaction_max_output_tokens
        return budget.Usage("failed", self.summariser.name, period.tokens, max_output)

    async def _reserve(self, plan: list[_Period]) -> list[str]:
        """In one write transaction: check the budget, reserve one call per period."""
        if not self.summariser.remote:
            return []
        estimates, at = self._estimates(plan), self.clock()
        return await self._write(
            lambda conn: budget.reserve(
                conn,
                self.policy,
                estimates=estimates,
                model=self.summariser.name,
                run_id=self.id,
                at=at,
            )  # fmt: skip
        )

    async def _settle(self, calls: Sequence[str], usage: Sequence[budget.Usage]) -> None:
        """Settle a bucket's calls on their own (its fold settles them in its transaction)."""
        if calls:
            await self._write(lambda conn: budget.settle(conn, calls, usage))
            self._charge(usage)

    def _charge(self, usage: Sequence[budget.Usage]) -> None:
        for used in usage:
            self.prompt_tokens += used.prompt_tokens
            self.completion_tokens += used.completion_tokens

    # --- step 3: summarise each period

    async def _summarise(
        self, bucket: _Bucket, plan: list[_Period], calls: list[str], turn: asyncio.Event
    ) -> tuple[list[tuple[SummaryResult, EntryIn]], list[budget.Usage]]:
        """A summary and its entry per period, and each call's usage; _Skip at the first
        failure (what was spent is settled first)."""
        label = self._scope_label(bucket, Counter())
        done: list[tuple[SummaryResult, EntryIn]] = []
        usage: list[budget.Usage] = []
        try:
            async with self.slots:
                turn.set()  # the next bucket may reserve and wait for a slot now
                for period in plan:
                    done.append(await self._summarise_period(bucket, label, period, usage))
        except BaseException:
            await self._settle(calls, usage)
            raise
        return done, usage

    async def _summarise_period(
        self, bucket: _Bucket, label: str, period: _Period, usage: list[budget.Usage]
    ) -> tuple[SummaryResult, EntryIn]:
        """One period's summary and the entry it becomes; its call's usage goes to `usage`."""
        texts = period.texts if period.texts is not None else await self._reread(period)
        try:
            result = await self.summariser.summarise(
                texts,
                scope_label=label,
                period_label=period.label,
                max_output_tokens=self.settings.compaction_max_output_tokens,
            )
        except SummaryFailed as exc:
            model = exc.model or self.summariser.name
            usage.append(budget.Usage("failed", model, exc.prompt_tokens, exc.completion_tokens))
            raise _Skip(str(exc)) from None
        except BaseException:
            # Cancelled (job timeout, worker shutdown) or an unexpected error mid-call: the
            # call was made, so it is settled, never released as if it had not been.
            usage.append(self._unfinished(period))
            raise
        usage.append(
            budget.Usage("done", result.model, result.prompt_tokens, result.completion_tokens)
        )
        entry = EntryIn(
            scope=bucket.scope, scope_ref=bucket.scope_ref,
            title=_titled(result.title, period.label), summary=result.body,
            tags=[TAG, *sorted(period.kinds)], importance=IMPORTANCE, source=EntrySource.COMPACTOR,
        )  # fmt: skip
        try:
            validation.check_entry(entry, by_compactor=True)
        except JetError as exc:
            raise _Skip(f"unusable summary from {result.model}: {exc.message}") from None
        return result, entry

    async def _reread(self, period: _Period) -> list[EventText]:
        """A period's texts, read again (a bucket bigger than one period is not kept)."""
        rows: list[Any] = []
        async with read_transaction(self.db.engine) as conn:
            for i in range(0, len(period.seqs), IN_CHUNK):
                chunk = list(period.seqs[i : i + IN_CHUNK])
                rows += await conn.execute(
                    select(
                        ev.c.seq, ev.c.id, ev.c.occurred_at, ev.c.kind, ev.c.body, ev.c.source
                    ).where(ev.c.seq.in_(chunk), ev.c.compressed_at.is_(None))
                )
        if len(rows) != len(period.seqs):
            raise _LostRace(_raced(len(period.seqs) - len(rows)))
        rows.sort(key=lambda r: (r.occurred_at, r.seq))
        unused: Counter[str] = Counter()
        return [self._event_text(r, unused) for r in rows]

    # --- steps 4 and 5: the entries, their provenance and the events, in one transaction

    async def _fold(
        self,
        plan: list[_Period],
        results: list[tuple[SummaryResult, EntryIn]],
        calls: list[str],
        usage: list[budget.Usage],
    ) -> None:
        at = self.clock()

        async def op(conn: AsyncConnection) -> list[str]:
            created: list[str] = []
            for period, (_, entry_in) in zip(plan, results, strict=True):
                entry = await entries.insert_entry(conn, entry_in, now=at)
                marked = 0
                for i in range(0, len(period.seqs), IN_CHUNK):
                    chunk = list(period.seqs[i : i + IN_CHUNK])
                    done = await conn.execute(
                        update(ev)
                        .where(ev.c.seq.in_(chunk), ev.c.compressed_at.is_(None))
                        .values(compressed_at=at, compressed_into=entry.id)
                    )
                    marked += done.rowcount
                if marked != len(period.seqs):
                    raise _Raced(len(period.seqs) - marked)  # rolls this bucket back
                position = func.row_number().over(order_by=(ev.c.occurred_at, ev.c.seq)) - 1
                await conn.execute(
                    insert(src_t).from_select(
                        ["entry_id", "event_id", "position"],
                        select(literal(entry.id), ev.c.id, position).where(
                            ev.c.compressed_into == entry.id
                        ),
                    )
                )
                created.append(entry.id)
            await budget.settle(conn, calls, usage)
            return created

        try:
            created = await self._write(op)
        except _Raced as raced:
            # Another run folded some of these events after they were read.
            await self._settle(calls, usage)
            raise _LostRace(_raced(raced.missing)) from None
        self._charge(usage)
        self.entries.extend(created)
        self.models.update(result.model for result, _ in results)


_Op = Callable[[AsyncConnection], Awaitable[object]]


async def _apply(conn: AsyncConnection, ops: Sequence[_Op]) -> list[object | BaseException]:
    # An op that raises (a budget stop, a lost race) aborts the shared transaction; the
    # committer then retries each op alone, so it fails alone. Ops are safe to rerun.
    return [await op(conn) for op in ops]


def _writer(db: TenantDb) -> GroupCommitter[_Op, object]:
    """The tenant database's compaction writer. Concurrent buckets' writes share one
    transaction (group commit) instead of contending for SQLite's write lock from several
    connections, each waiting in busy-handler sleeps."""
    writer = db.compaction_writer
    if writer is None:
        writer = GroupCommitter[_Op, object](db.engine, _apply)
        db.compaction_writer = writer
    return cast(GroupCommitter[_Op, object], writer)


def _request_base_tokens(scope_label: str) -> int:
    """An upper bound of a compaction request's prompt tokens before its events."""
    longest_period = "0000-00-00 to 0000-00-00"
    messages = build_compaction_messages([], scope_label=scope_label, period_label=longest_period)
    return estimate_messages_tokens(messages) + 2  # "Events: 0" grows by up to 7 digits


def _event_tokens(event: EventText) -> int:
    """An upper bound of what one event adds to the request (a sum of ceilings is at least
    the ceiling of the sum, so the period's total stays an upper bound too)."""
    return (
        estimate_tokens(event.body)
        + estimate_tokens(event.kind)
        + estimate_tokens(event.source or "")
        + EVENT_FRAMING_TOKENS
    )


def _titled(title: str, period_label: str) -> str:
    """The summary's title, naming its period whole: the model's words give way, never it."""
    title = " ".join(title.split())
    if period_label in title:
        return title
    suffix = f" — {period_label}"
    room = limits.TITLE_MAX_CHARS - len(suffix)
    if len(title) > room:
        title = title[: room - 1].rstrip() + "…"
    return title + suffix


# ------------------------------------------------------------------------ reading runs


def _record(row: Any) -> CompactionRunRecord:
    m = dict(row._mapping)
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
