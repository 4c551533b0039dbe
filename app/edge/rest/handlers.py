"""REST handlers: one per method and path, each parsing, calling one service and answering.

Every domain rule stays in app.services, which GraphQL calls too.
"""

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from pydantic.alias_generators import to_camel
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

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
    MemoryContextQuery,
    MemoryEntryQuery,
    MemoryEventQuery,
    MemoryExportQuery,
    UpdateMemoryEntryInput,
)
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
    MemoryContext,
    MemoryEntry,
    MemoryEntryItem,
    MemoryEvent,
    event_body,
)
from app.services import context, entries, events, portability
from app.services.records import (
    Edge,
    Entry,
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


async def list_entries(request: Request, db: TenantDb, _: Container) -> Response:
    q = parse_query(request, MemoryEntryQuery)
    flt = EntryFilter(
        scope=q.scope, scope_ref=q.scope_ref, tags=q.tag, search=q.search,
        min_importance=q.min_importance, sources=q.source, min_score=q.min_score,
        keyword_only=q.keyword_only,
    )  # fmt: skip
    with service_errors("query", LIST_NAMES):
        page = await entries.list_entries(db, flt, first=q.limit, after=q.cursor)
    searching = q.search is not None

    def item(edge: Edge[Entry]) -> dict[str, Any]:
        out = MemoryEntryItem(
            **dict(MemoryEntry.of(edge.node)), score=edge.score, matched_terms=edge.matched_terms,
            similarity=edge.similarity,
        )  # fmt: skip
        return out.model_dump(
            mode="json", exclude=None if searching else {"score", "matched_terms", "similarity"}
        )

    return json_response(
        {
            "items": [item(e) for e in page.edges],
            "nextCursor": page.end_cursor if page.has_next_page else None,
        }
    )


async def create_entry(request: Request, db: TenantDb, _: Container) -> Response:
    require_json(request)
    i = parse_body(await request.body(), ENTRY_IN)
    entry_in = EntryIn(
        scope=i.scope, scope_ref=i.scope_ref, title=i.title, summary=i.summary,
        tags=list(i.tags or []), importance=3 if i.importance is None else i.importance,
        source=EntrySource(i.source or EntrySource.MANUAL),
    )  # fmt: skip
    with service_errors("body"):
        entry = await entries.create_entry(db, entry_in)
    headers = {"Location": f"/memory/{entry.id}", "ETag": etag(entry)}
    return json_response(MemoryEntry.of(entry).model_dump(mode="json"), 201, headers)


async def get_entry(request: Request, db: TenantDb, _: Container) -> Response:
    entry_id = request.path_params["id"]
    entry = await entries.get_entry(db, entry_id)
    if entry is None:
        raise not_found(entry_id)
    return json_response(
        MemoryEntry.of(entry).model_dump(mode="json"), headers={"ETag": etag(entry)}
    )


_DISAGREE = "If-Match and expectedVersion disagree"


async def update_entry(request: Request, db: TenantDb, container: Container) -> Response:
    """PATCH: the fields given change."""
    allowed = if_match_versions(request)
    require_json(request)
    i = parse_body(await request.body(), ENTRY_PATCH_IN)
    by = await requester(request.scope, container)
    return await _apply(db, request.path_params["id"], allowed, i, i.expected_version, by)


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
            [field_error(f, "body", "INVALID", "version and expectedVersion disagree")
             for f in ("version", "expectedVersion")],
        )  # fmt: skip
    # Null read-only fields count as absent, as null editable ones do.
    given = [n for n in READ_ONLY_FIELDS if n in i.model_fields_set and getattr(i, n) is not None]
    if given or i.version is not None:
        current = await entries.get_entry(db, entry_id)
        if current is None:
            raise not_found(entry_id)
        if i.version is not None and i.version != current.version:
            # Read at another version: a stale copy (its updatedAt differs too), a 409.
            raise problem(
                409, "version", "body", "CONFLICT",
                f"the entry is at version {current.version}, not {i.version}: GET it again, "
                "then retry",
            )  # fmt: skip
        stored = MemoryEntry.of(current)
        changed = [n for n in given if getattr(i, n) != getattr(stored, n)]
        if changed:
            raise HttpProblem(422, [_read_only(n, getattr(stored, n)) for n in changed])
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
        field, "body", "READ_ONLY",
        f"{field}: read-only; the entry's is {shown!r}: send it unchanged or leave it out",
    )  # fmt: skip


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
                [field_error("If-Match", "header", "INVALID", _DISAGREE),
                 field_error("expectedVersion", "body", "INVALID", _DISAGREE)],
            )  # fmt: skip
        # If-Match may list several versions; the service checks one, atomically: the
        # current one, if listed (a change after this read is then a stale version too).
        current = await entries.get_entry(db, entry_id)
        if current is None:
            raise not_found(entry_id)
        if current.version not in allowed:
            raise _precondition_failed(current.version)
        expected = current.version
    patch = EntryPatch(
        title=i.title, summary=i.summary, tags=i.tags, importance=i.importance,
        expected_version=expected,
    )  # fmt: skip
    try:
        with service_errors("body"):
            entry = await entries.update_entry(db, entry_id, patch, by=by)
    except HttpProblem as p:
        if p.status == 404:
            raise not_found(entry_id) from None
        if p.status == 409 and allowed is not None:
            raise _precondition_failed(None) from None
        raise
    return json_response(
        MemoryEntry.of(entry).model_dump(mode="json"), headers={"ETag": etag(entry)}
    )


