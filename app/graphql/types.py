"""GraphQL object types, enums and inputs of the public contract (api-contract.graphql).

Fields with a resolver use `strawberry.field(resolver=...)`: the decorator form with
arguments (`@strawberry.field(description=...)`) is untyped for mypy.

The values served for `MemoryEvent`, `MemoryEntry`, their edges and `PageInfo` are the
service's records themselves (`Event`, `Entry`, `Edge`, `Page`), not copies into these
classes: a page of 50 events would be 100 more objects to build. GraphQL reads a
field of a value by its Python attribute name (Strawberry's default resolver, `getattr`)
and checks no value's class, since none of these types implements an interface (no
`is_type_of`); the records have every attribute under the same name. A field with a
resolver gets the record as its root. `tests/graphql/test_record_values.py` pins both.
"""

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Optional, cast

import strawberry
from strawberry.schema.types.base_scalars import DateTimeDefinition
from strawberry.types import Info

from app.errors import ErrorCode, ExpectedError
from app.graphql.errors import QueryError
from app.services import entries as entries_service
from app.services.data_rights import history as history_service
from app.services.records import Edge, Entry, EntrySource, EntryVersion, Event, Page, Scope

if TYPE_CHECKING:
    from app.graphql.request_context import Context


def utc_z(value: datetime) -> str:
    """RFC 3339 in UTC with `Z`, microseconds only when not zero: as REST writes it."""
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.replace(tzinfo=None).isoformat() + "Z"


# Strawberry's DateTime answers the stored offset (`+00:00`); this one says `Z` and names
# its specification, so code generators can map it. Input still takes any offset.
DateTime = strawberry.scalar(
    name="DateTime",
    description="Date with time, RFC 3339: answered in UTC with Z, accepted with any offset",
    specified_by_url="https://scalars.graphql.org/andimarek/date-time",
    serialize=utc_z,
    parse_value=DateTimeDefinition.parse_value,
)
SCALAR_OVERRIDES: dict[object, Any] = {datetime: DateTime}

MemoryScope = strawberry.enum(Scope, name="MemoryScope")
EntrySourceEnum = strawberry.enum(EntrySource, name="EntrySource")
UserErrorCode = strawberry.enum(ErrorCode, name="UserErrorCode")


@strawberry.type
class UserError:
    field: list[str] = strawberry.field(
        description='path to the offending input field, e.g. ["input", "importance"]'
    )
    code: UserErrorCode  # type: ignore[valid-type]
    message: str

    @classmethod
    def of(cls, exc: ExpectedError) -> "UserError":
        return cls(field=exc.field, code=exc.code, message=exc.message)


@strawberry.type
class PageInfo:
    has_next_page: bool
    end_cursor: str | None


async def resolve_compressed_into(
    root: Event, info: Info["Context", None]
) -> Optional["MemoryEntry"]:
    # The root is the Event record (see the module's docstring).
    if root.compressed_into is None:
        return None
    entry = await info.context.entry_loader.load(root.compressed_into)
    return None if entry is None else MemoryEntry.of(entry)


@strawberry.type(description="An immutable raw event in the append-only log.")
class MemoryEvent:
    id: strawberry.ID
    scope: MemoryScope  # type: ignore[valid-type]
    scope_ref: str | None = strawberry.field(
        description="entity_id / project_id / user_id depending on scope; null for INSTITUTIONAL"
    )
    kind: str = strawberry.field(
        description="call_summary, decision, campaign_change, sentiment_shift, ..."
    )
    body: str = strawberry.field(description="full raw content, Markdown")
    source: str | None = strawberry.field(
        description="where it came from, e.g. inbox, automation, webhook"
    )
    source_ref: str | None = strawberry.field(
        description="id in the source system, e.g. an inbox_message_id or automation_run_id"
    )
    occurred_at: datetime
    recorded_at: datetime = strawberry.field(description="when the server stored it")
    compressed_at: datetime | None = strawberry.field(
        description="set by the compactor when the event was folded into a summary"
    )
    compressed_into: Optional["MemoryEntry"] = strawberry.field(
        resolver=resolve_compressed_into,
        description="the compactor entry this event was folded into",
    )

    @staticmethod
    def of(e: Event) -> "MemoryEvent":
        """The value served for a MemoryEvent: the Event record itself."""
        return cast("MemoryEvent", e)


