"""GraphQL `compactionRuns` and `runCompaction`: the compactor's runs (app/services/compaction/).

CompactionQuery and CompactionMutation are merged into the schema's Query and Mutation.
"""

from datetime import datetime

import strawberry
from strawberry.types import Info

from app.errors import BudgetExceeded, ExpectedError
from app.graphql.errors import QueryError
from app.graphql.request_context import Context
from app.graphql.types import MemoryEntry, PageInfo, UserError
from app.services import compaction
from app.services.compaction import CompactionRunRecord, RunStatus, RunTrigger
from app.services.records import Page

CompactionStatus = strawberry.enum(RunStatus, name="CompactionStatus")
CompactionTrigger = strawberry.enum(RunTrigger, name="CompactionTrigger")


async def resolve_entries_created(
    root: "CompactionRun", info: Info[Context, None]
) -> list[MemoryEntry]:
    found = await info.context.entry_loader.load_many(root.entry_ids)
    # An entry deleted since (which released its events) is no longer listed.
    return [MemoryEntry.of(e) for e in found if e is not None]


@strawberry.type(description="One compaction pass over one tenant.")
class CompactionRun:
    id: strawberry.ID
    status: CompactionStatus  # type: ignore[valid-type]
    trigger: CompactionTrigger = strawberry.field(  # type: ignore[valid-type]
        description="what started it: the daily cron, the CLI or runCompaction"
    )
    dry_run: bool = strawberry.field(
        description="a dry run only reports: nothing was sent to a model or written"
    )
    started_at: datetime
    finished_at: datetime | None
    cutoff: datetime = strawberry.field(
        description="the age cutoff used: events that occurred before it were eligible"
    )
    buckets_considered: int
    buckets_compacted: int = strawberry.field(description="in a dry run: that would be")
    buckets_skipped: int
    periods: int = strawberry.field(
        description="entries written (in a dry run: that would be); a bucket too large for "
        "one request is split into periods, one entry each"
    )
    events_compressed: int = strawberry.field(description="in a dry run: that would be")
    entries_created: list[MemoryEntry] = strawberry.field(resolver=resolve_entries_created)
    prompt_tokens: int
    completion_tokens: int
    budget_exceeded: bool = strawberry.field(
        description="a bucket was left because the token budget would be exceeded"
    )
    summariser: str = strawberry.field(
        description="the model(s) that answered, or builtin-extractive-v2"
    )
    problems: list[str] = strawberry.field(
        description="one line per skipped or failed bucket: scope, scopeRef and why"
    )
    entry_ids: strawberry.Private[list[str]]

    @classmethod
    def of(cls, r: CompactionRunRecord) -> "CompactionRun":
        return cls(
            id=strawberry.ID(r.id),
            status=r.status,
            trigger=r.trigger,
            dry_run=r.dry_run,
            started_at=r.started_at,
            finished_at=r.finished_at,
            cutoff=r.cutoff,
            buckets_considered=r.buckets_considered,
            buckets_compacted=r.buckets_compacted,
            buckets_skipped=r.buckets_skipped,
            periods=r.periods,
            events_compressed=r.events_compressed,
            prompt_tokens=r.prompt_tokens,
            completion_tokens=r.completion_tokens,
            budget_exceeded=r.budget_exceeded,
            summariser=r.summariser,
            problems=r.problems,
            entry_ids=r.entries_created,
        )


@strawberry.type
class CompactionRunEdge:
    cursor: str
    node: CompactionRun


@strawberry.type
class CompactionRunConnection:
    edges: list[CompactionRunEdge]
    page_info: PageInfo

    @classmethod
    def of(cls, page: Page[CompactionRunRecord]) -> "CompactionRunConnection":
        return cls(
            edges=[
                CompactionRunEdge(cursor=e.cursor, node=CompactionRun.of(e.node))
                for e in page.edges
            ],
            page_info=PageInfo(has_next_page=page.has_next_page, end_cursor=page.end_cursor),
        )


@strawberry.input
class RunCompactionInput:
    dry_run: bool | None = strawberry.field(
        default=False,
        description="report what would be compacted without calling the model or writing",
    )


@strawberry.type
class RunCompactionPayload:
    run: CompactionRun | None
    errors: list[UserError]


async def resolve_compaction_runs(
    info: Info[Context, None], first: int | None = 20, after: str | None = None
) -> CompactionRunConnection:
    try:
        page = await compaction.list_runs(
            info.context.db, first=20 if first is None else first, after=after
        )
    except ExpectedError as exc:
        raise QueryError(exc) from None
    return CompactionRunConnection.of(page)


async def resolve_run_compaction(
    info: Info[Context, None], input: RunCompactionInput | None = None
) -> RunCompactionPayload:
    ctx = info.context
    dry_run = bool(input and input.dry_run)
    try:
        run = await compaction.compact_tenant(
            ctx.container, ctx.db.tenant_id, trigger=RunTrigger.API, dry_run=dry_run
        )
    except ExpectedError as exc:
        return RunCompactionPayload(run=None, errors=[UserError.of(exc)])
    errors = []
    if run.budget_exceeded:
        # The run itself went on (other buckets may have folded); the client learns why
        # some were left in the contract's own terms.
        errors.append(
            UserError.of(
                BudgetExceeded(
                    [], "the token budget would be exceeded: some buckets were not compacted"
                )
            )
        )
    return RunCompactionPayload(run=CompactionRun.of(run), errors=errors)


@strawberry.type
class CompactionQuery:
    compaction_runs: CompactionRunConnection = strawberry.field(
        resolver=resolve_compaction_runs, description="newest first"
    )


@strawberry.type
class CompactionMutation:
    run_compaction: RunCompactionPayload = strawberry.mutation(
        resolver=resolve_run_compaction,
        description="compact this tenant now, with the same rules as the daily run",
    )
