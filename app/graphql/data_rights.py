"""GraphQL entry history (MemoryEntry.history, memoryEntryVersions, restoreMemoryEntry) and
erasure (eraseMemorySubject, eraseMemoryEvent, memoryErasures); merged into Query and
Mutation. Who asks is the request's API key, never an argument."""

from datetime import datetime
from typing import cast

import strawberry
from strawberry.types import Info

from app.errors import ExpectedError
from app.graphql.errors import QueryError
from app.graphql.request_context import Context
from app.graphql.types import (
    MemoryEntry,
    MemoryEntryVersionConnection,
    MemoryScope,
    PageInfo,
    UserError,
)
from app.services.data_rights import erasure, history
from app.services.records import ErasureReceipt, Scope


@strawberry.type(
    name="ErasureReceipt", description="What an erasure removed, in counts; never any content."
)
class ErasureReceiptNode:
    id: strawberry.ID
    erased_at: datetime
    target: str = strawberry.field(description="subject or event")
    scope: MemoryScope  # type: ignore[valid-type]
    scope_ref: str | None
    event_id: strawberry.ID | None = strawberry.field(description="for an event's erasure")
    events: int
    entries: int = strawberry.field(description="entries and folded summaries erased")
    versions: int = strawberry.field(description="earlier entry versions erased")
    released: int = strawberry.field(
        description="events of other subjects released from an erased summary, to be "
        "summarised again by the next compaction run"
    )
    requested_by: str = strawberry.field(description="the API key id that asked (or operator)")


@strawberry.type
class ErasureReceiptEdge:
    cursor: str
    node: ErasureReceiptNode


@strawberry.type
class ErasureReceiptConnection:
    edges: list[ErasureReceiptEdge]
    page_info: PageInfo


@strawberry.type
class ErasurePayload:
    receipt: ErasureReceiptNode | None
    errors: list[UserError]


@strawberry.input
class RestoreMemoryEntryInput:
    version: int = strawberry.field(description="the earlier version to bring back")
    expected_version: int | None = strawberry.field(
        default=None, description="when given, restore only if the entry is at this version"
    )


@strawberry.type
class RestorePayload:
    entry: MemoryEntry | None
    errors: list[UserError]


async def resolve_entry_versions(
    info: Info[Context, None], id: strawberry.ID, first: int | None = 20, after: str | None = None
) -> MemoryEntryVersionConnection:
    try:
        page = await history.versions(
            info.context.db, str(id), first=20 if first is None else first, after=after
        )
    except ExpectedError as exc:
        raise QueryError(exc) from None
    return MemoryEntryVersionConnection.of(page)


async def resolve_erasures(
    info: Info[Context, None], first: int | None = 20, after: str | None = None
) -> ErasureReceiptConnection:
    try:
        page = await erasure.list_erasures(
            info.context.db, first=20 if first is None else first, after=after
        )
    except ExpectedError as exc:
        raise QueryError(exc) from None
    return ErasureReceiptConnection(
        edges=page.edges,  # type: ignore[arg-type]
        page_info=PageInfo(has_next_page=page.has_next_page, end_cursor=page.end_cursor),
    )


async def resolve_restore(
    info: Info[Context, None], id: strawberry.ID, input: RestoreMemoryEntryInput
) -> RestorePayload:
    ctx = info.context
    try:
        entry = await history.restore_entry(
            ctx.db,
            str(id),
            input.version,
            expected_version=input.expected_version,
            by=await ctx.requester(),
        )
    except ExpectedError as exc:
        err = exc if exc.field[:1] == ["id"] else exc.at("input")
        return RestorePayload(entry=None, errors=[UserError.of(err)])
    return RestorePayload(entry=MemoryEntry.of(entry), errors=[])


async def resolve_erase_subject(
    info: Info[Context, None],
    scope: MemoryScope,  # type: ignore[valid-type]
    scope_ref: str | None = None,
) -> ErasurePayload:
    ctx = info.context
    try:
        receipt = await erasure.erase_subject(
            ctx.db, Scope(scope), scope_ref, by=await ctx.requester()
        )
    except ExpectedError as exc:
        return ErasurePayload(receipt=None, errors=[UserError.of(exc)])
    return ErasurePayload(receipt=_receipt(receipt), errors=[])


async def resolve_erase_event(info: Info[Context, None], id: strawberry.ID) -> ErasurePayload:
    ctx = info.context
    try:
        receipt = await erasure.erase_event(ctx.db, str(id), by=await ctx.requester())
    except ExpectedError as exc:
        return ErasurePayload(receipt=None, errors=[UserError.of(exc)])
    return ErasurePayload(receipt=_receipt(receipt), errors=[])


def _receipt(r: ErasureReceipt) -> ErasureReceiptNode:
    # Served as it is: the record has every field of the type (see app/graphql/types.py).
    return cast("ErasureReceiptNode", r)


@strawberry.type
class DataRightsQuery:
    memory_entry_versions: MemoryEntryVersionConnection = strawberry.field(
        resolver=resolve_entry_versions,
        description="earlier versions of an entry by its id, newest first; also of a "
        "deleted entry, until its subject or summary is erased",
    )
    memory_erasures: ErasureReceiptConnection = strawberry.field(
        resolver=resolve_erasures, description="this tenant's erasure receipts, newest first"
    )


@strawberry.type
class DataRightsMutation:
    restore_memory_entry: RestorePayload = strawberry.mutation(
        resolver=resolve_restore,
        description="bring back an earlier version's title, summary, tags and importance as "
        "a new version (a deleted entry comes back under its id)",
    )
    erase_memory_subject: ErasurePayload = strawberry.mutation(
        resolver=resolve_erase_subject,
        description="erase every event and entry of (scope, scopeRef), the summaries folded "
        "from its events and every entry version, in one transaction; leaves a receipt",
    )
    erase_memory_event: ErasurePayload = strawberry.mutation(
        resolver=resolve_erase_event,
        description="erase one event; a summary that folded it is erased and its other "
        "events are released for the next compaction run; leaves a receipt",
    )
