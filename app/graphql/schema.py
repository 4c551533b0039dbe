"""The schema: Query and Mutation resolvers, each one call into app.services.

Expected failures (app.errors) of a mutation come back in its payload's `errors`; of a
query, as a GraphQL error with `extensions.code` and `extensions.field`. Anything else is
masked for the client and logged with the request id (app/graphql/extensions.py).
"""

import logging
from functools import cache
from typing import Any

import strawberry
from graphql import GraphQLError
from graphql.validation import NoSchemaIntrospectionCustomRule
from strawberry.extensions import MaxAliasesLimiter, QueryDepthLimiter
from strawberry.tools import merge_types
from strawberry.types import ExecutionContext, Info

from app.config import Settings
from app.errors import ExpectedError, ExpectedErrors, Unavailable
from app.graphql import fastpath
from app.graphql.changes import ChangeSubscription
from app.graphql.compaction import CompactionMutation, CompactionQuery
from app.graphql.data_rights import DataRightsMutation, DataRightsQuery
from app.graphql.errors import QueryError
from app.graphql.extensions import operation_extensions
from app.graphql.memory_context import ContextQuery
from app.graphql.request_context import Context
from app.graphql.scopes import ScopesQuery
from app.graphql.selected_arguments import check_selected_arguments
from app.graphql.types import (
    SCALAR_OVERRIDES,
    AppendMemoryEventInput,
    AppendMemoryEventPayload,
    AppendMemoryEventsPayload,
    CreateMemoryEntryInput,
    DeleteMemoryEntryPayload,
    MemoryEntry,
    MemoryEntryConnection,
    MemoryEntryFilter,
    MemoryEntryPayload,
    MemoryEvent,
    MemoryEventConnection,
    MemoryEventFilter,
    UpdateMemoryEntryInput,
    UserError,
)
from app.graphql.webhooks import WebhookMutation, WebhookQuery
from app.services import entries, events
from app.services.limits import GRAPHQL_MAX_ALIASES, GRAPHQL_MAX_DEPTH, GRAPHQL_MAX_TOKENS
from app.services.records import (
    EntryFilter,
    EntryIn,
    EntryPatch,
    EntrySource,
    EventFilter,
    EventIn,
)

log = logging.getLogger(__name__)
CtxInfo = Info[Context, None]


# Services name a list's filter fields by the domain's names; GraphQL reports them under
# its `filter` argument: these as one `filter.<name>` segment, named so in the message too.
_FILTER_DOTTED = frozenset({"search", "occurredAfter", "occurredBefore"})


def _query_error(exc: ExpectedError) -> QueryError:
    name = ".".join(exc.field)
    if name in _FILTER_DOTTED:
        exc = exc.renamed([f"filter.{name}"], f"filter.{name}")
    elif exc.field[:1] in (["minImportance"], ["tags"], ["kinds"]):
        exc = exc.at("filter")
    return QueryError(exc)


def _user_errors(exc: ExpectedError | ExpectedErrors) -> list[UserError]:
    errs = exc.errors if isinstance(exc, ExpectedErrors) else [exc]
    return [UserError.of(_with_input(e)) for e in errs]


def _with_input(exc: ExpectedError) -> ExpectedError:
    """Field paths of a mutation's input start at "input" (a batch's as a whole: "input")."""
    return exc if exc.field[:1] == ["id"] else exc.at("input")


def _event_in(i: AppendMemoryEventInput) -> EventIn:
    return EventIn(
        scope=i.scope,
        scope_ref=i.scope_ref,
        kind=i.kind,
        body=i.body,
        source=i.source,
        source_ref=i.source_ref,
        occurred_at=i.occurred_at,
        idempotency_key=i.idempotency_key,
    )


# Resolvers are module functions passed to strawberry.field/mutation(resolver=...): the
# decorator form with arguments (`@strawberry.field(description=...)`) is untyped for mypy.
# Query and Mutation list their fields in contract order.


async def resolve_memory_entries(
    info: CtxInfo,
    filter: MemoryEntryFilter | None = None,
    first: int | None = 20,
    after: str | None = None,
) -> MemoryEntryConnection:
    f = filter or MemoryEntryFilter()
    flt = EntryFilter(
        scope=f.scope,
        scope_ref=f.scope_ref,
        tags=f.tags,
        search=f.search,
        min_importance=f.min_importance,
        sources=f.sources,
        min_score=f.min_score,
        keyword_only=f.keyword_only,
    )
    try:
        page = await entries.list_entries(
            info.context.db, flt, first=20 if first is None else first, after=after
        )
    except ExpectedError as exc:
        raise _query_error(exc) from None
    return MemoryEntryConnection.of(page)


