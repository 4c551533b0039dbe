"""The tools' arguments: each the REST request model of the same operation (app/edge/rest/
models.py: its fields, types, parsing and documented limits), described for a model.

Parsing checks shape only (types, required fields, enums, unknown names); the limits the
schemas advertise come from app/services/limits.py and are enforced by the services, so each
rule lives once and its error names the field and the limit.
"""

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from app.edge.rest.models import (
    AppendMemoryEventInput,
    CreateMemoryEntryInput,
    MemoryContextQuery,
    MemoryEntryQuery,
    ScopeIn,
    UpdateMemoryEntryInput,
    non_null,
)
from app.services import limits

SCOPE_HELP = (
    "institutional (the whole organisation, no scopeRef), entity (a customer or contact: "
    "scopeRef is its id), project (scopeRef is the project id) or team (scopeRef is the user "
    "or team id)"
)
SCOPE_REF_HELP = "the id of the entity, project or team; omit for institutional"


class Arguments(BaseModel):
    """A tool's arguments. A subclass lists them in `described`, in order, each with what it
    tells a model: the schema holds those, and any other name is refused."""

    # Last among a tool's bases, so its settings win over the REST model's: a model may send
    # snake_case names and "3" for 3; the REST body's if/then/else is not for tool schemas.
    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        extra="forbid",
        frozen=True,
        strict=False,
        json_schema_extra=None,
    )
    described: ClassVar[dict[str, str]]


def _renamed(**names: str) -> Callable[[str], str]:
    """An alias generator: these fields under a tool's own names, the others in camelCase."""
    return lambda field: names.get(field) or to_camel(field)


class RememberArgs(AppendMemoryEventInput, Arguments):
    described = {
        "scope": SCOPE_HELP,
        "scope_ref": SCOPE_REF_HELP,
        "kind": "what happened, as a lower snake_case word: call_summary, decision, preference, "
        "campaign_change, session_summary...",
        "body": "the event in Markdown, self-contained (names, dates, amounts verbatim); at "
        f"most {limits.EVENT_BODY_MAX_BYTES} bytes of UTF-8",
        "occurred_at": "when it happened, ISO 8601 with a time zone (default: now; at most "
        f"{limits.FUTURE_SKEW_HOURS} hours ahead)",
        "source": "where it came from, e.g. claude_code, chat, inbox",
        "source_ref": "the id of the thing it came from (a session id, a message id)",
        "idempotency_key": "any unique string: calling again with the same key and content "
        "returns the first event instead of a duplicate",
    }


class RecallArgs(MemoryContextQuery, Arguments):
    model_config = ConfigDict(alias_generator=_renamed(kind="kinds", exclude_kind="excludeKinds"))
    described = {
        "scope": SCOPE_HELP,
        "scope_ref": SCOPE_REF_HELP,
        "query": "what the agent is working on; ranks the most relevant memory first (omit for "
        "the most important and recent)",
        "max_tokens": "the token budget of the returned Markdown",
        "include_institutional": "also include organisation-wide memory",
        "kind": "only raw events of these kinds",
        "exclude_kind": "no raw events of these kinds (leave out your own verbose turns)",
    }


class SearchArgs(MemoryEntryQuery, Arguments):
    model_config = ConfigDict(alias_generator=_renamed(search="query", tag="tags"))
    described = {
        "search": "full-text words to look for in titles, summaries and tags (most relevant "
        "first); omit to list the most recently updated",
        "scope": SCOPE_HELP,
        "scope_ref": "only this entity, project or team",
        "tag": "only entries with all these tags",
        "min_importance": "only entries at least this important",
        "limit": "entries per page",
        "cursor": "nextCursor of the previous page, to read the next one (same other arguments)",
    }
    # A page a model reads whole: shorter than REST's by default.
    limit: int = Field(default=10, json_schema_extra={"minimum": 0, "maximum": limits.PAGE_MAX})


class SaveArgs(UpdateMemoryEntryInput, CreateMemoryEntryInput, Arguments):
    """Create (no id) or update an entry: the create and update bodies' fields, all optional;
    save_memory says which a create requires."""

    described = {
        "id": "the entry to update (omit to create a new entry)",
        "scope": f"required to create; cannot change on update. {SCOPE_HELP}",
        "scope_ref": SCOPE_REF_HELP,
        "title": "one line naming the fact (required to create)",
        "summary": "the memory in Markdown, stated directly (required to create); at most "
        f"{limits.ENTRY_SUMMARY_MAX_BYTES} bytes of UTF-8",
        "tags": "labels for filtering; on update they replace the old ones",
        "importance": "1 (trivia) to 5 (must never be forgotten); 3 when created without it",
        "source": "where the memory came from (created entries only; default manual)",
        "expected_version": "update only if the entry is still at this version (from "
        "search_memory or a previous save_memory): a concurrent change is then an error "
        "instead of being overwritten",
    }
    id: str | None = Field(default=None, json_schema_extra={"maxLength": limits.REF_MAX_CHARS})
    # Optional here, unlike in a create's body: save_memory checks a create gives it.
    scope: ScopeIn | None = None  # type: ignore[assignment]


class ForgetArgs(Arguments):
    described = {"id": "the id of the curated entry to delete"}
    id: str = Field(json_schema_extra={"maxLength": limits.REF_MAX_CHARS})


M = TypeVar("M", bound=Arguments)


class ArgumentError(Exception):
    """Arguments that do not fit a tool's schema: the first bad field and why."""

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _alias(model: type[Arguments], field: str) -> str:
    return model.model_fields[field].alias or field


def _inlined(schema: Any, defs: dict[str, Any]) -> Any:
    """`schema` with its references to `defs` replaced by what they name (an enum, most)."""
    if isinstance(schema, list):
        return [_inlined(v, defs) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _inlined(v, defs) for k, v in schema.items() if k != "$ref"}
    if "$ref" in schema:
        named = defs[schema["$ref"].rsplit("/", 1)[1]]
        out = {**{k: v for k, v in _inlined(named, defs).items() if k != "title"}, **out}
    return out


def schema_of(model: type[Arguments]) -> dict[str, Any]:
    """The tool's inputSchema: its described arguments, in order, each as the model's JSON
    schema has it (enums inline, no title noise; an optional one absent rather than null)."""
    full = model.model_json_schema(by_alias=True)
    defs = full.get("$defs", {})
    properties = {}
    for field, description in model.described.items():
        prop = _inlined(non_null(full["properties"][_alias(model, field)]), defs)
        prop.pop("title", None)
        properties[_alias(model, field)] = {**prop, "description": description}
    schema: dict[str, Any] = {"additionalProperties": False, "properties": properties}
    required = [name for name in properties if name in full.get("required", ())]
    if required:
        schema["required"] = required
    schema["type"] = "object"
    return schema


def parse(model: type[M], arguments: dict[str, Any] | None) -> M:
    """The arguments as `model`, or an ArgumentError naming the first bad field."""
    names = {name for f in model.described for name in (f, _alias(model, f))}
    for name in arguments or {}:
        if name not in names:
            raise ArgumentError(name, f"{name} is not an argument of this tool")
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
