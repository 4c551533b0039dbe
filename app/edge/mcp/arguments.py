"""The tools' arguments: one pydantic model each, its JSON schema (enums, limits) and parsing.

Parsing checks shape only (types, required fields, enums, unknown names); the limits the
schemas advertise come from app/services/limits.py and are enforced by the services, so each
rule lives once and its error names the field and the limit.
"""

from datetime import datetime
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel
from pydantic.json_schema import SkipJsonSchema

from app.services import limits
from app.services.context import MAX_TOKENS, MIN_TOKENS

# The values of app.services.records.Scope and EntrySource (tests hold them equal), written
# out so that mypy and the schema both see the enum.
ScopeName = Literal["institutional", "entity", "project", "team"]
SourceName = Literal["chat", "call", "email", "manual"]  # "compactor" is the compactor's

SCOPE_HELP = (
    "institutional (the whole organisation, no scopeRef), entity (a customer or contact: "
    "scopeRef is its id), project (scopeRef is the project id) or team (scopeRef is the user "
    "or team id)"
)


def _limit(description: str, **schema: Any) -> Any:
    """Field metadata: the description plus JSON-schema keywords the services enforce."""
    return Field(description=description, json_schema_extra=schema)


def _optional(description: str, **schema: Any) -> Any:
    return Field(default=None, description=description, json_schema_extra=schema)


