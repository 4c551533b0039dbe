"""REST GET /memory/scopes: the scopes that hold memory (memoryScopes' twin), its query model
and handler, calling app/services/scopes.py."""

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from app.deps import Container
from app.edge.rest.encoding import json_response
from app.edge.rest.models import QueryModel, ScopeIn
from app.edge.rest.operations import Answer, operation
from app.edge.rest.parsing import parse_query
from app.edge.rest.problems import LIST_NAMES, service_errors
from app.edge.rest.response_models import MEMORY_SCOPE_SUMMARY, MemoryScopeList, page_body
from app.services import limits, scopes
from app.storage.tenants import TenantDb


class MemoryScopeQuery(QueryModel):
    """GET /memory/scopes: in (scope, scopeRef) order."""

    scope: ScopeIn | None = Field(default=None, description="only scopes of this kind")
    limit: int = Field(default=20, ge=1, json_schema_extra={"maximum": limits.PAGE_MAX})
    cursor: str | None = Field(default=None, description="nextCursor of the previous page")


@operation(
    "listMemoryScopes",
    "The scopes that hold events or entries, with their counts and last activity, in (scope, "
    "scopeRef) order",
    {200: Answer("a page of scopes", MemoryScopeList)},
    query=MemoryScopeQuery,
)
async def list_scopes(request: Request, db: TenantDb, _: Container) -> Response:
    q = parse_query(request, MemoryScopeQuery)
    with service_errors("query", LIST_NAMES):
        page = await scopes.list_scopes(db, scope=q.scope, first=q.limit, after=q.cursor)
    return json_response(page_body(MEMORY_SCOPE_SUMMARY, page))