async def resolve_source_events(
    root: Entry,
    info: Info["Context", None],
    first: int | None = 50,
    after: str | None = None,
) -> "MemoryEventConnection":
    try:
        page = await entries_service.source_events(
            info.context.db, str(root.id), first=50 if first is None else first, after=after
        )
    except ExpectedError as exc:
        raise QueryError(exc) from None
    return MemoryEventConnection.of(page)


async def resolve_history(
    root: Entry,
    info: Info["Context", None],
    first: int | None = 20,
    after: str | None = None,
) -> "MemoryEntryVersionConnection":
    try:
        page = await history_service.versions(
            info.context.db, str(root.id), first=20 if first is None else first, after=after
        )
    except ExpectedError as exc:
        raise QueryError(exc) from None
    return MemoryEntryVersionConnection.of(page)


@strawberry.type(description="A curated, searchable, scored memory item.")
class MemoryEntry:
    id: strawberry.ID
    scope: MemoryScope  # type: ignore[valid-type]
    scope_ref: str | None
    title: str = strawberry.field(description="one-line identifier")
    summary: str = strawberry.field(description="Markdown content")
    tags: list[str]
    importance: int = strawberry.field(description="1 to 5; retention priority")
    source: EntrySourceEnum  # type: ignore[valid-type]
    created_at: datetime
    updated_at: datetime
    version: int = strawberry.field(
        description="increments on every update; for optimistic concurrency"
    )
    source_events: "MemoryEventConnection" = strawberry.field(
        resolver=resolve_source_events,
        description="for compactor entries: the raw events that were folded into it",
    )
    history: "MemoryEntryVersionConnection" = strawberry.field(
        resolver=resolve_history,
        description="the versions updates, restores and deletes replaced, newest first",
    )

    @staticmethod
    def of(e: Entry) -> "MemoryEntry":
        """The value served for a MemoryEntry: the Entry record itself."""
        return cast("MemoryEntry", e)


@strawberry.type
class MemoryEventEdge:
    cursor: str
    node: MemoryEvent


@strawberry.type
class MemoryEventConnection:
    edges: list[MemoryEventEdge]
    page_info: PageInfo

    @classmethod
    def of(cls, page: Page[Event]) -> "MemoryEventConnection":
        # The page's Edge records are the edges, the Page is the PageInfo (it has
        # has_next_page and end_cursor).
        return cls(edges=_edges(page.edges), page_info=_page_info(page))


@strawberry.type
class MemoryEntryEdge:
    cursor: str
    node: MemoryEntry
    score: float | None = strawberry.field(
        description="relevance of this entry to filter.search, 0 to 1: the share of the\n"
        "search's words the entry contains (in its title, summary or tags; as the index\n"
        "matches them: the same word, a word it begins, or the same stem), comparable\n"
        "across searches, so a threshold (filter.minScore) means the same for any\n"
        "question; edges stay ordered by the index's relevance; null when not searching"
    )
    matched_terms: list[str] | None = strawberry.field(
        description="which of the search's words the entry contains (stop words are not\n"
        "searched); null when not searching"
    )
    similarity: float | None = strawberry.field(
        default=None,
        description="with a search fused with meaning: the cosine similarity (-1 to 1) of\n"
        "the entry's embedding to the question's; null for keyword-only searches and for\n"
        "entries not embedded yet (found by their words alone)",
    )


@strawberry.type
class MemoryEntryConnection:
    edges: list[MemoryEntryEdge]
    page_info: PageInfo

    @classmethod
    def of(cls, page: Page[Entry]) -> "MemoryEntryConnection":
        return cls(edges=_edges(page.edges), page_info=_page_info(page))


def _edges(edges: list[Edge[Event]] | list[Edge[Entry]]) -> list[Any]:
    """The values served for a connection's edges: the page's Edge records (cursor, node,
    score), whose nodes are the records served for the node type."""
    return edges


def _page_info(page: Page[Any]) -> PageInfo:
    """The value served for a PageInfo: the Page record (has_next_page, end_cursor)."""
    return cast("PageInfo", page)


@strawberry.type(description="An earlier version of an entry, as it was before `change`.")
class MemoryEntryVersion:
    entry_id: strawberry.ID
    version: int
    scope: MemoryScope  # type: ignore[valid-type]
    scope_ref: str | None
    title: str
    summary: str
    tags: list[str]
    importance: int
    source: EntrySourceEnum  # type: ignore[valid-type]
    created_at: datetime
    updated_at: datetime
    change: str = strawberry.field(description="what replaced it: update, restore or delete")
    changed_at: datetime
    changed_by: str = strawberry.field(description="the API key id, compactor or operator")


