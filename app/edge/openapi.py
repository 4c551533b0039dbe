"""The OpenAPI 3.1 document of the REST routes, served at GET /openapi.json without a key.

Schemas come from the pydantic models in app/edge/rest/models.py and response_models.py, so
the document cannot drift from what the routes parse and answer; paths, parameters and
responses are written here.
"""

import functools
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from app import __version__, ids
from app.edge.limits import MAX_BODY_BYTES
from app.edge.openapi_parts import (
    HEADERS,
    PROBLEMS,
    REF,
    _json,
    _ok,
    _query_parameters,
    _ref,
    _responses,
    _untitled,
)
from app.edge.openapi_paths import _data_rights_paths, _scope_paths, _webhook_paths
from app.edge.rest import data_rights as rights
from app.edge.rest import models as rest
from app.edge.rest import response_models as rest_out
from app.edge.rest import scopes as rs
from app.edge.rest import webhooks as wh
from app.edge.rest.problems import PROBLEM_JSON, Problem, ProblemError
from app.services import limits

# What parsing.if_match_versions takes: `*`, or ETags of this API (W/ is read as strong).
IF_MATCH_PATTERN = r'^\s*(\*|(W/)?"\d{1,18}"(\s*,\s*(W/)?"\d{1,18}")*)\s*$'
ONE_LINE_PATTERN = rest.ONE_LINE_PATTERN
MODELS: list[tuple[type[BaseModel], JsonSchemaMode]] = [
    (rest.AppendMemoryEventInput, "validation"),
    (rest.CreateMemoryEntryInput, "validation"),
    (rest.UpdateMemoryEntryInput, "validation"),
    (rest.ReplaceMemoryEntryInput, "validation"),
    (rest.MemoryEntryQuery, "validation"),
    (rest.MemoryEventQuery, "validation"),
    (rest.MemoryContextQuery, "validation"),
    (rest.MemoryExportQuery, "validation"),
    (rest_out.MemoryContext, "serialization"),
    (rest_out.MemoryEvent, "serialization"),
    (rest_out.MemoryEntry, "serialization"),
    (rest_out.MemoryEntryItem, "serialization"),
    (rest_out.MemoryEntryList, "serialization"),
    (rest_out.MemoryEventList, "serialization"),
    (rest_out.MemoryEventBatch, "serialization"),
    (Problem, "serialization"),
    (ProblemError, "serialization"),
    (rights.PageQuery, "validation"),
    (rights.RestoreMemoryEntryInput, "validation"),
    (rights.EraseMemorySubjectInput, "validation"),
    (rights.MemoryEntryVersionList, "serialization"),
    (rights.Erasure, "serialization"),
    (rights.ErasureList, "serialization"),
    (wh.CreateWebhookEndpointInput, "validation"),
    (wh.UpdateWebhookEndpointInput, "validation"),
    (wh.WebhookDeliveryQuery, "validation"),
    (wh.WebhookEndpoint, "serialization"),
    (wh.CreatedWebhookEndpoint, "serialization"),
    (wh.WebhookEndpointList, "serialization"),
    (wh.WebhookDelivery, "serialization"),
    (wh.WebhookDeliveryList, "serialization"),
    (rs.MemoryScopeQuery, "validation"),
    (rs.MemoryScopeList, "serialization"),
]
QUERY_MODELS = {
    rest.MemoryEntryQuery, rest.MemoryEventQuery, rest.MemoryContextQuery, rest.MemoryExportQuery,
    rights.PageQuery, wh.WebhookDeliveryQuery, rs.MemoryScopeQuery,
}  # fmt: skip

