"""REST edge: the product's documented /memory routes, as thin HTTP over app.services.

Owns parsing (pydantic models), status codes, ETag/If-Match, Idempotency-Key and
problem+json errors. Every domain rule stays in the services, which GraphQL calls too.
"""

import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Annotated, Any, ClassVar, Literal, TypeVar

import orjson
from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
)
from pydantic.alias_generators import to_camel
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Send
from starlette.types import Scope as AsgiScope

from app.deps import Container
from app.edge.auth import TenantBound, current_request_id
from app.edge.limits import MAX_BODY_BYTES, BodyTooLarge
from app.edge.responses import send_json
from app.edge.unavailable import problem_unavailable, retry_after_headers
from app.errors import ErrorCode, JetError, JetErrors
from app.services import context, entries, events, limits
from app.services.records import (
    Edge,
    Entry,
    EntryFilter,
    EntryIn,
    EntryPatch,
    EntrySource,
    Event,
    EventFilter,
    EventIn,
    Scope,
    new_event_in,
)
from app.storage.tenants import TenantDb
from app.storage.unavailable import TenantUnavailable

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"
Where = Literal["body", "query", "header", "path"]
# Field errors of one problem, at most: a 1,000-item batch must not answer 10,000 lines.
MAX_PROBLEM_ERRORS = 50

# ------------------------------------------------------------------------------ types


def _lower(value: object) -> object:
    # The product's reference writes enum values lowercase; GraphQL clients send uppercase.
    return value.lower() if isinstance(value, str) else value


def _utc(value: datetime) -> datetime:
    try:
        return value.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+01:00 has no UTC equivalent
        raise ValueError("timestamp is out of range") from None


_ENUM_NOTE = "; uppercase (as in GraphQL) is accepted too"
ScopeIn = Annotated[Scope, BeforeValidator(_lower), Field(description="memory scope" + _ENUM_NOTE)]
SourceIn = Annotated[
    EntrySource, BeforeValidator(_lower), Field(description="entry source" + _ENUM_NOTE)
]
# Aware only: a naive time is ambiguous. Normalised to UTC (and range-checked) here.
Timestamp = Annotated[AwareDatetime, AfterValidator(_utc)]


def _limit(**schema: Any) -> Any:
    """Document a limit of app.services.limits in the schema; the service enforces it."""
    return Field(default=None, json_schema_extra=schema)


class _In(BaseModel):
    """Request bodies: camelCase names only, no unknown fields, no type coercion."""

    model_config = ConfigDict(alias_generator=to_camel, extra="forbid", strict=True)


class _Query(BaseModel):
    """Query strings: every value arrives as text, so numbers and booleans are coerced."""

    model_config = ConfigDict(alias_generator=to_camel, extra="forbid")
    repeatable: ClassVar[frozenset[str]] = frozenset()


class _Out(BaseModel):
    """Responses, built from service records and serialised by their camelCase aliases."""

    model_config = ConfigDict(
        alias_generator=to_camel, validate_by_name=True, serialize_by_alias=True
    )


# -------------------------------------------------------------------- request models
# Same names and fields as the GraphQL inputs (api-contract.graphql).


class AppendMemoryEventInput(_In):
    """One raw event to append (POST /memory/events, alone or in an array)."""

    scope: ScopeIn
    scope_ref: str | None = _limit(
        maxLength=limits.REF_MAX_CHARS,
        description="entity_id / project_id / user_id depending on scope; "
        "absent for institutional, required otherwise",
    )
    kind: str = Field(
        description="lower snake_case word: call_summary, decision, campaign_change, ...",
        json_schema_extra={"maxLength": limits.KIND_MAX_CHARS},
    )
    body: str = Field(
        description=f"Markdown, at most {limits.EVENT_BODY_MAX_BYTES} bytes of UTF-8",
    )
    source: str | None = _limit(
        maxLength=limits.REF_MAX_CHARS, description="where it came from: inbox, webhook, ..."
    )
    source_ref: str | None = _limit(
        maxLength=limits.REF_MAX_CHARS, description="id in the source system"
    )
    occurred_at: Timestamp | None = Field(
        default=None,
        description="ISO 8601 with a time zone; defaults to the time the server receives it; "
        f"at most {limits.FUTURE_SKEW_HOURS} hours in the future",
    )
    idempotency_key: str | None = _limit(
        maxLength=limits.REF_MAX_CHARS,
        description="a retried append with the same key returns the original event; "
        "the Idempotency-Key header sets it too",
    )


