"""GraphQL `MemoryChange`, a change event as every surface sends it
(app/services/changes/change_events.py), never the memory text, and the `memoryChanged`
subscription (app/services/changes/subscribers.py). The object named by objectId is read
with memoryEntry/memoryEvent."""

from collections.abc import AsyncGenerator
from datetime import datetime
from typing import Any

import strawberry
from strawberry.types import Info

from app.errors import ExpectedError, Forbidden
from app.graphql.errors import QueryError
from app.graphql.request_context import Context
from app.graphql.types import MemoryScope
from app.services.changes import change_events
from app.services.records import Scope


@strawberry.type(description="One change to this tenant's memory, in the outbox's order.")
class MemoryChange:
    id: strawberry.ID = strawberry.field(
        description="grows with every change of this tenant: resume after it"
    )
    type: str = strawberry.field(
        description="event.appended, entry.created, entry.updated, entry.deleted or "
        "compaction.finished"
    )
    time: datetime
    scope: MemoryScope | None = strawberry.field(  # type: ignore[valid-type]
        description="absent for compaction.finished"
    )
    scope_ref: str | None
    object_id: str = strawberry.field(description="the event, entry or compaction run")
    version: int = strawberry.field(description="the entry's version (1 for others)")

    @classmethod
    def of(cls, payload: dict[str, Any]) -> "MemoryChange":
        """From the payload form (app.services.changes.change_events.Change.payload)."""
        return cls(
            id=strawberry.ID(payload["id"]),
            type=payload["type"],
            time=datetime.fromisoformat(payload["time"]),
            scope=payload["scope"],
            scope_ref=payload["scopeRef"],
            object_id=payload["objectId"],
            version=payload["version"],
        )

    @classmethod
    def of_change(cls, change: change_events.Change) -> "MemoryChange":
        """From the change itself: the same fields as `of(change.payload())`, without the
        time's round trip through text (one per change and subscriber)."""
        return cls(
            id=strawberry.ID(str(change.id)),
            type=change.type.value,
            time=change.time,
            scope=None if change.scope is None else change.scope.value,
            scope_ref=change.scope_ref,
            object_id=change.object_id,
            version=change.version,
        )


async def resolve_memory_changed(
    info: Info[Context, None],
    scope: MemoryScope | None = None,  # type: ignore[valid-type]
    scope_ref: str | None = None,
    types: list[str] | None = None,
    after: strawberry.ID | None = None,
) -> AsyncGenerator[MemoryChange, None]:
    ctx = info.context
    feeds = getattr(ctx.container, "feeds", None)
    if ctx.tenant_id is None or ctx.api_key is None or feeds is None:
        raise QueryError(Forbidden([], "subscriptions are served over the websocket only"))
    try:
        wanted = change_events.change_filter(
            types or [], Scope(scope) if scope is not None else None, scope_ref
        )
        cursor = change_events.parse_cursor(after)
        stream = feeds.follow(ctx.tenant_id, ctx.api_key, wanted, cursor)
        first = await anext(stream, None)
    except ExpectedError as exc:
        raise QueryError(exc) from None
    try:
        change = first
        while change is not None:
            yield MemoryChange.of_change(change)
            change = await anext(stream, None)
    finally:
        await stream.aclose()


@strawberry.type(name="Subscription")
class ChangeSubscription:
    memory_changed: AsyncGenerator[MemoryChange, None] = strawberry.subscription(
        resolver=resolve_memory_changed,
        description="this tenant's changes as they are committed, by any process; `after` "
        "(a change id) resumes after it, absent: from now on. Over graphql-transport-ws at "
        "/graphql, with the API key in connection_init's payload (authorization: Bearer …)",
    )
