"""REST handlers: one per method and path, each parsing, calling one service and answering.

Every domain rule stays in app.services, which GraphQL calls too.
"""

from collections.abc import Awaitable, Callable
from datetime import datetime

from pydantic.alias_generators import to_camel
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from app import ids
from app.deps import Container
from app.edge.auth import requester
from app.edge.rest.encoding import json_response
from app.edge.rest.models import (
    ENTRY_IN,
    ENTRY_PATCH_IN,
    ENTRY_PUT_IN,
    EVENT_BATCH_IN,
    EVENT_IN,
    READ_ONLY_FIELDS,
    AppendMemoryEventInput,
    CreateMemoryEntryInput,
    EventBatchIn,
    MemoryContextQuery,
    MemoryEntryQuery,
    MemoryEventQuery,
    MemoryExportQuery,
    ReplaceMemoryEntryInput,
    UpdateMemoryEntryInput,
)
from app.edge.rest.operations import Answer, operation
from app.edge.rest.parsing import (
    etag,
    event_in,
    if_match_versions,
    is_json_array,
    parse_body,
    parse_query,
    require_json,
    require_json_type,
    two_headers,
)
from app.edge.rest.problems import (
    LIST_NAMES,
    HttpProblem,
    ProblemError,
    Where,
    field_error,
    problem,
    service_errors,
)
from app.edge.rest.response_models import (
    MEMORY_CONTEXT,
    MEMORY_ENTRY,
    MEMORY_ENTRY_ITEM,
    MEMORY_EVENT,
    MemoryEntryList,
    MemoryEventBatch,
    MemoryEventList,
    listing,
    next_cursor,
)
from app.services import entries, events
from app.services.context import loader
from app.services.data_rights import portability
from app.services.records import (
    Edge,
    EntryFilter,
    EntryIn,
    EntryPatch,
    EntrySource,
    EventFilter,
)
from app.storage.tenants import TenantDb


def not_found(entry_id: str) -> HttpProblem:
    return problem(404, "id", "path", "NOT_FOUND", f"no memory entry {entry_id!r}")


Handler = Callable[[Request, TenantDb, Container], Awaitable[Response]]


ENTRY_ID = {"id": ids.ENTRY}


@operation(
    "listMemoryEntries",
    "Search curated entries",
    {200: Answer("a page of entries", MemoryEntryList)},
    description=MemoryEntryQuery.__doc__,
    query=MemoryEntryQuery,
)
async def list_entries(request: Request, db: TenantDb, _: Container) -> Response:
    q = parse_query(request, MemoryEntryQuery)
    flt = EntryFilter(
        scope=q.scope,
        scope_ref=q.scope_ref,
        tags=q.tag,
        search=q.search,
        min_importance=q.min_importance,
        sources=q.source,
        min_score=q.min_score,
        keyword_only=q.keyword_only,
    )
    with service_errors("query", LIST_NAMES):
        page = await entries.list_entries(db, flt, first=q.limit, after=q.cursor)
    # A search's hits carry their scores; a plain listing's entries do not.
    if q.search is not None:
        items = [MEMORY_ENTRY_ITEM.json(edge) for edge in page.edges]
    else:
        items = [MEMORY_ENTRY.json(edge.node) for edge in page.edges]
    return json_response(listing(items, next_cursor(page)))


@operation(
    "createMemoryEntry",
    "Create a curated entry",
    {201: Answer("created", MEMORY_ENTRY, ("Location", "ETag"))},
    body=CreateMemoryEntryInput,
)
async def create_entry(request: Request, db: TenantDb, _: Container) -> Response:
    require_json(request)
    i = parse_body(await request.body(), ENTRY_IN)
    entry_in = EntryIn(
        scope=i.scope,
        scope_ref=i.scope_ref,
        title=i.title,
        summary=i.summary,
        tags=list(i.tags or []),
        importance=3 if i.importance is None else i.importance,
        source=EntrySource(i.source or EntrySource.MANUAL),
    )
    with service_errors("body"):
        entry = await entries.create_entry(db, entry_in)
    headers = {"Location": f"/memory/{entry.id}", "ETag": etag(entry)}
    return json_response(MEMORY_ENTRY.json(entry), 201, headers)


