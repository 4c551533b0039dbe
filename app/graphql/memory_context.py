"""GraphQL `memoryContext`: the context loader (app/services/context/loader.py) as a Query field.

Merged into the schema's Query by app/graphql/schema.py (build_schema).
"""

from typing import Annotated

import strawberry
from strawberry.types import Info

from app.errors import ExpectedError
from app.graphql.errors import QueryError
from app.graphql.request_context import Context
from app.graphql.types import MemoryEntry, MemoryEvent
from app.services.context import loader as context_service
from app.services.records import Scope


@strawberry.type(description="What the context loader hands an agent session.")
class MemoryContext:
    markdown: str = strawberry.field(description="ready to paste into a prompt")
    tokens: int = strawberry.field(description="estimated tokens of markdown")
    entries: list[MemoryEntry]
    events: list[MemoryEvent] = strawberry.field(
        description="recent events not yet folded into a summary"
    )
    truncated: bool = strawberry.field(
        description="true when something relevant was left out to stay within maxTokens"
    )


# A resolver function rather than a decorated method: `@strawberry.field(description=...)`
# is untyped for mypy, `strawberry.field(resolver=...)` is not. Scope is MemoryScope
# (strawberry.enum registers the class itself).
async def resolve_memory_context(
    info: Info[Context, None],
    scope: Scope,
    scope_ref: str | None = None,
    query: str | None = None,
    max_tokens: int | None = 2000,
    include_institutional: bool | None = True,
    kinds: Annotated[
        list[str] | None, strawberry.argument(description="of the raw events, only these kinds")
    ] = None,
    exclude_kinds: Annotated[
        list[str] | None,
        strawberry.argument(
            description="of the raw events, none of these kinds (an agent leaves out its own "
            "verbose turns)"
        ),
    ] = None,
) -> MemoryContext:
    # Nullable per the contract: an explicit null means the default, as in schema.py.
    try:
        result = await context_service.load_context(
            info.context.db,
            scope=scope,
            scope_ref=scope_ref,
            query=query,
            max_tokens=2000 if max_tokens is None else max_tokens,
            include_institutional=include_institutional is not False,
            kinds=kinds,
            exclude_kinds=exclude_kinds,
        )
    except ExpectedError as exc:
        raise QueryError(exc) from None
    return MemoryContext(
        markdown=result.markdown,
        tokens=result.tokens,
        entries=[MemoryEntry.of(e) for e in result.entries],
        events=[MemoryEvent.of(e) for e in result.events],
        truncated=result.truncated,
    )


@strawberry.type
class ContextQuery:
    memory_context: MemoryContext = strawberry.field(
        resolver=resolve_memory_context,
        description="the context loader: curated entries plus uncompressed recent events, "
        "packed to a token budget",
    )