DESCRIPTION = f"""\
The REST surface of Jet Memory, on the same services as GraphQL (`/graphql`).

- Auth: `Authorization: Bearer <API key>`; the key decides the tenant.
- JSON in camelCase with the GraphQL field names; enum values lowercase (uppercase is
  accepted too); timestamps ISO 8601, answered in UTC (`...Z`).
- Lists: `{{"items": [...], "nextCursor": ...}}`; pass `nextCursor` as `cursor`.
- Errors: `application/problem+json` (RFC 9457) with `errors: [{{field, in, code, message}}]`.
  400: unreadable request (malformed JSON, bad query parameter or header);
  422: a readable body breaks a rule or a limit (code INVALID, TOO_LARGE or FORBIDDEN);
  413: the request body is over {MAX_BODY_BYTES} bytes; 415: the body is not JSON.
- Entries: the ETag is the version (`"3"`); `If-Match` with a stale one is 412.
- `POST /memory/events` with `Idempotency-Key`: a retry answers the original event with
  200, the same key with a different event is 409. A JSON array appends a batch, all or
  nothing (each item brings its own `idempotencyKey`; the header is refused with arrays).
- Limits: event body {limits.EVENT_BODY_MAX_BYTES} bytes, entry summary
  {limits.ENTRY_SUMMARY_MAX_BYTES} bytes, title {limits.TITLE_MAX_CHARS} characters,
  {limits.TAGS_MAX} tags of {limits.TAG_MAX_CHARS} characters, page {limits.PAGE_MAX},
  batch {limits.BATCH_MAX} events, search {limits.SEARCH_MAX_CHARS} characters.
"""