@operation(
    "getMemoryEntry",
    "Read an entry",
    {200: Answer("the entry", MEMORY_ENTRY, ("ETag",))},
    problems=(404,),
    path=ENTRY_ID,
)
async def get_entry(request: Request, db: TenantDb, _: Container) -> Response:
    entry_id = request.path_params["id"]
    entry = await entries.get_entry(db, entry_id)
    if entry is None:
        raise not_found(entry_id)
    return json_response(MEMORY_ENTRY.json(entry), headers={"ETag": etag(entry)})


_DISAGREE = "If-Match and expectedVersion disagree"
_UPDATED = {200: Answer("the updated entry", MEMORY_ENTRY, ("ETag",))}


@operation(
    "updateMemoryEntry",
    "Update the fields given",
    _UPDATED,
    problems=(404, 409, 412),
    body=UpdateMemoryEntryInput,
    path=ENTRY_ID,
    headers=("If-Match",),
)
async def update_entry(request: Request, db: TenantDb, container: Container) -> Response:
    """PATCH: the fields given change."""
    allowed = if_match_versions(request)
    require_json(request)
    i = parse_body(await request.body(), ENTRY_PATCH_IN)
    by = await requester(request.scope, container)
    return await _apply(db, request.path_params["id"], allowed, i, i.expected_version, by)


@operation(
    "replaceMemoryEntry",
    "Send the entry back as GET answered it, edited",
    _UPDATED,
    problems=(404, 409, 412),
    description=ReplaceMemoryEntryInput.__doc__,
    body=ReplaceMemoryEntryInput,
    path=ENTRY_ID,
    headers=("If-Match",),
)
async def replace_entry(request: Request, db: TenantDb, container: Container) -> Response:
    """PUT: the entry's own representation (as GET answers it), edited."""
    entry_id = request.path_params["id"]
    allowed = if_match_versions(request)
    require_json(request)
    i = parse_body(await request.body(), ENTRY_PUT_IN)
    expected = i.expected_version
    if i.version is not None and expected is not None and expected != i.version:
        raise HttpProblem(
            400,
            [
                field_error(f, "body", "INVALID", "version and expectedVersion disagree")
                for f in ("version", "expectedVersion")
            ],
        )
    # Null read-only fields count as absent, as null editable ones do.
    given = [n for n in READ_ONLY_FIELDS if n in i.model_fields_set and getattr(i, n) is not None]
    if given or i.version is not None:
        current = await entries.get_entry(db, entry_id)
        if current is None:
            raise not_found(entry_id)
        if i.version is not None and i.version != current.version:
            # Read at another version: a stale copy (its updatedAt differs too), a 409.
            raise problem(
                409,
                "version",
                "body",
                "CONFLICT",
                f"the entry is at version {current.version}, not {i.version}: GET it again, "
                "then retry",
            )
        changed = [n for n in given if getattr(i, n) != getattr(current, n)]
        if changed:
            raise HttpProblem(422, [_read_only(n, getattr(current, n)) for n in changed])
        if expected is None:
            expected = current.version  # what was compared is what gets updated
    by = await requester(request.scope, container)
    return await _apply(db, entry_id, allowed, i, expected, by)


def _read_only(name: str, stored: object) -> ProblemError:
    field = to_camel(name)
    if isinstance(stored, datetime):
        shown: object = stored.isoformat().replace("+00:00", "Z")
    else:
        shown = getattr(stored, "value", stored)  # an enum as the API writes it
    return field_error(
        field,
        "body",
        "READ_ONLY",
        f"{field}: read-only; the entry's is {shown!r}: send it unchanged or leave it out",
    )


async def _apply(
    db: TenantDb,
    entry_id: str,
    allowed: list[int] | None,
    i: UpdateMemoryEntryInput,
    expected: int | None,
    by: str,
) -> Response:
    if allowed is not None:
        if expected is not None and expected not in allowed:
            raise HttpProblem(
                400,
                [
                    field_error("If-Match", "header", "INVALID", _DISAGREE),
                    field_error("expectedVersion", "body", "INVALID", _DISAGREE),
                ],
            )
        # If-Match may list several versions; the service checks one, atomically: the
        # current one, if listed (a change after this read is then a stale version too).
        current = await entries.get_entry(db, entry_id)
        if current is None:
            raise not_found(entry_id)
        if current.version not in allowed:
            raise _precondition_failed(current.version)
        expected = current.version
    patch = EntryPatch(
        title=i.title,
        summary=i.summary,
        tags=i.tags,
        importance=i.importance,
        expected_version=expected,
    )
    try:
        with service_errors("body"):
            entry = await entries.update_entry(db, entry_id, patch, by=by)
    except HttpProblem as p:
        if p.status == 404:
            raise not_found(entry_id) from None
        if p.status == 409 and allowed is not None:
            raise _precondition_failed(None) from None
        raise
    return json_response(MEMORY_ENTRY.json(entry), headers={"ETag": etag(entry)})