class CreateMemoryEntryInput(_In):
    """A curated entry to create (POST /memory)."""

    scope: ScopeIn
    scope_ref: str | None = _limit(maxLength=limits.REF_MAX_CHARS)
    title: str = Field(
        description="one line", json_schema_extra={"maxLength": limits.TITLE_MAX_CHARS}
    )
    summary: str = Field(
        description=f"Markdown, at most {limits.ENTRY_SUMMARY_MAX_BYTES} bytes of UTF-8"
    )
    tags: list[str] | None = _limit(
        maxItems=limits.TAGS_MAX,
        items={"type": "string", "maxLength": limits.TAG_MAX_CHARS},
        description="duplicates are dropped",
    )
    importance: int | None = _limit(
        minimum=1, maximum=5, description="1 to 5, retention priority; default 3"
    )
    source: SourceIn | None = Field(
        default=None, description="default manual; compactor is reserved for the compactor"
    )


class UpdateMemoryEntryInput(_In):
    """PUT /memory/{id}: the fields given change; absent or null ones stay as they are."""

    title: str | None = _limit(maxLength=limits.TITLE_MAX_CHARS)
    summary: str | None = None
    tags: list[str] | None = _limit(
        maxItems=limits.TAGS_MAX, items={"type": "string", "maxLength": limits.TAG_MAX_CHARS}
    )
    importance: int | None = _limit(minimum=1, maximum=5)
    expected_version: int | None = _limit(
        minimum=1,
        description="the update only applies if the entry is still at this version "
        "(409 otherwise); the If-Match header does the same with 412",
    )


class MemoryEntryQuery(_Query):
    """GET /memory: without search, most recently updated first; with it, most relevant."""

    repeatable = frozenset({"tag", "source"})

    scope: ScopeIn | None = None
    scope_ref: str | None = None
    tag: list[str] | None = Field(default=None, description="repeatable: all must match")
    search: str | None = _limit(
        maxLength=limits.SEARCH_MAX_CHARS,
        description="full-text search over title, summary and tags, ranked by relevance",
    )
    min_importance: int | None = _limit(minimum=1, maximum=5)
    source: list[SourceIn] | None = Field(default=None, description="repeatable: any may match")
    limit: int = Field(default=20, ge=1, json_schema_extra={"maximum": limits.PAGE_MAX})
    cursor: str | None = Field(default=None, description="nextCursor of the previous page")


class MemoryEventQuery(_Query):
    """GET /memory/events: newest occurredAt first (most relevant first with search)."""

    repeatable = frozenset({"kind"})

    scope: ScopeIn | None = None
    scope_ref: str | None = None
    kind: list[str] | None = Field(default=None, description="repeatable: any may match")
    occurred_after: Timestamp | None = None
    occurred_before: Timestamp | None = None
    compressed: bool | None = Field(
        default=None, description="absent: all; false: only uncompressed; true: only compressed"
    )
    search: str | None = _limit(
        maxLength=limits.SEARCH_MAX_CHARS, description="full-text search over the body"
    )
    limit: int = Field(default=50, ge=1, json_schema_extra={"maximum": limits.PAGE_MAX})
    cursor: str | None = Field(default=None, description="nextCursor of the previous page")


class MemoryContextQuery(_Query):
    """GET /memory/context: the context loader, curated entries plus uncompressed recent
    events packed into Markdown within maxTokens."""

    repeatable = frozenset[str]()

    scope: ScopeIn
    scope_ref: str | None = None
    query: str | None = _limit(
        maxLength=limits.SEARCH_MAX_CHARS, description="rank entries by relevance to this"
    )
    max_tokens: int = Field(
        default=2000,
        ge=context.MIN_TOKENS,
        le=context.MAX_TOKENS,
        description="the budget; `tokens` of the answer is never above it",
    )
    include_institutional: bool = Field(
        default=True, description="also load the institutional scope's memory"
    )


EventBatchIn = Annotated[
    list[AppendMemoryEventInput],
    Field(json_schema_extra={"minItems": 1, "maxItems": limits.BATCH_MAX}),
]
_EVENT_IN = TypeAdapter(AppendMemoryEventInput)
_EVENT_BATCH_IN: TypeAdapter[list[AppendMemoryEventInput]] = TypeAdapter(EventBatchIn)
_ENTRY_IN = TypeAdapter(CreateMemoryEntryInput)
_ENTRY_PATCH_IN = TypeAdapter(UpdateMemoryEntryInput)

