"""The five memory tools: what each tells a model, and each as one call of a service.

A tool is given the tenant's database by the surface (never a tenant), so nothing its
arguments name can reach another tenant. Each answer is structured content plus a text
rendering; an expected failure is a ToolFailure naming the tool's own argument. Results are
the service records as REST answers them (app/edge/rest/response_models.py).
"""

import re
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import orjson
from mcp_types import ToolAnnotations

from app.edge.mcp.arguments import (
    Arguments,
    ForgetArgs,
    RecallArgs,
    RememberArgs,
    SaveArgs,
    SearchArgs,
)
from app.edge.rest.encoding import dumps, record_encoder
from app.edge.rest.response_models import MEMORY_ENTRY
from app.errors import ExpectedError, ExpectedErrors
from app.services import entries, events
from app.services.context import loader
from app.services.records import (
    Entry,
    EntryFilter,
    EntryIn,
    EntryPatch,
    EntrySource,
    Event,
    EventIn,
    Scope,
)
from app.storage.tenants import TenantDb

# (structured content, text rendering)
Answer = tuple[dict[str, Any], str]


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    title: str
    description: str
    arguments: type[Arguments]
    run: Callable[[TenantDb, Any, int], Awaitable[Answer]]  # (db, parsed args, max_rows)
    annotations: ToolAnnotations