def _precondition_failed(current: int | None) -> HttpProblem:
    now = "" if current is None else f' (it is at version {current}, ETag "{current}")'
    return problem(
        412,
        "If-Match",
        "header",
        "PRECONDITION_FAILED",
        f"the entry has changed since that ETag{now}: GET it again, then retry",
    )


@operation(
    "deleteMemoryEntry",
    "Delete an entry (a compactor entry releases the events it folded)",
    {204: Answer("deleted")},
    problems=(400, 404),
    path=ENTRY_ID,
)
async def delete_entry(request: Request, db: TenantDb, container: Container) -> Response:
    entry_id = request.path_params["id"]
    if "if-match" in request.headers:
        # entries.delete_entry takes no expected version: refusing beats pretending.
        raise problem(400, "If-Match", "header", "INVALID", "a conditional DELETE is not supported")
    with service_errors("path"):
        await entries.delete_entry(db, entry_id, by=await requester(request.scope, container))
    return Response(status_code=204)


_EVENT_OR_BATCH = (MEMORY_EVENT, MemoryEventBatch)


@operation(
    "appendMemoryEvents",
    "Append a raw event, or a batch (a JSON array) all or nothing",
    {
        201: Answer(
            "appended (a batch: at least one item is new); Location for one event",
            _EVENT_OR_BATCH,
            ("Location",),
        ),
        200: Answer("a replay: the original event(s), as first answered", _EVENT_OR_BATCH),
    },
    problems=(409,),
    body=(AppendMemoryEventInput, EventBatchIn),
    headers=("Idempotency-Key",),
)
async def append_events(request: Request, db: TenantDb, container: Container) -> Response:
    content_type, header_key = two_headers(request.scope, b"content-type", b"idempotency-key")
    require_json_type(content_type)
    raw = await request.body()
    max_rows = container.settings.group_commit_max_rows
    if is_json_array(raw):
        if header_key is not None:
            # A key derived per item could not tell a retried batch from a longer one, so
            # "same key, different body → 409" would not hold: each item brings its own.
            raise problem(
                400,
                "Idempotency-Key",
                "header",
                "INVALID",
                "the Idempotency-Key header is for a single event: give each item of a "
                "batch its own idempotencyKey",
            )
        batch = parse_body(raw, EVENT_BATCH_IN)
        with service_errors("body"):
            results = await events.append_events(
                db, [event_in(i, i.idempotency_key) for i in batch], max_rows=max_rows
            )
        body = {"items": [MEMORY_EVENT.json(r.event) for r in results]}
        return json_response(body, 200 if all(r.replayed for r in results) else 201)

    one = parse_body(raw, EVENT_IN)
    key = one.idempotency_key
    names: dict[str, tuple[str, Where]] = {}
    if header_key is not None:
        if key is not None and key != header_key:
            raise HttpProblem(
                400,
                [
                    field_error(
                        "Idempotency-Key",
                        "header",
                        "INVALID",
                        "the Idempotency-Key header and idempotencyKey differ",
                    ),
                    field_error(
                        "idempotencyKey",
                        "body",
                        "INVALID",
                        "the Idempotency-Key header and idempotencyKey differ",
                    ),
                ],
            )
        key = header_key
        names["idempotencyKey"] = ("Idempotency-Key", "header")
    with service_errors("body", names):
        result = await events.append_event(db, event_in(one, key), max_rows=max_rows)
    # A replay answers exactly what the original append answered, with 200 instead of 201.
    response = json_response(MEMORY_EVENT.json(result.event), 200 if result.replayed else 201)
    if not result.replayed:
        # Appended to the raw headers: with a headers mapping, the response takes the
        # generic (slower) path of Starlette, on every append.
        location = f"/memory/events/{result.event.id}".encode("latin-1")
        response.raw_headers.append((b"location", location))
    return response