# ------------------------------------------------------------------- response models


class MemoryEvent(_Out):
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


class MemoryEntry(_Out):
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
        default=None, description="relevance to `search`; present only when searching"
    )


class MemoryEntryList(_Out):
    items: list[MemoryEntryItem]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: done")


class MemoryEventList(_Out):
    items: list[MemoryEvent]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: done")


class MemoryEventBatch(_Out):
    items: list[MemoryEvent] = Field(description="in the order of the request")


class MemoryContext(_Out):
    """What the context loader hands an agent session."""

    markdown: str = Field(description="ready to paste into a prompt")
    tokens: int = Field(description="estimated tokens of markdown")
    entries: list[MemoryEntry]
    events: list[MemoryEvent] = Field(description="recent events not yet folded into a summary")
    truncated: bool = Field(description="something relevant was left out to stay in budget")


class ProblemError(_Out):
    """One offending field."""

    field: str | None = Field(
        description="dotted path in the body (`tags.2`, `3.body` in a batch), or the name of "
        "the query parameter or header; null when the whole body is at fault"
    )
    in_: Where = Field(alias="in")
    code: str = Field(
        description="INVALID, TOO_LARGE, NOT_FOUND, CONFLICT, FORBIDDEN, MALFORMED, "
        "UNAUTHENTICATED, UNSUPPORTED_MEDIA_TYPE, PRECONDITION_FAILED, METHOD_NOT_ALLOWED, "
        "INTERNAL"
    )
    message: str


class Problem(_Out):
    """RFC 9457 problem details, with the offending fields in `errors`."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    request_id: str = Field(description="also in the X-Request-Id response header")
    errors: list[ProblemError]


# ------------------------------------------------------------------------- problems


class HttpProblem(Exception):
    """An expected failure, answered as application/problem+json."""

    def __init__(
        self,
        status: int,
        errors: Sequence[ProblemError],
        *,
        detail: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.status = status
        self.errors = list(errors)[:MAX_PROBLEM_ERRORS]
        if detail is None:
            first = errors[0].message if errors else _title(status)
            detail = first if len(errors) <= 1 else f"{first} (and {len(errors) - 1} more)"
        self.detail = detail
        self.headers = dict(headers or {})
        super().__init__(detail)

    def body(self, request_id: str) -> dict[str, Any]:
        return Problem(
            title=_title(self.status), status=self.status, detail=self.detail,
            request_id=request_id, errors=self.errors,
        ).model_dump(mode="json")  # fmt: skip

    def response(self, request_id: str) -> Response:
        return JSONResponse(
            self.body(request_id), self.status, headers=self.headers, media_type=PROBLEM_JSON
        )


# RFC 9110's names where Python's http module still has RFC 7231's.
_TITLES = {413: "Content Too Large", 422: "Unprocessable Content"}


def _title(status: int) -> str:
    return _TITLES.get(status) or HTTPStatus(status).phrase


def _error(field: str | None, where: Where, code: str, message: str) -> ProblemError:
    return ProblemError(field=field, in_=where, code=code, message=message)


def problem(
    status: int,
    field: str | None,
    where: Where,
    code: str,
    message: str,
    headers: Mapping[str, str] | None = None,
) -> HttpProblem:
    return HttpProblem(status, [_error(field, where, code, message)], headers=headers)


async def problem_unauthorized(send: Send, message: str, request_id: str) -> None:
    """TenantBound's 401, in problem+json."""
    p = problem(401, "Authorization", "header", "UNAUTHENTICATED", message)
    await send_json(
        send, 401, p.body(request_id), content_type=PROBLEM_JSON,
        headers=[(b"www-authenticate", b"Bearer"), (b"x-request-id", request_id.encode())],
    )  # fmt: skip


def unavailable_problem(exc: TenantUnavailable) -> HttpProblem:
    """A tenant database locked, corrupt or full (app/edge/unavailable.py): not a bare 500."""
    return problem(exc.status, None, "body", exc.code, exc.message, retry_after_headers(exc))


