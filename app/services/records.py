"""What services take and return: plain frozen records, independent of any API surface.

A record answered as JSON (REST, MCP) is written there as itself: its fields, camelCase, each
described by the docstring under it (pydantic reads them: RECORD_JSON). A new field shows up
on those surfaces without touching them; GraphQL's types are the public contract, by hand.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from enum import Enum, EnumMeta, StrEnum
from typing import Any, Generic, TypeVar, get_args, get_origin, get_type_hints

from pydantic import ConfigDict, with_config
from pydantic.alias_generators import to_camel

# The JSON names and descriptions of a record, for the surfaces that derive their bodies and
# documents from it (app/edge/rest/response_models.py): GraphQL's camelCase names.
RECORD_JSON = ConfigDict(
    alias_generator=to_camel, serialize_by_alias=True, use_attribute_docstrings=True
)


class Scope(StrEnum):
    INSTITUTIONAL = "institutional"
    ENTITY = "entity"
    PROJECT = "project"
    TEAM = "team"


class EntrySource(StrEnum):
    CHAT = "chat"
    CALL = "call"
    EMAIL = "email"
    MANUAL = "manual"
    COMPACTOR = "compactor"


@with_config(RECORD_JSON)
@dataclass(frozen=True, slots=True)
class Event:
    """An immutable raw event of the append-only log."""

    id: str
    scope: Scope
    scope_ref: str | None
    kind: str
    body: str
    source: str | None
    source_ref: str | None
    occurred_at: datetime
    recorded_at: datetime
    """when the server stored it"""
    compressed_at: datetime | None
    """when the compactor folded it"""
    compressed_into: str | None
    """id of the entry it was folded into"""
    idempotency_key: str | None


@with_config(RECORD_JSON)
@dataclass(frozen=True, slots=True)
class Entry:
    """A curated, searchable, scored memory item."""

    id: str
    scope: Scope
    scope_ref: str | None
    title: str
    summary: str
    tags: list[str]
    importance: int
    source: EntrySource
    created_at: datetime
    updated_at: datetime
    version: int
    """increments on every update; the ETag"""


@dataclass(frozen=True, slots=True)
class EventIn:
    """An append request, validated by app.services.validation before it is stored."""

    scope: Scope
    scope_ref: str | None
    kind: str
    body: str
    source: str | None = None
    source_ref: str | None = None
    occurred_at: datetime | None = None
    idempotency_key: str | None = None


@dataclass(frozen=True, slots=True)
class Appended:
    event: Event
    replayed: bool


@dataclass(frozen=True, slots=True)
class EntryIn:
    scope: Scope
    scope_ref: str | None
    title: str
    summary: str
    tags: list[str] = field(default_factory=list)
    importance: int = 3
    source: EntrySource = EntrySource.MANUAL


@dataclass(frozen=True, slots=True)
class EntryPatch:
    """A partial update: None means "leave as it is"."""

    title: str | None = None
    summary: str | None = None
    tags: list[str] | None = None
    importance: int | None = None
    expected_version: int | None = None


@dataclass(frozen=True, slots=True)
class EventFilter:
    scope: Scope | None = None
    scope_ref: str | None = None
    kinds: list[str] | None = None
    occurred_after: datetime | None = None
    occurred_before: datetime | None = None
    compressed: bool | None = None
    search: str | None = None


@dataclass(frozen=True, slots=True)
class EntryFilter:
    scope: Scope | None = None
    scope_ref: str | None = None
    tags: list[str] | None = None
    search: str | None = None
    min_importance: int | None = None
    sources: list[EntrySource] | None = None
    min_score: float | None = None  # with search: only hits scoring at least this
    keyword_only: bool = False  # with search: by words only, not fused with meaning


@with_config(RECORD_JSON)
@dataclass(frozen=True, slots=True)
class EntryVersion:
    """An earlier version of an entry, as it was before `change` replaced it."""

    entry_id: str
    version: int
    scope: Scope
    scope_ref: str | None
    title: str
    summary: str
    tags: list[str]
    importance: int
    source: EntrySource
    created_at: datetime
    updated_at: datetime
    change: str
    """what replaced it: update, restore or delete"""
    changed_at: datetime
    changed_by: str
    """the API key id, compactor or operator"""


@with_config(RECORD_JSON)
@dataclass(frozen=True, slots=True)
class ErasureReceipt:
    """The receipt of an erasure: counts, never content."""

    id: str
    erased_at: datetime
    target: str
    """subject or event"""
    scope: Scope
    scope_ref: str | None
    event_id: str | None
    """the erased event, for an event's erasure"""
    events: int
    entries: int
    """entries and folded summaries erased"""
    versions: int
    """earlier entry versions erased"""
    released: int
    """events of other subjects released from an erased summary"""
    requested_by: str
    """the API key id that asked (or operator)"""


