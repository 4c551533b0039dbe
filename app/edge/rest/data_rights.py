"""REST entry history (GET /memory/{id}/versions, POST /memory/{id}/restore) and erasure
(POST and GET /memory/erasures, DELETE /memory/events/{id}): request models and handlers,
each calling one service. Who asks is the request's API key."""

from pydantic import ConfigDict, Field, TypeAdapter
from starlette.requests import Request
from starlette.responses import Response

from app import ids
from app.deps import Container
from app.edge.auth import requester
from app.edge.rest.encoding import json_response
from app.edge.rest.handlers import ENTRY_ID, not_found
from app.edge.rest.models import (
    ONE_LINE_PATTERN,
    SCOPE_RULE,
    BodyModel,
    QueryModel,
    ScopeIn,
    Whole,
    documented_limit,
)
from app.edge.rest.operations import Answer, operation
from app.edge.rest.parsing import parse_body, parse_query, require_json
from app.edge.rest.problems import LIST_NAMES, service_errors
from app.edge.rest.response_models import (
    ERASURE,
    MEMORY_ENTRY,
    MEMORY_ENTRY_VERSION,
    ErasureList,
    MemoryEntryVersionList,
    page_body,
)
from app.services import entries, limits
from app.services.data_rights import erasure, history
from app.storage.tenants import TenantDb


class PageQuery(QueryModel):
    """A page of versions or receipts, newest first."""

    limit: int = Field(default=20, ge=1, json_schema_extra={"maximum": limits.PAGE_MAX})
    cursor: str | None = Field(default=None, description="nextCursor of the previous page")


class RestoreMemoryEntryInput(BodyModel):
    """POST /memory/{id}/restore: an earlier version's fields as a new version."""

    version: Whole = Field(description="the earlier version to bring back", ge=1, lt=2**31)
    expected_version: Whole | None = Field(
        default=None,
        description="restore only if the entry (or, deleted, its last version) is at this version",
    )


class EraseMemorySubjectInput(BodyModel):
    """POST /memory/erasures: erase every event and entry of (scope, scopeRef)."""

    model_config = ConfigDict(json_schema_extra=SCOPE_RULE)

    scope: ScopeIn
    scope_ref: str | None = documented_limit(
        maxLength=limits.REF_MAX_CHARS,
        pattern=ONE_LINE_PATTERN,
        description="absent for institutional, required otherwise",
    )


RESTORE_IN = TypeAdapter(RestoreMemoryEntryInput)
ERASE_IN = TypeAdapter(EraseMemorySubjectInput)


@operation(
    "listMemoryEntryVersions",
    "Earlier versions of an entry (also a deleted one), newest first",
    {200: Answer("a page of versions", MemoryEntryVersionList)},
    problems=(404,),
    query=PageQuery,
    path=ENTRY_ID,
)
async def list_versions(request: Request, db: TenantDb, _: Container) -> Response:
    q = parse_query(request, PageQuery)
    entry_id = request.path_params["id"]
    with service_errors("query", LIST_NAMES):
        page = await history.versions(db, entry_id, first=q.limit, after=q.cursor)
    # The versions of an entry that never was (or is erased) are a missing resource, as
    # REST reads a sub-resource; an entry never changed has an empty first page.
    if not page.edges and q.cursor is None and await entries.get_entry(db, entry_id) is None:
        raise not_found(entry_id)
    return json_response(page_body(MEMORY_ENTRY_VERSION, page))


@operation(
    "restoreMemoryEntry",
    "Bring back an earlier version as a new version",
    {200: Answer("the restored entry", MEMORY_ENTRY)},
    problems=(404, 409),
    body=RestoreMemoryEntryInput,
    path=ENTRY_ID,
)
async def restore_entry(request: Request, db: TenantDb, container: Container) -> Response:
    require_json(request)
    i = parse_body(await request.body(), RESTORE_IN)
    with service_errors("body", {"id": ("id", "path")}):
        entry = await history.restore_entry(
            db,
            request.path_params["id"],
            i.version,
            expected_version=i.expected_version,
            by=await requester(request.scope, container),
        )
    return json_response(MEMORY_ENTRY.json(entry))


@operation(
    "eraseMemorySubject",
    "Erase every event, entry, folded summary and entry version of (scope, scopeRef), in one "
    "transaction",
    {201: Answer("erased; the receipt", ERASURE)},
    description=f"At most {limits.ERASURE_EVENTS_MAX} events per request (more is a 422 "
    "TOO_LARGE naming scopeRef); an operator erases more with `jet-memory erase`.",
    body=EraseMemorySubjectInput,
)
async def erase_subject(request: Request, db: TenantDb, container: Container) -> Response:
    require_json(request)
    i = parse_body(await request.body(), ERASE_IN)
    with service_errors("body"):
        receipt = await erasure.erase_subject(
            db, i.scope, i.scope_ref, by=await requester(request.scope, container)
        )
    return json_response(ERASURE.json(receipt), 201)


@operation(
    "listMemoryErasures",
    "This tenant's erasure receipts, newest first",
    {200: Answer("a page of receipts", ErasureList)},
    query=PageQuery,
)
async def list_erasures(request: Request, db: TenantDb, _: Container) -> Response:
    q = parse_query(request, PageQuery)
    with service_errors("query", LIST_NAMES):
        page = await erasure.list_erasures(db, first=q.limit, after=q.cursor)
    return json_response(page_body(ERASURE, page))


@operation(
    "eraseMemoryEvent",
    "Erase one event (a summary that folded it is erased, its other events released)",
    {200: Answer("erased; the receipt", ERASURE)},
    problems=(400, 404),
    path={"id": ids.EVENT},
)
async def erase_event(request: Request, db: TenantDb, container: Container) -> Response:
    with service_errors("path"):
        receipt = await erasure.erase_event(
            db, request.path_params["id"], by=await requester(request.scope, container)
        )
    return json_response(ERASURE.json(receipt))