async def problem_internal_error(send: Send, message: str, request_id: str) -> None:
    """TenantBound's 500 (e.g. a tenant database that cannot open), in problem+json."""
    p = problem(500, None, "body", "INTERNAL", f"{message}; quote the requestId")
    await send_json(send, 500, p.body(request_id), content_type=PROBLEM_JSON)


async def problem_too_many(send: Send, message: str, request_id: str) -> None:
    """TenantBound's 429 (the API key's rate limit), in problem+json."""
    p = problem(429, "Authorization", "header", "RATE_LIMITED", message)
    await send_json(send, 429, p.body(request_id), content_type=PROBLEM_JSON)


async def problem_too_large(scope: AsgiScope, send: Send, limit: int) -> None:
    """BodyLimit's 413, in problem+json."""
    request_id = current_request_id(scope)
    message = f"the request body is over the limit of {limit} bytes"
    p = problem(413, None, "body", "TOO_LARGE", message)
    await send_json(
        send, 413, p.body(request_id), content_type=PROBLEM_JSON,
        headers=[(b"x-request-id", request_id.encode())],
    )  # fmt: skip


# Service error code → status when the input came from the body (query: 400, see below).
_STATUS = {
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.CONFLICT: 409,
    ErrorCode.INVALID: 422,
    ErrorCode.TOO_LARGE: 422,  # a field over its limit; 413 is the whole request body's
    ErrorCode.FORBIDDEN: 422,  # a reserved value (source=compactor), not a missing right
    ErrorCode.BUDGET_EXCEEDED: 422,
}
# Service field paths of the GraphQL shape → REST names ("after" is our "cursor").
_LIST_NAMES: dict[str, tuple[str, Where]] = {
    "after": ("cursor", "query"),
    "first": ("limit", "query"),
}


_ARGUMENT = re.compile(r"^(?:input|filter)(?:\.|$)")


def _service_problem(
    exc: JetError | JetErrors, where: Where, names: Mapping[str, tuple[str, Where]]
) -> HttpProblem:
    found = exc.errors if isinstance(exc, JetErrors) else [exc]
    errors = []
    for e in found:
        # GraphQL's paths start at the argument ("input.3.body", "filter.search"); REST's
        # at the body or the parameter ("3.body", "search").
        dotted = ".".join(e.field)
        old = _ARGUMENT.sub("", dotted)
        name: str | None = old or None
        at: Where = where
        if old in names:
            name, at = names[old]
        message = e.message
        if name is not None and name != dotted:  # messages use GraphQL's names too
            message = re.sub(rf"^(?:(?:input|filter)\.)?{re.escape(old)}\b", name, message)
        errors.append(_error(name, at, e.code.value, message))
    status = _STATUS.get(found[0].code, 422)
    if where == "query" and status == 422:
        status = 400
    return HttpProblem(status, errors)


class _service_errors:  # noqa: N801 (used as `with _service_errors(...)`, like a function)
    """Answer a service's expected failure as problem+json naming the REST field.

    A class rather than a @contextmanager: entered on every write, and a generator-based
    context manager costs a generator and several calls more per request.
    """

    __slots__ = ("names", "where")

    def __init__(self, where: Where, names: Mapping[str, tuple[str, Where]] | None = None) -> None:
        self.where = where
        self.names = names

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _: Any) -> None:
        if isinstance(exc, (JetError, JetErrors)):
            raise _service_problem(exc, self.where, self.names or {}) from None


def _validation_problem(exc: ValidationError, where: Where) -> HttpProblem:
    details = exc.errors(include_url=False, include_context=False, include_input=False)
    if where == "body" and any(d["type"] == "json_invalid" for d in details):
        msg = next(d["msg"] for d in details if d["type"] == "json_invalid")
        return problem(400, None, "body", "MALFORMED", f"the body is not valid JSON: {msg}")
    errors = []
    for d in details[:MAX_PROBLEM_ERRORS]:
        field = ".".join(str(part) for part in d["loc"]) or None
        if field is None and d["type"] in ("model_type", "model_attributes_type"):
            message = "the body must be a JSON object"
        elif field is None and d["type"] == "list_type":
            message = "the body must be a JSON array"
        elif d["type"] == "extra_forbidden":
            message = (
                f"{field}: unknown field" if where == "body" else f"{field}: unknown parameter"
            )
        else:
            message = f"{field}: {d['msg']}" if field else d["msg"]
        errors.append(_error(field, where, "INVALID", message))
    return HttpProblem(422 if where == "body" else 400, errors)