@operation(
    "getMemoryEvent",
    "Read an event (the Location of its append)",
    {200: Answer("the event", MEMORY_EVENT)},
    problems=(404,),
    path={"id": ids.EVENT},
)
async def get_event(request: Request, db: TenantDb, _: Container) -> Response:
    event_id = request.path_params["id"]
    event = await events.get_event(db, event_id)
    if event is None:
        raise problem(404, "id", "path", "NOT_FOUND", f"no memory event {event_id!r}")
    return json_response(MEMORY_EVENT.json(event))


@operation(
    "listMemoryEvents",
    "List raw events",
    {200: Answer("a page of events", MemoryEventList)},
    description=MemoryEventQuery.__doc__,
    query=MemoryEventQuery,
)
async def list_events(request: Request, db: TenantDb, _: Container) -> Response:
    q = parse_query(request, MemoryEventQuery)
    flt = EventFilter(
        scope=q.scope,
        scope_ref=q.scope_ref,
        kinds=q.kind,
        occurred_after=q.occurred_after,
        occurred_before=q.occurred_before,
        compressed=q.compressed,
        search=q.search,
    )
    with service_errors("query", LIST_NAMES):
        found, cursor = await events.list_events_next(db, flt, first=q.limit, after=q.cursor)
    return json_response(listing([MEMORY_EVENT.json(e) for e in found], cursor))


# The service names the lists as GraphQL does; REST's repeatable parameters are singular.
CONTEXT_NAMES: dict[str, tuple[str, Where]] = {
    "kinds": ("kind", "query"),
    "excludeKinds": ("excludeKind", "query"),
}


@operation(
    "loadMemoryContext",
    "The context loader: memory for an agent session, in a token budget",
    {200: Answer("the packed context", MEMORY_CONTEXT)},
    problems=(422,),
    description=MemoryContextQuery.__doc__,
    query=MemoryContextQuery,
)
async def memory_context(request: Request, db: TenantDb, _: Container) -> Response:
    q = parse_query(request, MemoryContextQuery)
    with service_errors("query", CONTEXT_NAMES):
        loaded = await loader.load_context(
            db,
            scope=q.scope,
            scope_ref=q.scope_ref,
            query=q.query,
            max_tokens=q.max_tokens,
            include_institutional=q.include_institutional,
            kinds=q.kind,
            exclude_kinds=q.exclude_kind,
        )
    body = MEMORY_CONTEXT.json(loaded)
    if loaded.matches is not None:
        # With a query, each entry as a hit of it: its score and matchedTerms (0 and none
        # for an entry loaded by importance alone).
        hits = loaded.matches
        body["entries"] = [
            MEMORY_ENTRY_ITEM.json(Edge("", e, *hits.get(e.id, (0.0, [])))) for e in loaded.entries
        ]
    return json_response(body)


@operation(
    "exportMemory",
    "A subject's data access request: one scope's memory as JSON lines",
    {200: Answer("the export, streamed", str, media=portability.MEDIA_TYPE)},
    description=f"{MemoryExportQuery.__doc__} A header line, one line per record (entries, "
    "events, provenance), then a trailer with the counts and a sha256 of the record lines "
    "(docs/export.md); a stream without its trailer was cut short. A scope over "
    "JET_EXPORT_MAX_RECORDS is a 400 (TOO_LARGE).",
    query=MemoryExportQuery,
)
async def export_memory(request: Request, db: TenantDb, container: Container) -> Response:
    q = parse_query(request, MemoryExportQuery)
    with service_errors("query", {}):
        lines = await portability.subject_export(
            db,
            scope=q.scope,
            scope_ref=q.scope_ref,
            max_records=container.settings.export_max_records,
        )
    # Streamed a keyset page at a time, each page its own read: a slow client holds one
    # page in memory and no database connection between pages.
    return StreamingResponse(
        lines,
        media_type=portability.MEDIA_TYPE,
        headers={"Content-Disposition": 'attachment; filename="memory-export.jsonl"'},
    )


async def no_route(request: Request, db: TenantDb, _: Container) -> Response:
    raise problem(404, None, "path", "NOT_FOUND", f"no route {request.url.path}")