@strawberry.type
class MemoryEntryVersionEdge:
    cursor: str
    node: MemoryEntryVersion


@strawberry.type
class MemoryEntryVersionConnection:
    edges: list[MemoryEntryVersionEdge]
    page_info: PageInfo

    @classmethod
    def of(cls, page: Page[EntryVersion]) -> "MemoryEntryVersionConnection":
        # The records have every field under the same name (see app/graphql/types.py).
        return cls(
            edges=page.edges,  # type: ignore[arg-type]
            page_info=PageInfo(has_next_page=page.has_next_page, end_cursor=page.end_cursor),
        )


@strawberry.input
class MemoryEntryFilter:
    scope: MemoryScope | None = None  # type: ignore[valid-type]
    scope_ref: str | None = None
    tags: list[str] | None = strawberry.field(
        default=None, description="entries carrying every one of these tags"
    )
    search: str | None = strawberry.field(
        default=None,
        description=(
            "full-text search over title, summary and tags, ranked by relevance. Agents pass\n"
            'whole questions ("what did Acme decide about ROAS?"): entries matching more of\n'
            "the meaningful words rank higher, but not every word is required."
        ),
    )
    min_importance: int | None = None
    sources: list[EntrySourceEnum] | None = None  # type: ignore[valid-type]
    min_score: float | None = strawberry.field(
        default=None,
        description="with search: only entries whose score is at least this (0 to 1); a\n"
        "page may then hold fewer than `first` edges: follow pageInfo until hasNextPage\n"
        "is false",
    )
    keyword_only: bool = strawberry.field(
        default=False,
        description="with search: rank by words only, not fused with the entries' meaning\n"
        "(a tenant can also turn meaning off for every search); a fused search pages\n"
        "through its best JET_FUSION_DEPTH hits",
    )


@strawberry.input
class MemoryEventFilter:
    scope: MemoryScope | None = None  # type: ignore[valid-type]
    scope_ref: str | None = None
    kinds: list[str] | None = None
    occurred_after: datetime | None = None
    occurred_before: datetime | None = None
    compressed: bool | None = strawberry.field(
        default=None,
        description="null: all events; false: only uncompressed; true: only compressed",
    )
    search: str | None = strawberry.field(
        default=None, description="full-text search over the body"
    )


@strawberry.input
class AppendMemoryEventInput:
    scope: MemoryScope  # type: ignore[valid-type]
    scope_ref: str | None = None
    kind: str
    body: str
    source: str | None = None
    source_ref: str | None = None
    occurred_at: datetime | None = strawberry.field(
        default=None, description="defaults to the time the server receives it"
    )
    idempotency_key: str | None = strawberry.field(
        default=None, description="a retried append with the same key returns the original event"
    )


@strawberry.type
class AppendMemoryEventPayload:
    event: MemoryEvent | None
    replayed: bool = strawberry.field(
        description="true when idempotencyKey matched an earlier append"
    )
    errors: list[UserError]


@strawberry.type
class AppendMemoryEventsPayload:
    events: list[MemoryEvent]
    errors: list[UserError]


@strawberry.input
class CreateMemoryEntryInput:
    scope: MemoryScope  # type: ignore[valid-type]
    scope_ref: str | None = None
    title: str
    summary: str
    tags: list[str] | None = strawberry.field(default_factory=list)
    importance: int | None = 3
    source: EntrySourceEnum | None = strawberry.field(  # type: ignore[valid-type]
        default=EntrySource.MANUAL, description="COMPACTOR is reserved for the compactor"
    )


@strawberry.input
class UpdateMemoryEntryInput:
    title: str | None = None
    summary: str | None = None
    tags: list[str] | None = None
    importance: int | None = None
    expected_version: int | None = strawberry.field(
        default=None,
        description="when given, the update only applies if the entry is still at this version",
    )


@strawberry.type
class MemoryEntryPayload:
    entry: MemoryEntry | None
    errors: list[UserError]


@strawberry.type
class DeleteMemoryEntryPayload:
    deleted_id: strawberry.ID | None
    errors: list[UserError]