# ------------------------------------------------------------------------- parsing

T = TypeVar("T")
Q = TypeVar("Q", bound=_Query)


def _require_json(request: Request) -> None:
    _require_json_type(request.headers.get("content-type"))


_CHARSET = re.compile(r"charset\s*=\s*\"?([\w-]+)", re.IGNORECASE)


def _require_json_type(ctype: str | None) -> None:
    """415 unless `ctype` (the Content-Type header) is JSON in UTF-8."""
    media, _, params = (ctype or "").partition(";")
    charset = _CHARSET.search(params) if params else None
    if (
        media.strip().lower() != "application/json"
        or charset is not None
        and charset.group(1).lower() not in ("utf-8", "utf8")
    ):
        raise HttpProblem(
            415,
            [_error("Content-Type", "header", "UNSUPPORTED_MEDIA_TYPE",
                    "send the body as JSON: Content-Type: application/json (UTF-8)")],
        )  # fmt: skip


async def _body(request: Request) -> bytes:
    """`await _body(request)` as Starlette reads it (ClientDisconnect if the client left
    first), without its async generator and `aclosing` per request: this is every write's
    path. Kept on the request, so a later `request.body()` answers the same bytes."""
    chunks: list[bytes] = []
    receive = request.receive
    while True:
        message = await receive()
        if message["type"] == "http.request":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        elif message["type"] == "http.disconnect":
            raise ClientDisconnect()
    body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    request._body = body
    request._stream_consumed = True
    return body


def _parse(raw: bytes, adapter: TypeAdapter[T]) -> T:
    try:
        return adapter.validate_json(raw)
    except ValidationError as exc:
        raise _validation_problem(exc, "body") from None


def _query(request: Request, model: type[Q]) -> Q:
    names = {field.alias or name for name, field in model.model_fields.items()}
    data: dict[str, Any] = {}
    errors: list[ProblemError] = []
    for name in dict.fromkeys(request.query_params.keys()):
        # An empty value means absent: templated webhooks send `scopeRef=` for institutional.
        values = [v for v in request.query_params.getlist(name) if v != ""]
        if name not in names:
            errors.append(_error(name, "query", "INVALID", f"{name}: unknown parameter"))
        elif name in model.repeatable:
            data[name] = values or None
        elif len(values) > 1:
            errors.append(_error(name, "query", "INVALID", f"{name}: given more than once"))
        elif values:
            data[name] = values[0]
    if errors:
        raise HttpProblem(400, errors)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _validation_problem(exc, "query") from None


_ETAG = re.compile(r'(?:W/)?"(\d{1,18})"')


def _etag(entry: Entry) -> str:
    # Strong: any change to an entry bumps its version, so equal versions are equal bytes.
    return f'"{entry.version}"'


def _if_match(request: Request) -> list[int] | None:
    """The versions an If-Match header allows, or None for absent or `*`."""
    raw = ",".join(request.headers.getlist("if-match"))
    if not raw or raw.strip() == "*":
        return None
    versions = []
    for part in raw.split(","):
        found = _ETAG.fullmatch(part.strip())
        if found is None:
            raise problem(
                400, "If-Match", "header", "INVALID",
                'If-Match must hold ETags of this API, e.g. "3" (the entry\'s version), or *',
            )  # fmt: skip
        versions.append(int(found.group(1)))
    return versions


def _event_in(i: AppendMemoryEventInput, idempotency_key: str | None) -> EventIn:
    return new_event_in(
        scope=i.scope, scope_ref=i.scope_ref, kind=i.kind, body=i.body, source=i.source,
        source_ref=i.source_ref, occurred_at=i.occurred_at, idempotency_key=idempotency_key,
    )  # fmt: skip


def dumps(content: Any) -> bytes:
    """The JSON of a response body. Datetimes (from event_body) must be UTC: they come
    out as pydantic writes them, with `Z`."""
    return orjson.dumps(content, option=orjson.OPT_UTC_Z)