T = TypeVar("T")


@with_config(RECORD_JSON)
@dataclass(frozen=True, slots=True)
class Edge(Generic[T]):
    cursor: str
    node: T
    score: float | None = None
    """relevance to `search`, 0 to 1: the share of its words the entry contains (comparable
    across searches); present only when searching"""
    matched_terms: list[str] | None = None
    """which of the search's words the entry contains; present only when searching"""
    similarity: float | None = None
    """with a search fused with meaning: cosine similarity (-1 to 1) of the entry to the
    question; null for keyword-only searches and entries not embedded yet"""


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    edges: list[Edge[T]]
    has_next_page: bool
    # Where the next page starts when it is not the last edge's cursor: a page whose hits
    # a filter after the read dropped (EntryFilter.min_score) goes on from what was read.
    end: str | None = None
    # Ranked by meaning with vectors older than the entries' revision (a big tenant's
    # matrix being read again in the background): correct, but not a page to cache.
    stale: bool = False

    @property
    def end_cursor(self) -> str | None:
        if self.end is not None:
            return self.end
        return self.edges[-1].cursor if self.edges else None


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
    summariser: str  # the model(s) that answered, or builtin-extractive-v2


R = TypeVar("R")


def field_names(cls: type[Any]) -> tuple[str, ...]:
    """A record's field names in order: the columns a read of it selects (same names)."""
    return tuple(f.name for f in fields(cls))


def values_of(record: Any) -> dict[str, Any]:
    """A record's fields as column values: enums as their values, every field by its name,
    so a new field is written without touching the writer."""
    return {n: _column_value(getattr(record, n)) for n in field_names(type(record))}


def _column_value(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


def row_reader(cls: type[R], columns: Sequence[str]) -> Callable[[Sequence[Any]], R]:
    """The function that makes a `cls` from a row whose first columns are named `columns`:
    each field from its column, an enum field through its enum, a list field as a list.

    Generated once per record and column order, as dataclasses generate `__init__`: a page
    makes 50 records, and a loop over the fields per row cost several times more."""
    hints = get_type_hints(cls)
    position = {name: i for i, name in enumerate(columns)}
    env: dict[str, Any] = {"cls": cls}
    args = []
    for f in fields(cls):  # type: ignore[arg-type]
        i = position[f.name]
        kind = hints[f.name]
        enum = next((t for t in (kind, *get_args(kind)) if isinstance(t, EnumMeta)), None)
        if enum is not None:
            members: list[Enum] = list(enum)
            env[f"_{f.name}"] = {**{m.value: m for m in members}, **{m: m for m in members}}
            nullable = type(None) in get_args(kind)
            expr = f"_{f.name}[row[{i}]]"
            args.append(f"None if row[{i}] is None else {expr}" if nullable else expr)
        elif list in (get_origin(kind), *(get_origin(t) for t in get_args(kind))):
            args.append(f"None if row[{i}] is None else list(row[{i}])")
        else:
            args.append(f"row[{i}]")
    source = f"def read(row):\n    return cls({', '.join(args)})\n"
    exec(source, env)  # the code made above, from the record's own fields
    reader: Callable[[Sequence[Any]], R] = env["read"]
    reader.__doc__ = f"A {cls.__name__} from a row of {', '.join(columns)}."
    return reader
