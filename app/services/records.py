"""What services take and return: plain frozen records, independent of any API surface."""

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Generic, TypeVar


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


@dataclass(frozen=True, slots=True)
class Event:
    id: str
    scope: Scope
    scope_ref: str | None
    kind: str
    body: str
    source: str | None
    source_ref: str | None
    occurred_at: datetime
    recorded_at: datetime
    compressed_at: datetime | None
    compressed_into: str | None
    idempotency_key: str | None


@dataclass(frozen=True, slots=True)
class Entry:
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
    change: str  # update | restore | delete
    changed_at: datetime
    changed_by: str  # the API key id, "compactor" or "operator"


@dataclass(frozen=True, slots=True)
class ErasureReceipt:
    """What an erasure removed, in counts: never any content."""

    id: str
    erased_at: datetime
    target: str  # subject | event
    scope: Scope
    scope_ref: str | None
    event_id: str | None
    events: int
    entries: int
    versions: int
    released: int
    requested_by: str


T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Edge(Generic[T]):
    cursor: str
    node: T
    score: float | None = None  # with a search: the share of its words the node contains
    matched_terms: list[str] | None = None  # with a search: which of its words those are
    similarity: float | None = None  # a fused search: the node's cosine similarity to it


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