class _OrjsonResponse(JSONResponse):
    """Starlette's JSONResponse (UTF-8, compact), encoded by orjson: several times faster
    on a page of items. JSON's numbers, strings and nulls come out the same."""

    def __init__(
        self, content: Any, status_code: int = 200, headers: Mapping[str, str] | None = None
    ) -> None:
        if headers:
            super().__init__(content, status_code, headers)
            return
        # Without headers, what Response.__init__ and init_headers (Starlette 1.10) make
        # of it, built directly: every append answers this way, and their generic path
        # (the headers mapping, its key scan, the media type's charset check) cost ~1 us
        # of the ~1.5 it took. tests/edge/test_rest_responses.py compares the two.
        self.status_code = status_code
        self.background = None
        self.body = body = dumps(content)
        if status_code < 200 or status_code in (204, 304):
            self.raw_headers = [(b"content-type", b"application/json")]
        else:
            self.raw_headers = [
                (b"content-length", str(len(body)).encode("latin-1")),
                (b"content-type", b"application/json"),
            ]

    def render(self, content: Any) -> bytes:
        return dumps(content)


def _json(content: object, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return _OrjsonResponse(content, status, headers)


def _not_found(entry_id: str) -> HttpProblem:
    return problem(404, "id", "path", "NOT_FOUND", f"no memory entry {entry_id!r}")


def _is_json_array(raw: bytes) -> bool:
    return raw.lstrip(b" \t\r\n")[:1] == b"["


# ------------------------------------------------------------------------- handlers

Handler = Callable[[Request, TenantDb, Container], Awaitable[Response]]


async def list_entries(request: Request, db: TenantDb, _: Container) -> Response:
    q = _query(request, MemoryEntryQuery)
    flt = EntryFilter(
        scope=q.scope, scope_ref=q.scope_ref, tags=q.tag, search=q.search,
        min_importance=q.min_importance, sources=q.source,
    )  # fmt: skip
    with _service_errors("query", _LIST_NAMES):
        page = await entries.list_entries(db, flt, first=q.limit, after=q.cursor)
    searching = q.search is not None

    def item(edge: Edge[Entry]) -> dict[str, Any]:
        out = MemoryEntryItem(**dict(MemoryEntry.of(edge.node)), score=edge.score)
        return out.model_dump(mode="json", exclude=None if searching else {"score"})

    return _json(
        {
            "items": [item(e) for e in page.edges],
            "nextCursor": page.end_cursor if page.has_next_page else None,
        }
    )


async def create_entry(request: Request, db: TenantDb, _: Container) -> Response:
    _require_json(request)
    i = _parse(await _body(request), _ENTRY_IN)
    entry_in = EntryIn(
        scope=i.scope, scope_ref=i.scope_ref, title=i.title, summary=i.summary,
        tags=list(i.tags or []), importance=3 if i.importance is None else i.importance,
        source=i.source or EntrySource.MANUAL,
    )  # fmt: skip
    with _service_errors("body"):
        entry = await entries.create_entry(db, entry_in)
    headers = {"Location": f"/memory/{entry.id}", "ETag": _etag(entry)}
    return _json(MemoryEntry.of(entry).model_dump(mode="json"), 201, headers)


async def get_entry(request: Request, db: TenantDb, _: Container) -> Response:
    entry_id = request.path_params["id"]
    entry = await entries.get_entry(db, entry_id)
    if entry is None:
        raise _not_found(entry_id)
    return _json(MemoryEntry.of(entry).model_dump(mode="json"), headers={"ETag": _etag(entry)})


async def update_entry(request: Request, db: TenantDb, _: Container) -> Response:
    entry_id = request.path_params["id"]
    allowed = _if_match(request)
    _require_json(request)
    i = _parse(await _body(request), _ENTRY_PATCH_IN)
    expected = i.expected_version
    if allowed is not None:
        if expected is not None and expected not in allowed:
            raise HttpProblem(
                400,
                [_error("If-Match", "header", "INVALID", "If-Match and expectedVersion disagree"),
                 _error("expectedVersion", "body", "INVALID",
                        "If-Match and expectedVersion disagree")],
            )  # fmt: skip
        # If-Match may list several versions; the service checks one, atomically: the
        # current one, if listed (a change after this read is then a stale version too).
        current = await entries.get_entry(db, entry_id)
        if current is None:
            raise _not_found(entry_id)
        if current.version not in allowed:
            raise _precondition_failed(current.version)
        expected = current.version
    patch = EntryPatch(
        title=i.title, summary=i.summary, tags=i.tags, importance=i.importance,
        expected_version=expected,
    )  # fmt: skip
    try:
        with _service_errors("body"):
            entry = await entries.update_entry(db, entry_id, patch)
    except HttpProblem as p:
        if p.status == 404:
            raise _not_found(entry_id) from None
        if p.status == 409 and allowed is not None:
            raise _precondition_failed(None) from None
        raise
    return _json(MemoryEntry.of(entry).model_dump(mode="json"), headers={"ETag": _etag(entry)})


def _precondition_failed(current: int | None) -> HttpProblem:
    now = "" if current is None else f' (it is at version {current}, ETag "{current}")'
    return problem(
        412, "If-Match", "header", "PRECONDITION_FAILED",
        f"the entry has changed since that ETag{now}: GET it again, then retry",
    )  # fmt: skip


async def delete_entry(request: Request, db: TenantDb, _: Container) -> Response:
    entry_id = request.path_params["id"]
    if "if-match" in request.headers:
        # entries.delete_entry takes no expected version: refusing beats pretending.
        raise problem(400, "If-Match", "header", "INVALID", "a conditional DELETE is not supported")
    with _service_errors("path"):
        await entries.delete_entry(db, entry_id)
    return Response(status_code=204)


def _headers(scope: AsgiScope, first: bytes, second: bytes) -> tuple[str | None, str | None]:
    """The values of two request headers (lowercase names), each its first, as
    `request.headers.get(name)` gives them, in one pass over the scope's headers and
    without building Starlette's Headers (~0.8 us a request for two lookups)."""
    one = two = None
    for name, value in scope["headers"]:
        if name == first:
            if one is None:
                one = value.decode("latin-1")
        elif name == second and two is None:
            two = value.decode("latin-1")
    return one, two


async def append_events(request: Request, db: TenantDb, container: Container) -> Response:
    content_type, header_key = _headers(request.scope, b"content-type", b"idempotency-key")
    _require_json_type(content_type)
    raw = await _body(request)
    max_rows = container.settings.group_commit_max_rows
    if _is_json_array(raw):
        if header_key is not None:
            # A key derived per item could not tell a retried batch from a longer one, so
            # "same key, different body → 409" would not hold: each item brings its own.
            raise problem(
                400, "Idempotency-Key", "header", "INVALID",
                "the Idempotency-Key header is for a single event: give each item of a "
                "batch its own idempotencyKey",
            )  # fmt: skip
        batch = _parse(raw, _EVENT_BATCH_IN)
        with _service_errors("body"):
            results = await events.append_events(
                db, [_event_in(i, i.idempotency_key) for i in batch], max_rows=max_rows
            )
        body = {"items": [event_body(r.event) for r in results]}
        return _json(body, 200 if all(r.replayed for r in results) else 201)

    one = _parse(raw, _EVENT_IN)
    key = one.idempotency_key
    names: dict[str, tuple[str, Where]] = {}
    if header_key is not None:
        if key is not None and key != header_key:
            raise HttpProblem(
                400,
                [_error("Idempotency-Key", "header", "INVALID",
                        "the Idempotency-Key header and idempotencyKey differ"),
                 _error("idempotencyKey", "body", "INVALID",
                        "the Idempotency-Key header and idempotencyKey differ")],
            )  # fmt: skip
        key = header_key
        names["idempotencyKey"] = ("Idempotency-Key", "header")
    with _service_errors("body", names):
        result = await events.append_event(db, _event_in(one, key), max_rows=max_rows)
    # A replay answers exactly what the original append answered, with 200 instead of 201.
    return _json(event_body(result.event), 200 if result.replayed else 201)


async def list_events(request: Request, db: TenantDb, _: Container) -> Response:
    q = _query(request, MemoryEventQuery)
    flt = EventFilter(
        scope=q.scope, scope_ref=q.scope_ref, kinds=q.kind, occurred_after=q.occurred_after,
        occurred_before=q.occurred_before, compressed=q.compressed, search=q.search,
    )  # fmt: skip
    with _service_errors("query", _LIST_NAMES):
        found, next_cursor = await events.list_events_next(db, flt, first=q.limit, after=q.cursor)
    return _json({"items": [event_body(e) for e in found], "nextCursor": next_cursor})


async def memory_context(request: Request, db: TenantDb, _: Container) -> Response:
    q = _query(request, MemoryContextQuery)
    with _service_errors("query", {}):
        loaded = await context.load_context(
            db, scope=q.scope, scope_ref=q.scope_ref, query=q.query, max_tokens=q.max_tokens,
            include_institutional=q.include_institutional,
        )  # fmt: skip
    return _json(
        MemoryContext(
            markdown=loaded.markdown,
            tokens=loaded.tokens,
            entries=[MemoryEntry.of(e) for e in loaded.entries],
            events=[MemoryEvent.of(e) for e in loaded.events],
            truncated=loaded.truncated,
        ).model_dump(mode="json")
    )


async def no_route(request: Request, db: TenantDb, _: Container) -> Response:
    raise problem(404, None, "path", "NOT_FOUND", f"no route {request.url.path}")


# -------------------------------------------------------------------------- routing


class Resource:
    """One path: TenantBound (401, 413), method dispatch, problem+json errors."""

    def __init__(
        self,
        get_container: Callable[[], Container],
        handlers: Mapping[str, Handler],
        *,
        fallback: Handler | None = None,
    ) -> None:
        self._get_container = get_container
        self.handlers = dict(handlers)
        self._fallback = fallback
        self._app: ASGIApp | None = None
        self._container: Container | None = None

    def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> Awaitable[None]:
        # Not a coroutine itself: it returns TenantBound's, which answers the request (a
        # frame fewer to create and to resume through on every request, ~0.4 us).
        # The container exists once lifespan has started, and is a new one if the lifespan
        # restarts (test clients do that): never keep serving a closed one.
        container = self._get_container()
        if self._app is None or container is not self._container:
            self._container = container
            # The body limit after the key, within the lease (as when BodyLimit was inside
            # TenantBound here): a request without a valid key is a 401 whatever its size.
            self._app = TenantBound(
                self._dispatch,
                container,
                unauthorized=problem_unauthorized,
                internal_error=problem_internal_error,
                unavailable=problem_unavailable,
                too_many=problem_too_many,
                limit=MAX_BODY_BYTES,
                too_large=problem_too_large,
            )
        return self._app(scope, receive, send)

    async def _dispatch(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        assert self._container is not None
        state = scope["state"]
        request_id: str = state["request_id"]
        request = Request(scope, receive)
        try:
            handler = self.handlers.get(scope["method"], self._fallback)
            if handler is None:
                allow = ", ".join(self.handlers)
                raise problem(
                    405, None, "path", "METHOD_NOT_ALLOWED",
                    f"{request.method} is not allowed here; allowed: {allow}", {"Allow": allow},
                )  # fmt: skip
            response = await handler(request, state["db"], self._container)
        except HttpProblem as p:
            response = p.response(request_id)
        except TenantUnavailable as exc:
            log.log(logging.ERROR if exc.reason == "corrupt" else logging.WARNING,
                    "tenant database unavailable (%s)", exc.reason,
                    extra={"request_id": request_id})  # fmt: skip
            response = unavailable_problem(exc).response(request_id)
        except (BodyTooLarge, ClientDisconnect):
            raise  # TenantBound's: a 413, or for a client that left no answer (a 499)
        except Exception:
            log.exception("REST request failed", extra={"request_id": request_id})
            response = problem(
                500, None, "body", "INTERNAL", "internal server error; quote the requestId"
            ).response(request_id)
        # As response.headers["X-Request-Id"] = request_id, without MutableHeaders' scan
        # and copy: no handler sets that header.
        response.raw_headers.append((b"x-request-id", request_id.encode("latin-1")))
        await response(scope, receive, send)


def rest_routes(get_container: Callable[[], Container]) -> list[BaseRoute]:
    """The /memory routes, full paths (no Mount, so GET /memory never redirects)."""

    def resource(handlers: Mapping[str, Handler], fallback: Handler | None = None) -> Resource:
        return Resource(get_container, handlers, fallback=fallback)

    # Order matters: literal paths before /memory/{id}, which would capture "events".
    return [
        Route("/memory", resource({"GET": list_entries, "POST": create_entry})),
        Route("/memory/events", resource({"GET": list_events, "POST": append_events})),
        Route("/memory/context", resource({"GET": memory_context})),
        Route(
            "/memory/{id}",
            resource({"GET": get_entry, "PUT": update_entry, "DELETE": delete_entry}),
        ),
        # Anything else under /memory: a problem+json 404 rather than Starlette's text one.
        Route("/memory/{rest:path}", resource({}, fallback=no_route)),
    ]
