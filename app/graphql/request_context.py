"""Per-request GraphQL context: the tenant's database, bound at the edge from the API key."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from strawberry.dataloader import DataLoader

from app.services import entries
from app.services.compaction import Stores
from app.services.records import Entry


@dataclass
class Context:
    container: Stores  # the composition root's Container
    # The leased tenant database, handed to the services as it is (the edge leases it).
    db: Any
    request_id: str
    request: Any = None
    response: Any = None
    # (name, type) of the operation, left by NoteOperation for the edge's metrics.
    operation: tuple[str | None, str] | None = None
    # Who asks (the API key id), set by the edge: entry history and erasure receipts.
    actor: Callable[[], Awaitable[str]] | None = None
    # A websocket: what connection_init carried, and the tenant and key it authenticated
    # (app/edge/graphql_http/websocket.py). The socket's own context has no `db` (a subscription
    # leases one per page); each query or mutation over it gets a context with one
    # (app/edge/graphql_http/websocket.py).
    connection_params: Any = None
    tenant_id: str | None = None
    api_key: str | None = field(default=None, repr=False)
    _entry_loader: DataLoader[str, Entry | None] | None = field(default=None, repr=False)

    async def requester(self) -> str:
        """The API key id of the request ("operator" for an in-process caller)."""
        return "operator" if self.actor is None else await self.actor()

    @property
    def entry_loader(self) -> DataLoader[str, Entry | None]:
        """Batches MemoryEvent.compressedInto lookups of one request into one query."""
        if self._entry_loader is None:

            async def load(ids: list[str]) -> list[Entry | None]:
                found = await entries.get_entries(self.db, ids)
                return [found.get(i) for i in ids]

            self._entry_loader = DataLoader(load_fn=load)
        return self._entry_loader
