"""Folding one planned bucket: reserve the token budget, summarise each period through the
summariser (the gateway, or the built-in one), then write its entries, their provenance and
the events' compressed marks in one transaction (steps 3 to 5)."""

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime

from sqlalchemy import func, insert, literal, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from app.adapters.summarisers.base import EventText, Summariser, SummaryFailed, SummaryResult
from app.config import Settings
from app.errors import ExpectedError
from app.services import budget, entries, limits, validation
from app.services.compaction import runs
from app.services.compaction.planning import (
    IN_CHUNK,
    Bucket,
    LostRace,
    Period,
    Planner,
    Skip,
    summary_text_tokens,
)
from app.services.policies import TenantPolicy
from app.services.records import EntryIn, EntrySource
from app.storage.models import entry_sources_table as src_t
from app.storage.models import events_table as ev
from app.storage.tenants import TenantDb
from app.storage.transactions import read_transaction

IMPORTANCE = 4
TAG = "compactor"

Summaries = list[tuple[SummaryResult, EntryIn]]


class _Raced(Exception):
    def __init__(self, missing: int) -> None:
        super().__init__(missing)
        self.missing = missing


class Folder:
    """Folds the buckets of one run; keeps the tokens its calls spent."""

    def __init__(
        self,
        db: TenantDb,
        *,
        run_id: str,
        settings: Settings,
        policy: TenantPolicy,
        summariser: Summariser,
        planner: Planner,
        clock: Callable[[], datetime],
    ) -> None:
        self.db, self.run_id, self.settings, self.policy = db, run_id, settings, policy
        self.summariser, self.planner, self.clock = summariser, planner, clock
        self.prompt_tokens = self.completion_tokens = 0
        self.models: set[str] = set()
        self.dry_reserved = 0  # a dry run's would-be reservations, so its budget check adds up
        self.slots = asyncio.Semaphore(settings.compaction_concurrency)  # summaries at once

    # --- the budget

    async def check_budget_dry(self, plan: list[Period]) -> None:
        """A dry run's budget check: BudgetExceeded when the calls would not be made."""
        if not self.summariser.remote:
            return
        need = sum(self._estimates(plan))
        async with read_transaction(self.db.engine) as conn:
            await budget.check(conn, self.policy, need=need + self.dry_reserved, at=self.clock())
        self.dry_reserved += need

    async def reserve(self, plan: list[Period]) -> list[str]:
        """In one write transaction: check the budget, reserve one call per period."""
        if not self.summariser.remote:
            return []
        estimates, at = self._estimates(plan), self.clock()
        return await runs.write(
            self.db,
            lambda conn: budget.reserve(
                conn,
                self.policy,
                estimates=estimates,
                model=self.summariser.name,
                run_id=self.run_id,
                at=at,
            ),
        )

    def _estimates(self, plan: list[Period]) -> list[int]:
        """Per call: its prompt's upper bound plus the most it may answer."""
        return [p.tokens + summary_text_tokens(self.settings) for p in plan]

    def _unfinished(self, period: Period) -> budget.Usage:
        """A call stopped mid-flight (cancelled, or an unexpected error): the gateway may
        have processed and billed it, so it stays charged at its estimate, as failed."""
        max_output = summary_text_tokens(self.settings)
        return budget.Usage("failed", self.summariser.name, period.tokens, max_output)

    async def _settle(self, calls: Sequence[str], usage: Sequence[budget.Usage]) -> None:
        """Settle a bucket's calls on their own (its fold settles them in its transaction)."""
        if not calls:
            return
        prompt, completion = _totals(usage)

        async def op(conn: AsyncConnection) -> None:
            await budget.settle(conn, calls, usage)
            await runs.count(
                conn,
                self.run_id,
                at=self.clock(),
                prompt_tokens=prompt,
                completion_tokens=completion,
            )

        await runs.write(self.db, op)
        self._charge(usage)

    def _charge(self, usage: Sequence[budget.Usage]) -> None:
        prompt, completion = _totals(usage)
        self.prompt_tokens += prompt
        self.completion_tokens += completion

    # --- step 3: summarise each period

    async def summarise(
        self, bucket: Bucket, plan: list[Period], calls: list[str]
    ) -> tuple[Summaries, list[budget.Usage]]:
        """A summary and its entry per period, and each call's usage; Skip at the first
        failure (what was spent is settled first)."""
        label = self.planner.scope_label(bucket, Counter())
        done: Summaries = []
        usage: list[budget.Usage] = []
        upcoming: asyncio.Task[list[EventText]] | None = None
        try:
            # A period's texts (kept from planning, or read and redacted again) are ready
            # before its call, the next one's fetched while the call is in flight: that
            # work never holds a gateway slot idle.
            texts = await self.planner.texts(plan[0])
            async with self.slots:
                for k, period in enumerate(plan):
                    if k + 1 < len(plan):
                        upcoming = asyncio.create_task(self.planner.texts(plan[k + 1]))
                    done.append(await self._summarise_period(bucket, label, period, texts, usage))
                    if upcoming is not None:
                        texts, upcoming = await upcoming, None
        except BaseException:
            if upcoming is not None:
                upcoming.cancel()
                with contextlib.suppress(BaseException):
                    await upcoming
            await self._settle(calls, usage)
            raise
        return done, usage

    async def _summarise_period(
        self,
        bucket: Bucket,
        label: str,
        period: Period,
        texts: list[EventText],
        usage: list[budget.Usage],
    ) -> tuple[SummaryResult, EntryIn]:
        """One period's summary and the entry it becomes; its call's usage goes to `usage`."""
        try:
            result = await self.summariser.summarise(
                texts,
                scope_label=label,
                period_label=period.label,
                max_output_tokens=summary_text_tokens(self.settings),
            )
        except SummaryFailed as exc:
            model = exc.model or self.summariser.name
            usage.append(budget.Usage("failed", model, exc.prompt_tokens, exc.completion_tokens))
            raise Skip(str(exc)) from None
        except BaseException:
            # Cancelled (job timeout, worker shutdown) or an unexpected error mid-call: the
            # call was made, so it is settled, never released as if it had not been.
            usage.append(self._unfinished(period))
            raise
        usage.append(
            budget.Usage("done", result.model, result.prompt_tokens, result.completion_tokens)
        )
        entry = EntryIn(
            scope=bucket.scope,
            scope_ref=bucket.scope_ref,
            title=titled(result.title, period.label),
            summary=result.body,
            tags=_tags(period.kinds, result.tags),
            importance=IMPORTANCE,
            source=EntrySource.COMPACTOR,
        )
        try:
            validation.check_entry(entry, by_compactor=True)
        except ExpectedError as exc:
            raise Skip(f"unusable summary from {result.model}: {exc.message}") from None
        return result, entry

    # --- steps 4 and 5: the entries, their provenance and the events, in one transaction

    async def fold(
        self,
        plan: list[Period],
        results: Summaries,
        calls: list[str],
        usage: list[budget.Usage],
    ) -> list[str]:
        """Write the bucket's entries and mark its events, and count them on the run, in
        one transaction: a run killed later still shows what it folded. Returns the ids."""
        at = self.clock()
        prompt, completion = _totals(usage)

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
            await runs.count(
                conn,
                self.run_id,
                at=at,
                buckets_compacted=1,
                periods=len(plan),
                events_compressed=sum(len(p.seqs) for p in plan),
                prompt_tokens=prompt,
                completion_tokens=completion,
            )
            return created

        try:
            created = await runs.write(self.db, op)
        except _Raced as raced:
            # Another run folded some of these events after they were read.
            await self._settle(calls, usage)
            raise LostRace(raced.missing) from None
        self._charge(usage)
        self.models.update(result.model for result, _ in results)
        return created


def _tags(kinds: set[str], names: Sequence[str]) -> list[str]:
    """ "compactor", the kinds it folded, then the names it mentions while tags are left."""
    tags = [TAG, *sorted(kinds)]
    tags += [n for n in names if n not in tags][: limits.TAGS_MAX - len(tags)]
    return tags


def _totals(usage: Sequence[budget.Usage]) -> tuple[int, int]:
    """Prompt and completion tokens of these calls."""
    return sum(u.prompt_tokens for u in usage), sum(u.completion_tokens for u in usage)


def titled(title: str, period_label: str) -> str:
    """The summary's title, naming its period whole: the model's words give way, never it."""
    title = " ".join(title.split())
    if period_label in title:
        return title
    suffix = f" — {period_label}"
    room = limits.TITLE_MAX_CHARS - len(suffix)
    if len(title) > room:
        title = title[: room - 1].rstrip() + "…"
    return title + suffix
