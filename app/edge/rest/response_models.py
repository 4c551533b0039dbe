"""REST answers. A noun is its service record as JSON (its fields, camelCase, described by the
docstrings under them: app/services/records.py), under the name the OpenAPI document gives
it; a new field of a record is in its REST body and document with no change here. REST adds
only generic wrappers: a list's `{items, nextCursor}` and a search hit's scores."""

from collections.abc import Callable, Collection, Mapping
from typing import Any, Generic, TypeVar

from pydantic import Field

from app.edge.rest.encoding import record_encoder
from app.edge.rest.models import ResponseModel
from app.services.changes.change_events import Change
from app.services.changes.webhooks import CreatedEndpoint, Delivery, Endpoint
from app.services.context.loader import MemoryContextResult
from app.services.records import Edge, Entry, EntryVersion, ErasureReceipt, Event, Page
from app.services.scopes import ScopeSummary

R = TypeVar("R")
T = TypeVar("T")


class Noun(Generic[R]):
    """A service record (`record`, a dataclass or a generic one's alias) as REST answers it and
    documents it under `name`: its fields but `hidden`. `inline` merges a field's own noun in
    its place (a search hit is its entry and its scores); `nested` fields are answered as their
    noun; `documented` gives a field the schema of another type than the record's (a delivery's
    change, kept as the JSON it was sent as)."""

    def __init__(
        self,
        name: str,
        record: Any,
        *,
        hidden: Collection[str] = (),
        inline: "tuple[str, Noun[Any]] | None" = None,
        nested: "Mapping[str, Noun[Any]] | None" = None,
        documented: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.record = record
        self.hidden = frozenset(hidden)
        self.inline = inline
        self.nested = dict(nested or {})
        self.documented = dict(documented or {})
        self.json: Callable[[R], dict[str, Any]] = record_encoder(
            record,
            hidden=self.hidden,
            inline=None if inline is None else (inline[0], inline[1].json),
            nested={field: noun.json for field, noun in self.nested.items()},
        )


# The idempotency key is the client's own retry token: REST has never answered it.
MEMORY_EVENT = Noun[Event]("MemoryEvent", Event, hidden={"idempotency_key"})
MEMORY_ENTRY = Noun[Entry]("MemoryEntry", Entry)
MEMORY_ENTRY_ITEM = Noun[Edge[Entry]](
    "MemoryEntryItem", Edge[Entry], hidden={"cursor"}, inline=("node", MEMORY_ENTRY)
)
MEMORY_CONTEXT = Noun[MemoryContextResult](
    "MemoryContext",
    MemoryContextResult,
    hidden={"matches"},
    nested={"entries": MEMORY_ENTRY, "events": MEMORY_EVENT},
    documented={"entries": list[Edge[Entry]]},  # with a query, scored (handlers.py)
)
MEMORY_ENTRY_VERSION = Noun[EntryVersion]("MemoryEntryVersion", EntryVersion)
ERASURE = Noun[ErasureReceipt]("Erasure", ErasureReceipt)
MEMORY_SCOPE_SUMMARY = Noun[ScopeSummary]("MemoryScopeSummary", ScopeSummary)
MEMORY_CHANGE = Noun[Change]("MemoryChange", Change)
WEBHOOK_ENDPOINT = Noun[Endpoint]("WebhookEndpoint", Endpoint)
CREATED_WEBHOOK_ENDPOINT = Noun[CreatedEndpoint](
    "CreatedWebhookEndpoint", CreatedEndpoint, inline=("endpoint", WEBHOOK_ENDPOINT)
)
WEBHOOK_DELIVERY = Noun[Delivery](
    "WebhookDelivery", Delivery, hidden={"endpoint_id"}, documented={"change": Change}
)
NOUNS: list[Noun[Any]] = [
    MEMORY_EVENT,
    MEMORY_ENTRY,
    MEMORY_ENTRY_ITEM,
    MEMORY_CONTEXT,
    MEMORY_ENTRY_VERSION,
    ERASURE,
    MEMORY_SCOPE_SUMMARY,
    MEMORY_CHANGE,
    WEBHOOK_ENDPOINT,
    CREATED_WEBHOOK_ENDPOINT,
    WEBHOOK_DELIVERY,
]


def next_cursor(page: Page[Any]) -> str | None:
    return page.end_cursor if page.has_next_page else None


def listing(items: list[dict[str, Any]], cursor: str | None) -> dict[str, Any]:
    """A page's body: ItemsPage."""
    return {"items": items, "nextCursor": cursor}


def page_body(noun: Noun[R], page: Page[R]) -> dict[str, Any]:
    """A page of `noun`s: their JSON, and where the next page starts."""
    return listing([noun.json(edge.node) for edge in page.edges], next_cursor(page))


# ------------------------------------------------ wrappers, for the OpenAPI document


class ItemsPage(ResponseModel, Generic[T]):
    items: list[T]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: done")


class MemoryEntryList(ItemsPage[Edge[Entry]]): ...


class MemoryEventList(ItemsPage[Event]): ...


class MemoryEntryVersionList(ItemsPage[EntryVersion]): ...


class ErasureList(ItemsPage[ErasureReceipt]): ...


class MemoryScopeList(ItemsPage[ScopeSummary]): ...


class WebhookDeliveryList(ItemsPage[Delivery]): ...


class WebhookEndpointList(ResponseModel):
    items: list[Endpoint]


class MemoryEventBatch(ResponseModel):
    items: list[Event] = Field(description="in the order of the request")
