"""GraphQL `memoryScopes`: the scopes that hold memory (app/services/scopes.py), paginated.

Merged into the schema's Query by app/graphql/schema.py (build_schema).
"""

from datetime import datetime
from typing import Any, cast

import strawberry
from strawberry.types import Info

from app.errors import ExpectedError
from app.graphql.errors import QueryError
from app.graphql.request_context import Context
from app.graphql.types import MemoryScope, PageInfo
from app.services import scopes as scopes_service
from app.services.records import Scope


@strawberry.type(description="A scope that holds memory: what is in it and when it last moved.")
class MemoryScopeSummary:
    scope: MemoryScope  # type: ignore[valid-type]
    scope_ref: str | None = strawberry.field(description="null for INSTITUTIONAL")
    event_count: int = strawberry.field(description="events in the log, compressed or not")
    entry_count: int = strawberry.field(description="curated entries")
    last_activity_at: datetime = strawberry.field(
        description="when its last event was recorded or an entry of it last written"
    )


@strawberry.type
class MemoryScopeSummaryEdge:
    cursor: str
    node: MemoryScopeSummary


@strawberry.type
class MemoryScopeSummaryConnection:
    edges: list[MemoryScopeSummaryEdge]
    page_info: PageInfo


# A resolver function, as in memory_context.py. The values served are the service's records
# (Edge, ScopeSummary, Page: same attribute names), as app/graphql/types.py explains.
async def resolve_memory_scopes(
    info: Info[Context, None],
    scope: Scope | None = None,
    first: int | None = 20,
    after: str | None = None,
) -> MemoryScopeSummaryConnection:
    try:
        page = await scopes_service.list_scopes(
            info.context.db, scope=scope, first=20 if first is None else first, after=after
        )
    except ExpectedError as exc:
        raise QueryError(exc) from None
    edges: Any = page.edges
    return MemoryScopeSummaryConnection(edges=edges, page_info=cast("PageInfo", page))


@strawberry.type
class ScopesQuery:
    memory_scopes: MemoryScopeSummaryConnection = strawberry.field(
        resolver=resolve_memory_scopes,
        description="the scopes that hold events or entries, in (scope, scopeRef) order, "
        "with their counts and last activity (of one scope kind when `scope` is given)",
    )
