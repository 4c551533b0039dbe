"""REST request models and the bases of every REST model: pydantic, camelCase, the same
names as GraphQL's. They parse what the routes take and document it (app/edge/rest/openapi.py);
the services enforce the limits they document. The answers: response_models.py.
"""

import re
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Literal

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
from pydantic.config import JsonDict
from pydantic_core import PydanticCustomError

from app.services import limits
from app.services.context import loader
from app.services.records import EntrySource, Scope


def _lower(value: object) -> object:
    # The product's reference writes enum values lowercase; GraphQL clients send uppercase.
    return value.lower() if isinstance(value, str) else value


def _utc(value: datetime) -> datetime:
    try:
        return value.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+01:00 has no UTC equivalent
        bound = "at most 9999-12-31T23:59:59.999999Z" if value.year > 1 else "after 1970"
        raise ValueError(f"timestamp is out of range: it must be {bound} in UTC") from None


_ISO_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")
_DATETIME = TypeAdapter(datetime)


def _iso_8601(value: object) -> object:
    """An ISO 8601 date and time, as GraphQL's DateTime takes: pydantic alone would read a
    number, or a numeric string, as seconds since 1970."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not _ISO_DATE_TIME.match(value):
        raise ValueError(
            "must be an ISO 8601 date and time with a time zone, e.g. 2026-05-01T09:30:00Z"
        )
    try:  # parsed here, as pydantic does: the strict body models take only a datetime
        return _DATETIME.validate_python(value)
    except ValidationError as exc:
        raise ValueError(exc.errors()[0]["msg"]) from None


_ENUM_NOTE = "; uppercase (as in GraphQL) is accepted too"
ScopeIn = Annotated[Scope, BeforeValidator(_lower), Field(description="memory scope" + _ENUM_NOTE)]
SourceIn = Annotated[
    EntrySource, BeforeValidator(_lower), Field(description="entry source" + _ENUM_NOTE)
]


def _creatable(value: object) -> object:
    value = _lower(value)
    if value == EntrySource.COMPACTOR.value:
        # Its own error type: answered as FORBIDDEN (a reserved value), as the service does.
        raise PydanticCustomError("forbidden", "source compactor is reserved for the compactor")
    return value


# What a client may create: the enum without `compactor`, so no error offers it.
CreatableSource = Annotated[
    Literal["chat", "call", "email", "manual"],
    BeforeValidator(_creatable),
    Field(description="entry source" + _ENUM_NOTE),
]


def _whole(value: object) -> object:
    # JSON Schema's integer includes 5.0 (a number without a fraction): so does the API.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Whole = Annotated[int, BeforeValidator(_whole)]
# ISO 8601 text, aware only: a naive time is ambiguous. Normalised to UTC (and
# range-checked) here; the services refuse a time before 1970.
Timestamp = Annotated[
    AwareDatetime,
    BeforeValidator(_iso_8601),
    AfterValidator(_utc),
    # The services refuse a time before 1970: the year says so in the document.
    Field(json_schema_extra={"pattern": r"^(19[7-9][0-9]|[2-9][0-9]{3})-"}),
]


# The services' text rules, as JSON Schema patterns for the OpenAPI document (documentation
# only: app/services/validation.py enforces them). No control character, DEL, C1 or
# line/paragraph separator in a one-line value, which is not blank either.
_CONTROL = r"\u0000-\u001f\u007f-\u009f\u2028\u2029"
# What str.strip() removes, spelled out: engines differ on what `\s` holds (U+001C-U+001F,
# U+0085, U+FEFF), and a value the services call blank must fail the pattern in every one.
_SPACE = r"\t-\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
ONE_LINE_PATTERN = rf"^[^{_CONTROL}]*[^{_SPACE}{_CONTROL}][^{_CONTROL}]*$"
# A tag has no surrounding space.
TAG_PATTERN = rf"^[^{_SPACE}{_CONTROL}]([^{_CONTROL}]*[^{_SPACE}{_CONTROL}])?$"
KIND_PATTERN = r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$"
TEXT_PATTERN = rf"^[^\u0000]*[^{_SPACE}\u0000][^\u0000]*$"  # Markdown: not blank, no NUL
TAGS = {
    "maxItems": limits.TAGS_MAX,
    "items": {
        "type": "string",
        "minLength": 1,
        "maxLength": limits.TAG_MAX_CHARS,
        "pattern": TAG_PATTERN,
    },
}
# scopeRef is absent (or null) for the institutional scope and required for the others.
SCOPE_RULE: JsonDict = {
    "if": {"properties": {"scope": {"const": "institutional"}}},
    "then": {"properties": {"scopeRef": {"type": "null"}}},
    "else": {"properties": {"scopeRef": {"type": "string"}}, "required": ["scopeRef"]},
}


def non_null(schema: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema of an optional value that is absent rather than null (a query parameter,
    a tool's argument): its null branch and its null default dropped."""
    variants = schema.get("anyOf")
    if variants is None:
        return schema
    kept = [v for v in variants if v != {"type": "null"}]
    rest_of = {k: v for k, v in schema.items() if k not in ("anyOf", "default")}
    # The field's own keywords (a list's item limits) over its type's.
    return {**kept[0], **rest_of} if len(kept) == 1 else {**rest_of, "anyOf": kept}