class Arguments(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


_REF = {"maxLength": limits.REF_MAX_CHARS, "minLength": 1}
_TAGS = {
    "maxItems": limits.TAGS_MAX,
    "items": {"type": "string", "maxLength": limits.TAG_MAX_CHARS},
}


class RememberArgs(Arguments):
    scope: ScopeName = Field(description=SCOPE_HELP)
    scope_ref: str | SkipJsonSchema[None] = _optional(
        "the id of the entity, project or team; omit for institutional", **_REF
    )
    kind: str = _limit(
        "what happened, as a lower snake_case word: call_summary, decision, preference, "
        "campaign_change, session_summary...",
        maxLength=limits.KIND_MAX_CHARS,
        pattern=r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$",
    )
    body: str = _limit(
        f"the event in Markdown, self-contained (names, dates, amounts verbatim); at most "
        f"{limits.EVENT_BODY_MAX_BYTES} bytes of UTF-8",
        minLength=1,
        maxLength=limits.EVENT_BODY_MAX_BYTES,
    )
    occurred_at: datetime | SkipJsonSchema[None] = _optional(
        f"when it happened, ISO 8601 with a time zone (default: now; at most "
        f"{limits.FUTURE_SKEW_HOURS} hours ahead)"
    )
    source: str | SkipJsonSchema[None] = _optional(
        "where it came from, e.g. claude_code, chat, inbox", **_REF
    )
    source_ref: str | SkipJsonSchema[None] = _optional(
        "the id of the thing it came from (a session id, a message id)", **_REF
    )
    idempotency_key: str | SkipJsonSchema[None] = _optional(
        "any unique string: calling again with the same key and content returns the first "
        "event instead of a duplicate",
        **_REF,
    )


class RecallArgs(Arguments):
    scope: ScopeName = Field(description=SCOPE_HELP)
    scope_ref: str | SkipJsonSchema[None] = _optional(
        "the id of the entity, project or team; omit for institutional", **_REF
    )
    query: str | SkipJsonSchema[None] = _optional(
        "what the agent is working on; ranks the most relevant memory first (omit for the "
        "most important and recent)",
        maxLength=limits.SEARCH_MAX_CHARS,
    )
    max_tokens: int = Field(
        default=2000,
        description="the token budget of the returned Markdown",
        json_schema_extra={"minimum": MIN_TOKENS, "maximum": MAX_TOKENS},
    )
    include_institutional: bool = Field(
        default=True, description="also include organisation-wide memory"
    )


class SearchArgs(Arguments):
    query: str | SkipJsonSchema[None] = _optional(
        "full-text words to look for in titles, summaries and tags (most relevant first); "
        "omit to list the most recently updated",
        maxLength=limits.SEARCH_MAX_CHARS,
    )
    scope: ScopeName | SkipJsonSchema[None] = _optional(SCOPE_HELP)
    scope_ref: str | SkipJsonSchema[None] = _optional("only this entity, project or team", **_REF)
    tags: list[str] | SkipJsonSchema[None] = _optional("only entries with all these tags", **_TAGS)
    min_importance: int | SkipJsonSchema[None] = _optional(
        "only entries at least this important", minimum=1, maximum=5
    )
    limit: int = Field(
        default=10,
        description="entries per page",
        json_schema_extra={"minimum": 0, "maximum": limits.PAGE_MAX},
    )
    cursor: str | SkipJsonSchema[None] = _optional(
        "nextCursor of the previous page, to read the next one (same other arguments)"
    )


class SaveArgs(Arguments):
    id: str | SkipJsonSchema[None] = _optional(
        "the entry to update (omit to create a new entry)", maxLength=limits.REF_MAX_CHARS
    )
    scope: ScopeName | SkipJsonSchema[None] = _optional(
        f"required to create; cannot change on update. {SCOPE_HELP}"
    )
    scope_ref: str | SkipJsonSchema[None] = _optional(
        "the id of the entity, project or team; omit for institutional", **_REF
    )
    title: str | SkipJsonSchema[None] = _optional(
        "one line naming the fact (required to create)",
        minLength=1,
        maxLength=limits.TITLE_MAX_CHARS,
    )
    summary: str | SkipJsonSchema[None] = _optional(
        f"the memory in Markdown, stated directly (required to create); at most "
        f"{limits.ENTRY_SUMMARY_MAX_BYTES} bytes of UTF-8",
        minLength=1,
        maxLength=limits.ENTRY_SUMMARY_MAX_BYTES,
    )
    tags: list[str] | SkipJsonSchema[None] = _optional(
        "labels for filtering; on update they replace the old ones", **_TAGS
    )
    importance: int | SkipJsonSchema[None] = _optional(
        "1 (trivia) to 5 (must never be forgotten); 3 when created without it",
        minimum=1,
        maximum=5,
    )
    source: SourceName | SkipJsonSchema[None] = _optional(
        "where the memory came from (created entries only; default manual)"
    )
    expected_version: int | SkipJsonSchema[None] = _optional(
        "update only if the entry is still at this version (from search_memory or a previous "
        "save_memory): a concurrent change is then an error instead of being overwritten",
        minimum=1,
    )


class ForgetArgs(Arguments):
    id: str = _limit("the id of the curated entry to delete", maxLength=limits.REF_MAX_CHARS)


M = TypeVar("M", bound=Arguments)


class ArgumentError(Exception):
    """Arguments that do not fit a tool's schema: the first bad field and why."""

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def schema_of(model: type[Arguments]) -> dict[str, Any]:
    """The model's JSON schema as a tool's inputSchema (no title noise)."""
    schema = model.model_json_schema(by_alias=True)
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
        if prop.get("default", 0) is None:
            del prop["default"]  # "absent", which a JSON schema says by not requiring it
    return schema


def parse(model: type[M], arguments: dict[str, Any] | None) -> M:
    """The arguments as `model`, or an ArgumentError naming the first bad field."""
    try:
        return model.model_validate(arguments or {})
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_context=False, include_input=False)[0]
        # The argument, then list indexes; not the union branch pydantic names ("datetime").
        loc = first["loc"]
        parts = [str(loc[0]), *(str(p) for p in loc[1:] if isinstance(p, int))] if loc else []
        field = ".".join(parts) or None
        if first["type"] == "extra_forbidden":
            message = f"{field} is not an argument of this tool"
        elif first["type"] == "missing":
            message = f"{field} is required"
        else:
            message = f"{field}: {first['msg']}" if field else first["msg"]
        raise ArgumentError(field, message) from None