async def resolve_memory_entry(info: CtxInfo, id: strawberry.ID) -> MemoryEntry | None:
    entry = await entries.get_entry(info.context.db, str(id))
    return None if entry is None else MemoryEntry.of(entry)


async def resolve_memory_events(
    info: CtxInfo,
    filter: MemoryEventFilter | None = None,
    first: int | None = 50,
    after: str | None = None,
) -> MemoryEventConnection:
    f = filter or MemoryEventFilter()
    flt = EventFilter(
        scope=f.scope,
        scope_ref=f.scope_ref,
        kinds=f.kinds,
        occurred_after=f.occurred_after,
        occurred_before=f.occurred_before,
        compressed=f.compressed,
        search=f.search,
    )
    try:
        page = await events.list_events(
            info.context.db, flt, first=50 if first is None else first, after=after
        )
    except ExpectedError as exc:
        raise _query_error(exc) from None
    return MemoryEventConnection.of(page)


async def resolve_memory_event(info: CtxInfo, id: strawberry.ID) -> MemoryEvent | None:
    event = await events.get_event(info.context.db, str(id))
    return None if event is None else MemoryEvent.of(event)


@strawberry.type
class Query:
    memory_entries: MemoryEntryConnection = strawberry.field(
        resolver=resolve_memory_entries,
        description="without filter.search: most recently updated first; "
        "with it: most relevant first",
    )
    memory_entry: MemoryEntry | None = strawberry.field(resolver=resolve_memory_entry)
    memory_events: MemoryEventConnection = strawberry.field(
        resolver=resolve_memory_events,
        description="newest occurredAt first (most relevant first when filter.search is given)",
    )
    memory_event: MemoryEvent | None = strawberry.field(resolver=resolve_memory_event)


async def resolve_append_memory_event(
    info: CtxInfo, input: AppendMemoryEventInput
) -> AppendMemoryEventPayload:
    ctx = info.context
    try:
        result = await events.append_event(
            ctx.db, _event_in(input), max_rows=ctx.container.settings.group_commit_max_rows
        )
    except (ExpectedError, ExpectedErrors) as exc:
        errs = exc.errors if isinstance(exc, ExpectedErrors) else [exc]
        return AppendMemoryEventPayload(
            event=None, replayed=False, errors=[UserError.of(_with_input(e)) for e in errs]
        )
    return AppendMemoryEventPayload(
        event=MemoryEvent.of(result.event), replayed=result.replayed, errors=[]
    )


async def resolve_append_memory_events(
    info: CtxInfo, input: list[AppendMemoryEventInput]
) -> AppendMemoryEventsPayload:
    ctx = info.context
    try:
        results = await events.append_events(
            ctx.db,
            [_event_in(i) for i in input],
            max_rows=ctx.container.settings.group_commit_max_rows,
        )
    except (ExpectedError, ExpectedErrors) as exc:
        return AppendMemoryEventsPayload(events=[], errors=_user_errors(exc))
    return AppendMemoryEventsPayload(events=[MemoryEvent.of(r.event) for r in results], errors=[])


async def resolve_create_memory_entry(
    info: CtxInfo, input: CreateMemoryEntryInput
) -> MemoryEntryPayload:
    entry_in = EntryIn(
        scope=input.scope,
        scope_ref=input.scope_ref,
        title=input.title,
        summary=input.summary,
        tags=list(input.tags or []),
        importance=3 if input.importance is None else input.importance,
        source=input.source or EntrySource.MANUAL,
    )
    check_selected_arguments(info)  # before the write: never a written entry nulled
    try:
        entry = await entries.create_entry(info.context.db, entry_in)
    except ExpectedError as exc:
        return MemoryEntryPayload(entry=None, errors=[UserError.of(_with_input(exc))])
    return MemoryEntryPayload(entry=MemoryEntry.of(entry), errors=[])


async def resolve_update_memory_entry(
    info: CtxInfo, id: strawberry.ID, input: UpdateMemoryEntryInput
) -> MemoryEntryPayload:
    patch = EntryPatch(
        title=input.title,
        summary=input.summary,
        tags=input.tags,
        importance=input.importance,
        expected_version=input.expected_version,
    )
    check_selected_arguments(info)  # before the write: never a written entry nulled
    try:
        entry = await entries.update_entry(
            info.context.db, str(id), patch, by=await info.context.requester()
        )
    except ExpectedError as exc:
        return MemoryEntryPayload(entry=None, errors=[UserError.of(_with_input(exc))])
    return MemoryEntryPayload(entry=MemoryEntry.of(entry), errors=[])