def documented_limit(**schema: Any) -> Any:
    """Document a limit of app.services.limits in the schema; the service enforces it."""
    return Field(default=None, json_schema_extra=schema)


class BodyModel(BaseModel):
    """Request bodies: camelCase names only, no unknown fields, no type coercion."""

    model_config = ConfigDict(alias_generator=to_camel, extra="forbid", strict=True)


class QueryModel(BaseModel):
    """Query strings: every value arrives as text, so numbers and booleans are coerced."""

    model_config = ConfigDict(alias_generator=to_camel, extra="forbid")
    repeatable: ClassVar[frozenset[str]] = frozenset()


class ResponseModel(BaseModel):
    """Responses, built from service records and serialised by their camelCase aliases."""

    model_config = ConfigDict(
        alias_generator=to_camel, validate_by_name=True, serialize_by_alias=True
    )


# -------------------------------------------------------------------- request models
# Same names and fields as the GraphQL inputs (api-contract.graphql).


class AppendMemoryEventInput(BodyModel):
    """One raw event to append (POST /memory/events, alone or in an array)."""

    model_config = ConfigDict(json_schema_extra=SCOPE_RULE)

    scope: ScopeIn
    scope_ref: str | None = documented_limit(
        maxLength=limits.REF_MAX_CHARS,
        pattern=ONE_LINE_PATTERN,
        description="entity_id / project_id / user_id depending on scope; "
        "absent for institutional, required otherwise",
    )
    kind: str = Field(
        description="lower snake_case word: call_summary, decision, campaign_change, ...",
        json_schema_extra={"maxLength": limits.KIND_MAX_CHARS, "pattern": KIND_PATTERN},
    )
    body: str = Field(
        description=f"Markdown, at most {limits.EVENT_BODY_MAX_BYTES} bytes of UTF-8",
        json_schema_extra={"pattern": TEXT_PATTERN},
    )
    source: str | None = documented_limit(
        maxLength=limits.REF_MAX_CHARS,
        pattern=ONE_LINE_PATTERN,
        description="where it came from: inbox, webhook, ...",
    )
    source_ref: str | None = documented_limit(
        maxLength=limits.REF_MAX_CHARS,
        pattern=ONE_LINE_PATTERN,
        description="id in the source system",
    )
    occurred_at: Timestamp | None = Field(
        default=None,
        description="ISO 8601 with a time zone; defaults to the time the server receives it; "
        f"at most {limits.FUTURE_SKEW_HOURS} hours in the future",
    )
    idempotency_key: str | None = documented_limit(
        maxLength=limits.REF_MAX_CHARS,
        pattern=ONE_LINE_PATTERN,
        description="a retried append with the same key returns the original event; "
        "the Idempotency-Key header sets it too",
    )


class CreateMemoryEntryInput(BodyModel):
    """A curated entry to create (POST /memory)."""

    model_config = ConfigDict(json_schema_extra=SCOPE_RULE)

    scope: ScopeIn
    scope_ref: str | None = documented_limit(
        maxLength=limits.REF_MAX_CHARS, pattern=ONE_LINE_PATTERN
    )
    title: str = Field(
        description="one line",
        json_schema_extra={"maxLength": limits.TITLE_MAX_CHARS, "pattern": ONE_LINE_PATTERN},
    )
    summary: str = Field(
        description=f"Markdown, at most {limits.ENTRY_SUMMARY_MAX_BYTES} bytes of UTF-8",
        json_schema_extra={"pattern": TEXT_PATTERN},
    )
    tags: list[str] | None = documented_limit(**TAGS, description="duplicates are dropped")
    importance: Whole | None = documented_limit(
        minimum=1, maximum=5, description="1 to 5, retention priority; default 3"
    )
    source: CreatableSource | None = Field(
        default=None, description="default manual; compactor is reserved for the compactor"
    )


class UpdateMemoryEntryInput(BodyModel):
    """PATCH /memory/{id}: the fields given change; absent or null ones stay as they are."""

    title: str | None = documented_limit(maxLength=limits.TITLE_MAX_CHARS, pattern=ONE_LINE_PATTERN)
    summary: str | None = documented_limit(pattern=TEXT_PATTERN)
    tags: list[str] | None = documented_limit(**TAGS)
    importance: Whole | None = documented_limit(minimum=1, maximum=5)
    expected_version: Whole | None = documented_limit(
        minimum=1,
        description="the update only applies if the entry is still at this version "
        "(409 otherwise); the If-Match header does the same with 412",
    )


def _read_only() -> Any:
    # readOnly (JSON Schema): a client sends back what it read, never a value of its own.
    return Field(
        default=None,
        description="read-only: ignored when null or equal to the stored value, else a 422",
        json_schema_extra={"readOnly": True},
    )


