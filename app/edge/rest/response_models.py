"""REST response models: what the routes answer, documented in app/edge/openapi.py
(pydantic, camelCase, the same names as GraphQL's)."""

from datetime import UTC, datetime
from typing import Any

from pydantic import Field

from app.edge.rest.models import ResponseModel, _utc
from app.services.records import Entry, EntrySource, Event, Scope


class MemoryEvent(ResponseModel):
    """An immutable raw event of the append-only log."""

    id: str
    scope: Scope
    scope_ref: str | None
    kind: str
    body: str
    source: str | None
    source_ref: str | None
    occurred_at: datetime
    recorded_at: datetime = Field(description="when the server stored it")
    compressed_at: datetime | None = Field(description="when the compactor folded it")
    compressed_into: str | None = Field(description="id of the entry it was folded into")

    @classmethod
    def of(cls, e: Event) -> "MemoryEvent":
        return cls(
            id=e.id, scope=e.scope, scope_ref=e.scope_ref, kind=e.kind, body=e.body,
            source=e.source, source_ref=e.source_ref, occurred_at=_utc(e.occurred_at),
            recorded_at=_utc(e.recorded_at),
            compressed_at=None if e.compressed_at is None else _utc(e.compressed_at),
            compressed_into=e.compressed_into,
        )  # fmt: skip


def event_body(e: Event) -> dict[str, Any]:
    """MemoryEvent.of(e).model_dump(mode="json") once _json has encoded it, built directly:
    a page answers 50 events, and a model per event (validation, then serialisation)
    cost more than the rest of the request. Timestamps stay datetimes, which orjson
    writes as pydantic does (UTC as `Z`, microseconds only when not zero); the tests
    compare the two encodings field for field so they cannot drift apart.
    """
    occurred, recorded, compressed = e.occurred_at, e.recorded_at, e.compressed_at
    return {
        "id": e.id, "scope": e.scope, "scopeRef": e.scope_ref, "kind": e.kind, "body": e.body,
        "source": e.source, "sourceRef": e.source_ref,
        "occurredAt": occurred if occurred.tzinfo is UTC else _utc(occurred),
        "recordedAt": recorded if recorded.tzinfo is UTC else _utc(recorded),
        "compressedAt": (
            compressed if compressed is None or compressed.tzinfo is UTC else _utc(compressed)
        ),
        "compressedInto": e.compressed_into,
    }  # fmt: skip


class MemoryEntry(ResponseModel):
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
    version: int = Field(description="increments on every update; the ETag")

    @classmethod
    def of(cls, e: Entry) -> "MemoryEntry":
        return cls(
            id=e.id, scope=e.scope, scope_ref=e.scope_ref, title=e.title, summary=e.summary,
            tags=e.tags, importance=e.importance, source=e.source,
            created_at=_utc(e.created_at), updated_at=_utc(e.updated_at), version=e.version,
        )  # fmt: skip


class MemoryEntryItem(MemoryEntry):
    score: float | None = Field(
        default=None,
        description="relevance to `search`, 0 to 1: the share of its words the entry "
        "contains (comparable across searches); present only when searching",
    )
    matched_terms: list[str] | None = Field(
        default=None,
        description="which of the search's words the entry contains; present only when searching",
    )
    similarity: float | None = Field(
        default=None,
        description="with a search fused with meaning: cosine similarity (-1 to 1) of the "
        "entry to the question; null for keyword-only searches and entries not embedded yet",
    )


class MemoryEntryList(ResponseModel):
    items: list[MemoryEntryItem]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: done")


class MemoryEventList(ResponseModel):
    items: list[MemoryEvent]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: done")


class MemoryEventBatch(ResponseModel):
    items: list[MemoryEvent] = Field(description="in the order of the request")


class MemoryContext(ResponseModel):
    """What the context loader hands an agent session."""

    markdown: str = Field(description="ready to paste into a prompt")
    tokens: int = Field(description="estimated tokens of markdown")
    entries: list[MemoryEntryItem] = Field(
        description="with `query`, each carries its score and matchedTerms for it"
    )
    events: list[MemoryEvent] = Field(description="recent events not yet folded into a summary")
    truncated: bool = Field(description="something relevant was left out to stay in budget")