class ToolFailure(Exception):
    """An expected failure as a tool error: the code, the argument it concerns, the message."""

    def __init__(self, code: str, field: str | None, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.field = field
        self.message = message

    def answer(self) -> Answer:
        error = {"code": self.code, "field": self.field, "message": self.message}
        return {"error": error}, f"Error ({self.code}): {self.message}"


# Service field paths (GraphQL's argument names) -> the tools' argument names.
# Who runs the tool now (the API key id; server.call sets it): entry history names it.
REQUESTER: ContextVar[str] = ContextVar("mcp_requester", default="operator")
_FIELDS = {"search": "query", "first": "limit", "after": "cursor"}
_PREFIX = re.compile(r"^(?:input|filter)\.")


def failure(exc: ExpectedError | ExpectedErrors) -> ToolFailure:
    """A service's expected failure, its field renamed to the tool's argument."""
    first = exc.errors[0] if isinstance(exc, ExpectedErrors) else exc
    path = _PREFIX.sub("", ".".join(first.field))
    field = _FIELDS.get(path, path) or None
    message = first.message
    if field is not None and field != path:
        message = re.sub(rf"^(?:(?:input|filter)\.)?{re.escape(path)}\b", field, message)
    return ToolFailure(first.code.value, field, message)


def _plain(value: dict[str, Any]) -> dict[str, Any]:
    """The value in JSON's own types (times and enums as text), as structured content is."""
    plain: dict[str, Any] = orjson.loads(dumps(value))
    return plain


# remember answers the stored event but the body its caller just wrote and what the
# compactor sets later; its idempotencyKey (which REST never shows) is the caller's own.
_EVENT = record_encoder(Event, hidden={"body", "compressed_at", "compressed_into"})


def event_json(e: Event) -> dict[str, Any]:
    return _plain(_EVENT(e))


def entry_json(e: Entry, score: float | None = None) -> dict[str, Any]:
    out = _plain(MEMORY_ENTRY.json(e))
    if score is not None:
        out["score"] = score
    return out


def _scope(scope: str, scope_ref: str | None) -> str:
    return scope if scope_ref is None else f"{scope}/{scope_ref}"


async def remember(db: TenantDb, a: RememberArgs, max_rows: int) -> Answer:
    event = EventIn(
        scope=Scope(a.scope),
        scope_ref=a.scope_ref,
        kind=a.kind,
        body=a.body,
        source=a.source,
        source_ref=a.source_ref,
        occurred_at=a.occurred_at,
        idempotency_key=a.idempotency_key,
    )
    done = await events.append_event(db, event, max_rows=max_rows)
    e = done.event
    verb = "Already remembered (same idempotencyKey)" if done.replayed else "Remembered"
    text = f"{verb}: event `{e.id}` ({e.kind}, {_scope(e.scope.value, e.scope_ref)})."
    return {"event": event_json(e), "replayed": done.replayed}, text


async def recall(db: TenantDb, a: RecallArgs, _: int) -> Answer:
    result = await loader.load_context(
        db,
        scope=Scope(a.scope),
        scope_ref=a.scope_ref,
        query=a.query,
        max_tokens=a.max_tokens,
        include_institutional=a.include_institutional,
        kinds=a.kind,
        exclude_kinds=a.exclude_kind,
    )
    structured = {
        "markdown": result.markdown,
        "tokens": result.tokens,
        "truncated": result.truncated,
        "entryIds": [e.id for e in result.entries],
        "eventIds": [e.id for e in result.events],
    }
    text = result.markdown or f"No memory yet for {_scope(a.scope, a.scope_ref)}."
    return structured, text


async def search_memory(db: TenantDb, a: SearchArgs, _: int) -> Answer:
    flt = EntryFilter(
        scope=None if a.scope is None else Scope(a.scope),
        scope_ref=a.scope_ref,
        tags=a.tag,
        search=a.search,
        min_importance=a.min_importance,
    )
    page = await entries.list_entries(db, flt, first=a.limit, after=a.cursor)
    found = [entry_json(edge.node, edge.score) for edge in page.edges]
    next_cursor = page.end_cursor if page.has_next_page else None
    structured = {"entries": found, "nextCursor": next_cursor, "hasMore": page.has_next_page}
    lines = [f"{len(found)} entr{'y' if len(found) == 1 else 'ies'} found."]
    for e in found:
        score = f", score {e['score']}" if "score" in e else ""
        lines.append(
            f"\n### {e['title']}\n`{e['id']}` · {_scope(e['scope'], e['scopeRef'])} · "
            f"importance {e['importance']}/5 · version {e['version']}{score}\n\n{e['summary']}"
        )
    if next_cursor:
        lines.append(f"\nMore: call search_memory again with cursor {next_cursor!r}.")
    return structured, "\n".join(lines)


async def save_memory(db: TenantDb, a: SaveArgs, _: int) -> Answer:
    if a.id is None:
        for name, value in (("scope", a.scope), ("title", a.title), ("summary", a.summary)):
            if value is None:
                raise ToolFailure("INVALID", name, f"{name} is required to create an entry")
        assert a.scope is not None and a.title is not None and a.summary is not None
        if a.expected_version is not None:
            raise ToolFailure(
                "INVALID", "expectedVersion", "expectedVersion needs the id of an entry"
            )
        entry = await entries.create_entry(
            db,
            EntryIn(
                scope=Scope(a.scope),
                scope_ref=a.scope_ref,
                title=a.title,
                summary=a.summary,
                tags=a.tags or [],
                importance=3 if a.importance is None else a.importance,
                source=EntrySource(a.source or "manual"),
            ),
        )
        verb = "Created"
    else:
        for name, value in (("scope", a.scope), ("scopeRef", a.scope_ref), ("source", a.source)):
            if value is not None:
                raise ToolFailure("INVALID", name, f"{name} cannot change on update")
        patch = EntryPatch(
            title=a.title,
            summary=a.summary,
            tags=a.tags,
            importance=a.importance,
            expected_version=a.expected_version,
        )
        entry = await entries.update_entry(db, a.id, patch, by=REQUESTER.get())
        verb = "Updated"
    text = f"{verb} entry `{entry.id}` (version {entry.version}): {entry.title}"
    return {"entry": entry_json(entry)}, text


async def forget(db: TenantDb, a: ForgetArgs, _: int) -> Answer:
    deleted = await entries.delete_entry(db, a.id, by=REQUESTER.get())
    return {"deletedId": deleted}, f"Deleted entry `{deleted}`."


TOOLS = [
    Tool(
        "remember",
        "Remember an event",
        "Append something that happened to the memory log: a decision, a call or session "
        "summary, a preference, a change of plan. Call it when the user states a fact worth "
        "keeping or at the end of a piece of work. Events are immutable; a daily compactor "
        "folds old ones into curated entries. Returns the stored event's id (and replayed: "
        "true when the same idempotencyKey was already used with the same content).",
        RememberArgs,
        remember,
        ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
    ),
    Tool(
        "recall",
        "Recall context",
        "Load what the memory knows about a scope, packed as Markdown within maxTokens: the "
        "most relevant curated entries (for the query) and the recent raw events. Call it at "
        "the start of a task or when you need background on a customer, project or team. "
        "Returns the Markdown (each item with its id in backticks), its token count, whether "
        "something was left out, and the ids it cites.",
        RecallArgs,
        recall,
        ToolAnnotations(read_only_hint=True, open_world_hint=False),
    ),
    Tool(
        "search_memory",
        "Search curated memory",
        "Search the curated memory entries by words, scope, tags and importance. Call it to "
        "find a specific fact, or to find an entry's id and version before updating or "
        "deleting it. Returns entries (id, title, summary, tags, importance, version, score "
        "when searching by words), most relevant first, and nextCursor for the next page.",
        SearchArgs,
        search_memory,
        ToolAnnotations(read_only_hint=True, open_world_hint=False),
    ),
    Tool(
        "save_memory",
        "Save a curated entry",
        "Create a curated memory entry (no id: scope, title and summary required) or update "
        "one (id, plus only the fields to change). Pass expectedVersion when updating so a "
        "concurrent change is reported instead of overwritten. Prefer remember for raw "
        "happenings; use this for a distilled fact that should be found again. Returns the "
        "entry with its new version.",
        SaveArgs,
        save_memory,
        ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
    ),
    Tool(
        "forget",
        "Forget a curated entry",
        "Delete one curated memory entry by id, when it is wrong or obsolete (find the id "
        "with search_memory or recall). Raw events are never deleted: deleting a compactor "
        "summary returns its events to the log. Returns the deleted id.",
        ForgetArgs,
        forget,
        ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True),
    ),
]
TOOLS_BY_NAME = {t.name: t for t in TOOLS}