class ReplaceMemoryEntryInput(UpdateMemoryEntryInput):
    """PUT /memory/{id}: the entry as GET answers it, edited. Read-only fields equal to the
    stored ones are ignored (a different one is a 422 naming it); `version`, when given,
    must still be the entry's (else 409); absent editable fields stay as they are."""

    id: str | None = _read_only()
    scope: ScopeIn | None = _read_only()
    scope_ref: str | None = _read_only()
    source: SourceIn | None = _read_only()
    created_at: Timestamp | None = _read_only()
    updated_at: Timestamp | None = _read_only()
    version: Whole | None = Field(
        default=None,
        ge=1,
        json_schema_extra={"minimum": 1},
        description="the version this representation was read at: the update only applies "
        "if the entry is still at it (409 otherwise), like expectedVersion",
    )


READ_ONLY_FIELDS = ("id", "scope", "scope_ref", "source", "created_at", "updated_at")


class MemoryEntryQuery(QueryModel):
    """GET /memory: without search, most recently updated first; with it, most relevant."""

    repeatable = frozenset({"tag", "source"})

    scope: ScopeIn | None = None
    scope_ref: str | None = None
    tag: list[str] | None = Field(default=None, description="repeatable: all must match")
    search: str | None = documented_limit(
        maxLength=limits.SEARCH_MAX_CHARS,
        description="full-text search over title, summary and tags, ranked by relevance",
    )
    min_importance: int | None = documented_limit(minimum=1, maximum=5)
    min_score: float | None = documented_limit(
        minimum=0,
        maximum=1,
        description="with search: only entries whose score is at least this; a page may "
        "then hold fewer than `limit` items (follow nextCursor until it is null)",
    )
    source: list[SourceIn] | None = Field(default=None, description="repeatable: any may match")
    keyword_only: bool = Field(
        default=False,
        description="with search: rank by words only, not fused with the entries' meaning",
    )
    limit: int = Field(default=20, ge=1, json_schema_extra={"maximum": limits.PAGE_MAX})
    cursor: str | None = Field(default=None, description="nextCursor of the previous page")


class MemoryEventQuery(QueryModel):
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
    search: str | None = documented_limit(
        maxLength=limits.SEARCH_MAX_CHARS, description="full-text search over the body"
    )
    limit: int = Field(default=50, ge=1, json_schema_extra={"maximum": limits.PAGE_MAX})
    cursor: str | None = Field(default=None, description="nextCursor of the previous page")


class MemoryExportQuery(QueryModel):
    """GET /memory/export: a subject's data, one scope and scopeRef, as JSON lines."""

    repeatable = frozenset[str]()

    scope: ScopeIn
    scope_ref: str | None = None


class MemoryContextQuery(QueryModel):
    """GET /memory/context: the context loader, curated entries plus uncompressed recent
    events packed into Markdown within maxTokens."""

    repeatable = frozenset({"kind", "excludeKind"})

    scope: ScopeIn
    scope_ref: str | None = documented_limit(maxLength=limits.REF_MAX_CHARS)
    query: str | None = documented_limit(
        maxLength=limits.SEARCH_MAX_CHARS, description="rank entries by relevance to this"
    )
    kind: list[str] | None = documented_limit(
        maxItems=limits.FILTER_VALUES_MAX,
        description="repeatable: of the raw events, only these kinds",
    )
    exclude_kind: list[str] | None = documented_limit(
        maxItems=limits.FILTER_VALUES_MAX,
        description="repeatable: of the raw events, none of these kinds (an agent leaves out "
        "its own verbose turns)",
    )
    max_tokens: int = Field(
        default=2000,
        ge=loader.MIN_TOKENS,
        le=loader.MAX_TOKENS,
        description="the budget; `tokens` of the answer is never above it",
    )
    include_institutional: bool = Field(
        default=True, description="also load the institutional scope's memory"
    )


EventBatchIn = Annotated[
    list[AppendMemoryEventInput],
    Field(json_schema_extra={"minItems": 1, "maxItems": limits.BATCH_MAX}),
]
EVENT_IN = TypeAdapter(AppendMemoryEventInput)
EVENT_BATCH_IN: TypeAdapter[list[AppendMemoryEventInput]] = TypeAdapter(EventBatchIn)
ENTRY_IN = TypeAdapter(CreateMemoryEntryInput)
ENTRY_PATCH_IN = TypeAdapter(UpdateMemoryEntryInput)
ENTRY_PUT_IN = TypeAdapter(ReplaceMemoryEntryInput)


def _request_names() -> dict[str, str]:
    models: list[type[BaseModel]] = [
        AppendMemoryEventInput,
        CreateMemoryEntryInput,
        ReplaceMemoryEntryInput,
        MemoryEntryQuery,
        MemoryEventQuery,
        MemoryContextQuery,
    ]
    return {_folded(f.alias or n): f.alias or n for m in models for n, f in m.model_fields.items()}


def _folded(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


_NAMES = _request_names()


def did_you_mean(name: str) -> str | None:
    """The request field a misspelt `name` stands for (`scope_ref`: scopeRef), if any."""
    found = _NAMES.get(_folded(name))
    return found if found != name else None


# ------------------------------------------------------------------- response models