def _precondition_failed(current: int | None) -> HttpProblem:
    now = "" if current is None else f' (it is at version {current}, ETag "{current}")'
    return problem(
        412, "If-Match", "header", "PRECONDITION_FAILED",
        f"the entry has changed since that ETag{now}: GET it again, then retry",
    )  # fmt: skip


async def delete_entry(request: Request, db: TenantDb, container: Container) -> Response:
    entry_id = request.path_params["id"]
    if "if-match" in request.headers:
        # entries.delete_entry takes no expected version: refusing beats pretending.
        raise problem(400, "If-Match", "header", "INVALID", "a conditional DELETE is not supported")
    with service_errors("path"):
        await entries.delete_entry(db, entry_id, by=await requester(request.scope, container))
    return Response(status_code=204)


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
                400, "Idempotency-Key", "header", "INVALID",
                "the Idempotency-Key header is for a single event: give each item of a "
                "batch its own idempotencyKey",
            )  # fmt: skip
        batch = parse_body(raw, EVENT_BATCH_IN)
        with service_errors("body"):
            results = await events.append_events(
                db, [event_in(i, i.idempotency_key) for i in batch], max_rows=max_rows
            )
        body = {"items": [event_body(r.event) for r in results]}
        return json_response(body, 200 if all(r.replayed for r in results) else 201)

    one = parse_body(raw, EVENT_IN)
    key = one.idempotency_key
    names: dict[str, tuple[str, Where]] = {}
    if header_key is not None:
        if key is not None and key != header_key:
            raise HttpProblem(
                400,
                [field_error("Idempotency-Key", "header", "INVALID",
                        "the Idempotency-Key header and idempotencyKey differ"),
                 field_error("idempotencyKey", "body", "INVALID",
                        "the Idempotency-Key header and idempotencyKey differ")],
            )  # fmt: skip
        key = header_key
        names["idempotencyKey"] = ("Idempotency-Key", "header")
    with service_errors("body", names):
        result = await events.append_event(db, event_in(one, key), max_rows=max_rows)
    # A replay answers exactly what the original append answered, with 200 instead of 201.
    response = json_response(event_body(result.event), 200 if result.replayed else 201)
    if not result.replayed:
        # Appended to the raw headers: with a headers mapping, the response takes the
        # generic (slower) path of Starlette, on every append.
        location = f"/memory/events/{result.event.id}".encode("latin-1")
        response.raw_headers.append((b"location", location))
    return response


async def get_event(request: Request, db: TenantDb, _: Container) -> Response:
    event_id = request.path_params["id"]
    event = await events.get_event(db, event_id)
    if event is None:
        raise problem(404, "id", "path", "NOT_FOUND", f"no memory event {event_id!r}")
    return json_response(event_body(event))


async def list_events(request: Request, db: TenantDb, _: Container) -> Response:
    q = parse_query(request, MemoryEventQuery)
    flt = EventFilter(
        scope=q.scope, scope_ref=q.scope_ref, kinds=q.kind, occurred_after=q.occurred_after,
        occurred_before=q.occurred_before, compressed=q.compressed, search=q.search,
    )  # fmt: skip
    with service_errors("query", LIST_NAMES):
        found, next_cursor = await events.list_events_next(db, flt, first=q.limit, after=q.cursor)
    return json_response({"items": [event_body(e) for e in found], "nextCursor": next_cursor})


async def memory_context(request: Request, db: TenantDb, _: Container) -> Response:
    q = parse_query(request, MemoryContextQuery)
    with service_errors("query", {}):
        loaded = await context.load_context(
            db, scope=q.scope, scope_ref=q.scope_ref, query=q.query, max_tokens=q.max_tokens,
            include_institutional=q.include_institutional,
        )  # fmt: skip
    return json_response(
        MemoryContext(
            markdown=loaded.markdown,
            tokens=loaded.tokens,
            entries=[_context_entry(e, loaded.matches) for e in loaded.entries],
            events=[MemoryEvent.of(e) for e in loaded.events],
            truncated=loaded.truncated,
        ).model_dump(mode="json", exclude=_UNSCORED if loaded.matches is None else None)
    )


async def export_memory(request: Request, db: TenantDb, container: Container) -> Response:
    q = parse_query(request, MemoryExportQuery)
    with service_errors("query", {}):
        lines = await portability.subject_export(
            db, scope=q.scope, scope_ref=q.scope_ref,
            max_records=container.settings.export_max_records,
        )  # fmt: skip
    # Streamed a keyset page at a time, each page its own read: a slow client holds one
    # page in memory and no database connection between pages.
    return StreamingResponse(
        lines,
        media_type=portability.MEDIA_TYPE,
        headers={"Content-Disposition": 'attachment; filename="memory-export.jsonl"'},
    )


# Without a query, the context's entries carry no score.
_UNSCORED: Any = {"entries": {"__all__": {"score", "matched_terms", "similarity"}}}


def _context_entry(e: Entry, matches: dict[str, tuple[float, list[str]]] | None) -> MemoryEntryItem:
    score, matched = (None, None) if matches is None else matches.get(e.id, (0.0, []))
    return MemoryEntryItem(**dict(MemoryEntry.of(e)), score=score, matched_terms=matched)


async def no_route(request: Request, db: TenantDb, _: Container) -> Response:
    raise problem(404, None, "path", "NOT_FOUND", f"no route {request.url.path}")
