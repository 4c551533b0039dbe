"""REST entry history (GET /memory/{id}/versions, POST /memory/{id}/restore) and erasure
(POST and GET /memory/erasures, DELETE /memory/events/{id}): models and handlers, each
calling one service. Who asks is the request's API key."""

from datetime import datetime

from pydantic import ConfigDict, Field, TypeAdapter
from starlette.requests import Request
from starlette.responses import Response

from app.deps import Container
from app.edge.auth import requester
from app.edge.rest.encoding import json_response
from app.edge.rest.handlers import not_found
from app.edge.rest.models import (
    ONE_LINE_PATTERN,
    SCOPE_RULE,
    BodyModel,
    QueryModel,
    ResponseModel,
    ScopeIn,
    Whole,
    _limit,
    _utc,
)
from app.edge.rest.parsing import parse_body, parse_query, require_json
from app.edge.rest.problems import LIST_NAMES, service_errors
from app.edge.rest.response_models import (
    MemoryEntry,
)
from app.services import entries, erasure, history, limits, restore
from app.services.records import EntrySource, EntryVersion, ErasureReceipt, Scope
from app.storage.tenants import TenantDb


class PageQuery(QueryModel):
    """A page of versions or receipts, newest first."""

    limit: int = Field(default=20, ge=1, json_schema_extra={"maximum": limits.PAGE_MAX})
    cursor: str | None = Field(default=None, description="nextCursor of the previous page")


class RestoreMemoryEntryInput(BodyModel):
    """POST /memory/{id}/restore: an earlier version's fields as a new version."""

    version: Whole = Field(description="the earlier version to bring back", ge=1, lt=2**31)
    expected_version: Whole | None = Field(
        default=None, description="restore only if the entry (or, deleted, its last version) "
        "is at this version",
    )  # fmt: skip


class EraseMemorySubjectInput(BodyModel):
    """POST /memory/erasures: erase every event and entry of (scope, scopeRef)."""

    model_config = ConfigDict(json_schema_extra=SCOPE_RULE)

    scope: ScopeIn
    scope_ref: str | None = _limit(
        maxLength=limits.REF_MAX_CHARS, pattern=ONE_LINE_PATTERN,
        description="absent for institutional, required otherwise",
    )  # fmt: skip


RESTORE_IN = TypeAdapter(RestoreMemoryEntryInput)
ERASE_IN = TypeAdapter(EraseMemorySubjectInput)


class MemoryEntryVersion(ResponseModel):
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
    change: str = Field(description="what replaced it: update, restore or delete")
    changed_at: datetime
    changed_by: str = Field(description="the API key id, compactor or operator")

    @classmethod
    def of(cls, v: EntryVersion) -> "MemoryEntryVersion":
        return cls(
            entry_id=v.entry_id, version=v.version, scope=v.scope, scope_ref=v.scope_ref,
            title=v.title, summary=v.summary, tags=v.tags, importance=v.importance,
            source=v.source, created_at=_utc(v.created_at), updated_at=_utc(v.updated_at),
            change=v.change, changed_at=_utc(v.changed_at), changed_by=v.changed_by,
        )  # fmt: skip


class MemoryEntryVersionList(ResponseModel):
    items: list[MemoryEntryVersion]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: done")


class Erasure(ResponseModel):
    """The receipt of an erasure: counts, never content."""

    id: str
    erased_at: datetime
    target: str = Field(description="subject or event")
    scope: Scope
    scope_ref: str | None
    event_id: str | None = Field(description="the erased event, for an event's erasure")
    events: int
    entries: int = Field(description="entries and folded summaries erased")
    versions: int = Field(description="earlier entry versions erased")
    released: int = Field(description="events of other subjects released from an erased summary")
    requested_by: str = Field(description="the API key id that asked (or operator)")

    @classmethod
    def of(cls, r: ErasureReceipt) -> "Erasure":
        return cls(
            id=r.id, erased_at=_utc(r.erased_at), target=r.target, scope=r.scope,
            scope_ref=r.scope_ref, event_id=r.event_id, events=r.events, entries=r.entries,
            versions=r.versions, released=r.released, requested_by=r.requested_by,
        )  # fmt: skip


class ErasureList(ResponseModel):
    items: list[Erasure]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: done")


async def list_versions(request: Request, db: TenantDb, _: Container) -> Response:
    q = parse_query(request, PageQuery)
    entry_id = request.path_params["id"]
    with service_errors("query", LIST_NAMES):
        page = await history.versions(db, entry_id, first=q.limit, after=q.cursor)
    # The versions of an entry that never was (or is erased) are a missing resource, as
    # REST reads a sub-resource; an entry never changed has an empty first page.
    if not page.edges and q.cursor is None and await entries.get_entry(db, entry_id) is None:
        raise not_found(entry_id)
    return json_response(
        MemoryEntryVersionList(
            items=[MemoryEntryVersion.of(e.node) for e in page.edges],
            next_cursor=page.end_cursor if page.has_next_page else None,
        ).model_dump(mode="json")
    )


async def restore_entry(request: Request, db: TenantDb, container: Container) -> Response:
    require_json(request)
    i = parse_body(await request.body(), RESTORE_IN)
    with service_errors("body", {"id": ("id", "path")}):
        entry = await restore.restore_entry(
            db, request.path_params["id"], i.version, expected_version=i.expected_version,
            by=await requester(request.scope, container),
        )  # fmt: skip
    return json_response(MemoryEntry.of(entry).model_dump(mode="json"))


async def erase_subject(request: Request, db: TenantDb, container: Container) -> Response:
    require_json(request)
    i = parse_body(await request.body(), ERASE_IN)
    with service_errors("body"):
        receipt = await erasure.erase_subject(
            db, i.scope, i.scope_ref, by=await requester(request.scope, container)
        )
    return json_response(Erasure.of(receipt).model_dump(mode="json"), 201)


async def list_erasures(request: Request, db: TenantDb, _: Container) -> Response:
    q = parse_query(request, PageQuery)
    with service_errors("query", LIST_NAMES):
        page = await erasure.list_erasures(db, first=q.limit, after=q.cursor)
    return json_response(
        ErasureList(
            items=[Erasure.of(e.node) for e in page.edges],
            next_cursor=page.end_cursor if page.has_next_page else None,
        ).model_dump(mode="json")
    )


async def erase_event(request: Request, db: TenantDb, container: Container) -> Response:
    with service_errors("path"):
        receipt = await erasure.erase_event(
            db, request.path_params["id"], by=await requester(request.scope, container)
        )
    return json_response(Erasure.of(receipt).model_dump(mode="json"))
