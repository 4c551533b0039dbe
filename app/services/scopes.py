"""memoryScopes: the scopes that hold memory, with their counts and last activity, one page
at a time, read from the per-scope summary the writers keep (app/storage/scopes.py)."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import with_config

from app.services import cursors, validation
from app.services.records import RECORD_JSON, Edge, Page, Scope
from app.storage import scopes
from app.storage.tenants import TenantDb
from app.storage.transactions import read_rows


@with_config(RECORD_JSON)
@dataclass(frozen=True, slots=True)
class ScopeSummary:
    """A scope that holds memory: its counts and when it last moved."""

    scope: Scope
    scope_ref: str | None
    """null for institutional"""
    event_count: int
    """events in the log, compressed or not"""
    entry_count: int
    """curated entries"""
    last_activity_at: datetime
    """when its last event was recorded or an entry of it last written"""


async def list_scopes(
    db: TenantDb, *, scope: Scope | None, first: int, after: str | None
) -> Page[ScopeSummary]:
    """Scopes in (scope, scopeRef) order; at most `first` (PAGE_MAX) per page."""
    validation.check_first(first)
    key: tuple[str, str] | None = None
    if after is not None:
        scope_name, ref = cursors.decode("scopes", after, types=(str, str))
        key = (scope_name, ref)
    # One row more than asked says whether there is a next page.
    statement = scopes.page(
        scope=None if scope is None else scope.value, after=key, limit=first + 1
    )
    rows: Sequence[Any] = await read_rows(db.engine, statement)
    edges = [
        Edge(
            cursors.encode("scopes", [name, ref]),
            ScopeSummary(Scope(name), ref or None, int(events), int(entries), last),
        )
        for name, ref, events, entries, last in rows[:first]
    ]
    return Page(edges, has_next_page=len(rows) > first)