@functools.cache
def openapi_document() -> dict[str, Any]:
    """The document (built once per process)."""
    _, top = models_json_schema(MODELS, ref_template=REF)
    schemas: dict[str, Any] = {k: _untitled(v) for k, v in top["$defs"].items()}
    query = {m: schemas.pop(m.__name__) for m in QUERY_MODELS}
    entry_id = {
        "name": "id",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": ids.pattern(ids.ENTRY)},
    }
    event_id = {
        "name": "id",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": ids.pattern(ids.EVENT)},
    }
    if_match = {
        "name": "If-Match",
        "in": "header",
        "description": 'update only if the entry is still at one of these versions, e.g. "3", '
        "or * (any)",
        "schema": {"type": "string", "pattern": IF_MATCH_PATTERN},
    }
    idempotency_key = {
        "name": "Idempotency-Key",
        "in": "header",
        "description": "makes a retry safe (a single event only; not with an array body)",
        "schema": {
            "type": "string",
            "minLength": 1,
            "maxLength": limits.REF_MAX_CHARS,
            "pattern": ONE_LINE_PATTERN,
        },
    }
    one_or_batch = {
        "oneOf": [
            _ref("AppendMemoryEventInput"),
            {
                "type": "array",
                "items": _ref("AppendMemoryEventInput"),
                "minItems": 1,
                "maxItems": limits.BATCH_MAX,
            },
        ]
    }
    event_or_batch = {"oneOf": [_ref("MemoryEvent"), _ref("MemoryEventBatch")]}
    paths: dict[str, Any] = {
        "/memory": {
            "get": {
                "operationId": "listMemoryEntries",
                "summary": "Search curated entries",
                "description": rest.MemoryEntryQuery.__doc__,
                "parameters": _query_parameters(query[rest.MemoryEntryQuery]),
                "responses": _responses(
                    {"200": _ok("a page of entries", _ref("MemoryEntryList"))}, 400
                ),
            },
            "post": {
                "operationId": "createMemoryEntry",
                "summary": "Create a curated entry",
                "requestBody": {"required": True, **_json(_ref("CreateMemoryEntryInput"))},
                "responses": _responses(
                    {"201": _ok("created", _ref("MemoryEntry"), "Location", "ETag")},
                    400,
                    413,
                    415,
                    422,
                ),  # fmt: skip
            },
        },
        "/memory/events": {
            "get": {
                "operationId": "listMemoryEvents",
                "summary": "List raw events",
                "description": rest.MemoryEventQuery.__doc__,
                "parameters": _query_parameters(query[rest.MemoryEventQuery]),
                "responses": _responses(
                    {"200": _ok("a page of events", _ref("MemoryEventList"))}, 400
                ),
            },
            "post": {
                "operationId": "appendMemoryEvents",
                "summary": "Append a raw event, or a batch (a JSON array) all or nothing",
                "parameters": [idempotency_key],
                "requestBody": {"required": True, **_json(one_or_batch)},
                "responses": _responses(
                    {
                        "201": _ok(
                            "appended (a batch: at least one item is new); Location for one event",
                            event_or_batch,
                            "Location",
                        ),
                        "200": _ok(
                            "a replay: the original event(s), as first answered", event_or_batch
                        ),
                    },
                    400,
                    409,
                    413,
                    415,
                    422,
                ),  # fmt: skip
            },
        },
        "/memory/context": {
            "get": {
                "operationId": "loadMemoryContext",
                "summary": "The context loader: memory for an agent session, in a token budget",
                "description": rest.MemoryContextQuery.__doc__,
                "parameters": _query_parameters(query[rest.MemoryContextQuery]),
                "responses": _responses(
                    {"200": _ok("the packed context", _ref("MemoryContext"))}, 400, 422
                ),
            },
        },
        "/memory/export": {
            "get": {
                "operationId": "exportMemory",
                "summary": "A subject's data access request: one scope's memory as JSON lines",
                "description": f"{rest.MemoryExportQuery.__doc__} A header line, one line per "
                "record (entries, events, provenance), then a trailer with the counts and a "
                "sha256 of the record lines (docs/export.md); a stream without its trailer "
                "was cut short. A scope over JET_EXPORT_MAX_RECORDS is a 400 (TOO_LARGE).",
                "parameters": _query_parameters(query[rest.MemoryExportQuery]),
                "responses": _responses(
                    {
                        "200": {
                            "description": "the export, streamed",
                            "headers": {
                                "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}
                            },
                            "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
                        }
                    },
                    400,
                ),
            },
        },
        "/memory/{id}": {
            "parameters": [entry_id],
            "get": {
                "operationId": "getMemoryEntry",
                "summary": "Read an entry",
                "responses": _responses(
                    {"200": _ok("the entry", _ref("MemoryEntry"), "ETag")}, 404
                ),
            },
            "put": {
                "operationId": "replaceMemoryEntry",
                "summary": "Send the entry back as GET answered it, edited",
                "description": rest.ReplaceMemoryEntryInput.__doc__,
                "parameters": [if_match],
                "requestBody": {"required": True, **_json(_ref("ReplaceMemoryEntryInput"))},
                "responses": _responses(
                    {"200": _ok("the updated entry", _ref("MemoryEntry"), "ETag")},
                    400,
                    404,
                    409,
                    412,
                    413,
                    415,
                    422,
                ),  # fmt: skip
            },
            "patch": {
                "operationId": "updateMemoryEntry",
                "summary": "Update the fields given",
                "parameters": [if_match],
                "requestBody": {"required": True, **_json(_ref("UpdateMemoryEntryInput"))},
                "responses": _responses(
                    {"200": _ok("the updated entry", _ref("MemoryEntry"), "ETag")},
                    400,
                    404,
                    409,
                    412,
                    413,
                    415,
                    422,
                ),  # fmt: skip
            },
            "delete": {
                "operationId": "deleteMemoryEntry",
                "summary": "Delete an entry (a compactor entry releases the events it folded)",
                "responses": _responses(
                    {
                        "204": {
                            "description": "deleted",
                            "headers": {
                                "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}
                            },
                        }
                    },
                    400,
                    404,
                ),  # fmt: skip
            },
        },
        **_data_rights_paths(entry_id, query[rights.PageQuery]),
        **_webhook_paths(query[wh.WebhookDeliveryQuery]),
        **_scope_paths(query[rs.MemoryScopeQuery]),
    }
    # One path item for an event: read (here) and erase (_data_rights_paths).
    paths["/memory/events/{id}"] = {
        "parameters": [event_id],
        "get": {
            "operationId": "getMemoryEvent",
            "summary": "Read an event (the Location of its append)",
            "responses": _responses({"200": _ok("the event", _ref("MemoryEvent"))}, 404),
        },
        "delete": paths["/memory/events/{id}"]["delete"],
    }
    problem_headers = {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}}
    responses = {
        name: {
            "description": description,
            "headers": problem_headers,
            **_json(_ref("Problem"), PROBLEM_JSON),
        }
        for name, description in PROBLEMS.items()
    }
    responses["Unauthorized"]["headers"] = {
        **problem_headers,
        "WWW-Authenticate": {"schema": {"type": "string", "const": "Bearer"}},
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Jet Memory REST API",
            "version": __version__,
            "description": DESCRIPTION,
        },
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "responses": responses,
            "headers": HEADERS,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "an API key from `jet-memory keys create`",
                }
            },
        },
    }


async def _serve(_: Request) -> JSONResponse:
    return JSONResponse(openapi_document())


def openapi_route() -> Route:
    return Route("/openapi.json", _serve, methods=["GET"])
