"""REST GET /memory/scopes: the scopes that hold memory (memoryScopes' twin), its models and
handler, calling app/services/scopes.py."""

from datetime import datetime

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from app.deps import Container
from app.edge.rest.encoding import json_response
from app.edge.rest.models import QueryModel, ResponseModel, ScopeIn, _utc
from app.edge.rest.parsing import parse_query
from app.edge.rest.problems import LIST_NAMES, service_errors
from app.services import limits, scopes
from app.services.records import Scope
from app.services.scopes import ScopeSummary
from app.storage.tenants import TenantDb


class MemoryScopeQuery(QueryModel):
    """GET /memory/scopes: in (scope, scopeRef) order."""

    scope: ScopeIn | None = Field(default=None, description="only scopes of this kind")
    limit: int = Field(default=20, ge=1, json_schema_extra={"maximum": limits.PAGE_MAX})
    cursor: str | None = Field(default=None, description="nextCursor of the previous page")


class MemoryScopeSummary(ResponseModel):
    """A scope that holds memory: its counts and when it last moved."""

    scope: Scope
    scope_ref: str | None = Field(description="null for institutional")
    event_count: int = Field(description="events in the log, compressed or not")
    entry_count: int = Field(description="curated entries")
    last_activity_at: datetime = Field(
        description="when its last event was recorded or an entry of it last written"
    )

    @classmethod
    def of(cls, s: ScopeSummary) -> "MemoryScopeSummary":
        return cls(
            scope=s.scope, scope_ref=s.scope_ref, event_count=s.event_count,
            entry_count=s.entry_count, last_activity_at=_utc(s.last_activity_at),
        )  # fmt: skip


class MemoryScopeList(ResponseModel):
    items: list[MemoryScopeSummary]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: done")


async def list_scopes(request: Request, db: TenantDb, _: Container) -> Response:
    q = parse_query(request, MemoryScopeQuery)
    with service_errors("query", LIST_NAMES):
        page = await scopes.list_scopes(db, scope=q.scope, first=q.limit, after=q.cursor)
    return json_response(
        MemoryScopeList(
            items=[MemoryScopeSummary.of(e.node) for e in page.edges],
            next_cursor=page.end_cursor if page.has_next_page else None,
        ).model_dump(mode="json")
    )