async def resolve_delete_memory_entry(info: CtxInfo, id: strawberry.ID) -> DeleteMemoryEntryPayload:
    try:
        deleted = await entries.delete_entry(
            info.context.db, str(id), by=await info.context.requester()
        )
    except ExpectedError as exc:
        return DeleteMemoryEntryPayload(deleted_id=None, errors=[UserError.of(exc)])
    return DeleteMemoryEntryPayload(deleted_id=strawberry.ID(deleted), errors=[])


@strawberry.type
class Mutation:
    append_memory_event: AppendMemoryEventPayload = strawberry.mutation(
        resolver=resolve_append_memory_event
    )
    append_memory_events: AppendMemoryEventsPayload = strawberry.mutation(
        resolver=resolve_append_memory_events,
        description="all-or-nothing: either every event is stored or none is",
    )
    create_memory_entry: MemoryEntryPayload = strawberry.mutation(
        resolver=resolve_create_memory_entry
    )
    update_memory_entry: MemoryEntryPayload = strawberry.mutation(
        resolver=resolve_update_memory_entry
    )
    delete_memory_entry: DeleteMemoryEntryPayload = strawberry.mutation(
        resolver=resolve_delete_memory_entry
    )


def _should_mask(error: GraphQLError) -> bool:
    # Parse/validation errors have no original_error and are the client's to see.
    original = error.original_error
    return original is not None and not isinstance(original, ExpectedError | GraphQLError)


class UnexpectedLoggingSchema(strawberry.Schema):
    """Logs only what is unexpected (expected errors are the client's), with the request id."""

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        ctx = execution_context.context if execution_context else None
        request_id = getattr(ctx, "request_id", None)
        for error in errors:
            if isinstance(error.original_error, Unavailable):
                # Answered with its code and Retry-After (app/edge/graphql_view): one line.
                log.warning(
                    "tenant database unavailable in %s (request %s): %s",
                    ".".join(str(p) for p in error.path or ()) or "operation",
                    request_id,
                    error.original_error,
                    extra={"request_id": request_id},
                )
            elif _should_mask(error):
                log.error(
                    "unexpected error in %s (request %s)",
                    ".".join(str(p) for p in error.path or ()) or "operation",
                    request_id,
                    exc_info=error.original_error,
                    extra={"request_id": request_id},
                )


def build_schema(*, introspection: bool = True, fast_path: bool = True) -> strawberry.Schema:
    """The schema; `fast_path` adds the short cuts of app/graphql/fastpath/ (same answers)."""
    # Strawberry's extensions (app/graphql/extensions.py) do the token limit, the parse
    # and validation caches, the limit rules and the masking of unexpected errors. The
    # depth and alias limiters build a new rule class per instance, which would make every
    # request a validation cache miss: their rules are built once, here. Over a limit is a
    # validation (or, for tokens, syntax) error naming it. Without introspection,
    # graphql-core's rule refuses __schema and __type.
    rules = (
        *QueryDepthLimiter(max_depth=GRAPHQL_MAX_DEPTH).validation_rules,
        *MaxAliasesLimiter(max_alias_count=GRAPHQL_MAX_ALIASES).validation_rules,
        *(() if introspection else (NoSchemaIntrospectionCustomRule,)),
    )
    limits: dict[str, Any] = {
        "max_tokens": GRAPHQL_MAX_TOKENS,
        "validation_rules": rules,
        "should_mask_error": _should_mask,
    }
    query = merge_types(
        "Query",
        (Query, ContextQuery, CompactionQuery, DataRightsQuery, WebhookQuery, ScopesQuery),
    )
    mutation = merge_types(
        "Mutation", (Mutation, CompactionMutation, DataRightsMutation, WebhookMutation)
    )
    if fast_path:
        return fastpath.build(
            UnexpectedLoggingSchema,
            query,
            mutation,
            scalar_overrides=SCALAR_OVERRIDES,
            subscription=ChangeSubscription,
            **limits,
        )
    extensions = operation_extensions(**limits)
    return UnexpectedLoggingSchema(
        query=query,
        mutation=mutation,
        subscription=ChangeSubscription,
        extensions=extensions,
        scalar_overrides=SCALAR_OVERRIDES,
    )


@cache
def schema_for(*, introspection: bool, fast_path: bool) -> strawberry.Schema:
    """One schema per combination of the settings, shared by every app of the process."""
    return build_schema(introspection=introspection, fast_path=fast_path)


# The schema of the default settings, as the environment sets them (JET_GRAPHQL_FAST_PATH).
schema = schema_for(introspection=True, fast_path=Settings().graphql_fast_path)
