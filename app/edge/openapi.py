"""The OpenAPI 3.1 document of the REST routes, served at GET /openapi.json without a key.

Schemas come from the pydantic models in app/edge/rest/models.py, so the document cannot drift
from what the routes parse and answer; paths, parameters and responses are written here.
"""

import functools
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from app import __version__
from app.edge.limits import MAX_BODY_BYTES
from app.edge.rest import data_rights as rights
from app.edge.rest import models as rest
from app.edge.rest import webhooks as wh
from app.edge.rest.problems import PROBLEM_JSON, Problem, ProblemError
from app.services import limits

REF = "#/components/schemas/{model}"
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
    (rest.MemoryContext, "serialization"),
    (rest.MemoryEvent, "serialization"),
    (rest.MemoryEntry, "serialization"),
    (rest.MemoryEntryItem, "serialization"),
    (rest.MemoryEntryList, "serialization"),
    (rest.MemoryEventList, "serialization"),
    (rest.MemoryEventBatch, "serialization"),
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
]
QUERY_MODELS = {
    rest.MemoryEntryQuery, rest.MemoryEventQuery, rest.MemoryContextQuery, rest.MemoryExportQuery,
    rights.PageQuery, wh.WebhookDeliveryQuery,
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


def _ref(name: str) -> dict[str, str]:
    return {"$ref": REF.format(model=name)}


def _json(schema: dict[str, Any], media: str = "application/json") -> dict[str, Any]:
    return {"content": {media: {"schema": schema}}}


def _non_null(schema: dict[str, Any]) -> dict[str, Any]:
    """A query parameter is absent rather than null: drop the null branch."""
    variants = schema.get("anyOf")
    if variants is None:
        return schema
    kept = [v for v in variants if v != {"type": "null"}]
    rest_of = {k: v for k, v in schema.items() if k not in ("anyOf", "default")}
    return {**rest_of, **kept[0]} if len(kept) == 1 else {**rest_of, "anyOf": kept}


def _untitled(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's generated property titles ("Scoperef"): the names say it better."""
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema


def _query_parameters(schema: dict[str, Any]) -> list[dict[str, Any]]:
    params = []
    for name, prop in schema["properties"].items():
        prop = dict(prop)
        description = prop.pop("description", None)
        param: dict[str, Any] = {"name": name, "in": "query", "schema": _non_null(prop)}
        if name in schema.get("required", ()):
            param["required"] = True
        # An empty value is refused on every route (parsing.parse_query): say so.
        for text in (param["schema"], param["schema"].get("items", {})):
            if text.get("type") == "string" and "enum" not in text:
                text.setdefault("minLength", 1)
        if description:
            param["description"] = description
        if param["schema"].get("type") == "array":
            param["style"], param["explode"] = "form", True
        params.append(param)
    return params


HEADERS = {
    "ETag": {
        "description": 'the entry\'s version as a strong ETag, e.g. "3"',
        "schema": {"type": "string"},
    },
    "Location": {
        "description": "where the new entry or event is read: /memory/{id}, /memory/events/{id}",
        "schema": {"type": "string"},
    },
    "X-Request-Id": {
        "description": "the request's id (yours, if you sent a sane X-Request-Id)",
        "schema": {"type": "string"},
    },
}
PROBLEMS = {
    "BadRequest": "the request cannot be read: malformed JSON, a bad query parameter or header",
    "Unauthorized": "missing, unknown or revoked API key",
    "NotFound": "no such entry in this tenant",
    "Conflict": "a stale expectedVersion, or an Idempotency-Key reused for another event",
    "PreconditionFailed": "If-Match names a version the entry is no longer at",
    "ContentTooLarge": f"the request body is over {MAX_BODY_BYTES} bytes",
    "UnsupportedMediaType": "the body is not sent as application/json",
    "TooManyRequests": "the API key is over its rate limit (per API process); see Retry-After",
    "UnprocessableContent": "the body breaks a rule or a documented limit",
    "InternalError": "a bug, or the tenant's database is corrupt (code "
    "TENANT_DATABASE_CORRUPT); the requestId is in the log",
    "ServiceUnavailable": "the tenant's database is locked by another process (code "
    "TENANT_DATABASE_BUSY); see Retry-After",
    "InsufficientStorage": "the tenant's database could not grow: disk full (code "
    "TENANT_DATABASE_FULL); nothing was written",
}
STATUS_PROBLEM = {
    400: "BadRequest",
    401: "Unauthorized",
    404: "NotFound",
    409: "Conflict",
    412: "PreconditionFailed",
    413: "ContentTooLarge",
    415: "UnsupportedMediaType",
    422: "UnprocessableContent",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    507: "InsufficientStorage",
}


def _responses(ok: dict[str, Any], *problems: int) -> dict[str, Any]:
    out = dict(ok)
    # Any route may meet a tenant database that is busy, corrupt or full (500/503/507).
    for status in sorted({401, 429, 500, 503, 507, *problems}):
        out[str(status)] = {"$ref": f"#/components/responses/{STATUS_PROBLEM[status]}"}
    return out


def _ok(description: str, schema: dict[str, Any], *headers: str) -> dict[str, Any]:
    return {
        "description": description,
        "headers": {h: {"$ref": f"#/components/headers/{h}"} for h in ("X-Request-Id", *headers)},
        **_json(schema),
    }


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
        "schema": {"type": "string", "pattern": "^mem_[0-9a-z]{26}$"},
    }
    event_id = {
        "name": "id",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": "^evt_[0-9a-z]{26}$"},
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


def _data_rights_paths(entry_id: dict[str, Any], page: dict[str, Any]) -> dict[str, Any]:
    """Entry history and erasure (docs/erasure.md)."""
    event_id = {**entry_id, "schema": {"type": "string", "pattern": "^evt_[0-9a-z]{26}$"}}
    return {
        "/memory/{id}/versions": {
            "parameters": [entry_id],
            "get": {
                "operationId": "listMemoryEntryVersions",
                "summary": "Earlier versions of an entry (also a deleted one), newest first",
                "parameters": _query_parameters(page),
                "responses": _responses(
                    {"200": _ok("a page of versions", _ref("MemoryEntryVersionList"))}, 400
                ),
            },
        },
        "/memory/{id}/restore": {
            "parameters": [entry_id],
            "post": {
                "operationId": "restoreMemoryEntry",
                "summary": "Bring back an earlier version as a new version",
                "requestBody": {"required": True, **_json(_ref("RestoreMemoryEntryInput"))},
                "responses": _responses(
                    {"200": _ok("the restored entry", _ref("MemoryEntry"))},
                    400,
                    404,
                    409,
                    413,
                    415,
                    422,
                ),  # fmt: skip
            },
        },
        "/memory/erasures": {
            "get": {
                "operationId": "listMemoryErasures",
                "summary": "This tenant's erasure receipts, newest first",
                "parameters": _query_parameters(page),
                "responses": _responses(
                    {"200": _ok("a page of receipts", _ref("ErasureList"))}, 400
                ),
            },
            "post": {
                "operationId": "eraseMemorySubject",
                "summary": "Erase every event, entry, folded summary and entry version of "
                "(scope, scopeRef), in one transaction",
                "description": f"At most {limits.ERASURE_EVENTS_MAX} events per request "
                "(more is a 422 TOO_LARGE naming scopeRef); an operator erases more with "
                "`jet-memory erase`.",
                "requestBody": {"required": True, **_json(_ref("EraseMemorySubjectInput"))},
                "responses": _responses(
                    {"201": _ok("erased; the receipt", _ref("Erasure"))}, 400, 413, 415, 422
                ),
            },
        },
        "/memory/events/{id}": {
            "parameters": [event_id],
            "delete": {
                "operationId": "eraseMemoryEvent",
                "summary": "Erase one event (a summary that folded it is erased, its other "
                "events released)",
                "responses": _responses(
                    {"200": _ok("erased; the receipt", _ref("Erasure"))}, 400, 404
                ),
            },
        },
    }


def _webhook_paths(delivery_query: dict[str, Any]) -> dict[str, Any]:
    """The /webhooks routes (docs/changes.md)."""
    endpoint_id = {"name": "id", "in": "path", "required": True,
                   "schema": {"type": "string", "pattern": "^whk_[0-9a-z]{26}$"}}  # fmt: skip
    delivery_id = {"name": "deliveryId", "in": "path", "required": True,
                   "schema": {"type": "string", "pattern": "^msg_[0-9a-z]{26}$"}}  # fmt: skip
    request_id = {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}}
    deleted = {"204": {"description": "deleted, with its delivery log", "headers": request_id}}
    return {
        "/webhooks": {
            "get": {
                "operationId": "listWebhookEndpoints",
                "summary": "This tenant's webhook endpoints (never their secrets)",
                "responses": _responses({"200": _ok("the endpoints", _ref("WebhookEndpointList"))}),
            },
            "post": {
                "operationId": "createWebhookEndpoint",
                "summary": "Register an endpoint for the changes made from now on",
                "description": "The answer holds the signing secret: the only time it is shown.",
                "requestBody": {"required": True, **_json(_ref("CreateWebhookEndpointInput"))},
                "responses": _responses(
                    {"201": _ok("registered", _ref("CreatedWebhookEndpoint"), "Location")},
                    400, 413, 415, 422,
                ),
            },
        },
        "/webhooks/{id}": {
            "parameters": [endpoint_id],
            "get": {
                "operationId": "getWebhookEndpoint",
                "summary": "Read an endpoint",
                "responses": _responses({"200": _ok("the endpoint", _ref("WebhookEndpoint"))}, 404),
            },
            "patch": {
                "operationId": "updateWebhookEndpoint",
                "summary": "Change an endpoint; enabled: true resumes where it stopped",
                "requestBody": {"required": True, **_json(_ref("UpdateWebhookEndpointInput"))},
                "responses": _responses(
                    {"200": _ok("the endpoint", _ref("WebhookEndpoint"))}, 400, 404, 413, 415, 422
                ),
            },
            "delete": {
                "operationId": "deleteWebhookEndpoint",
                "summary": "Delete an endpoint and its delivery log",
                "responses": _responses(deleted, 404),
            },
        },
        "/webhooks/{id}/deliveries": {
            "parameters": [endpoint_id],
            "get": {
                "operationId": "listWebhookDeliveries",
                "summary": "An endpoint's delivery log, newest first",
                "parameters": _query_parameters(delivery_query),
                "responses": _responses(
                    {"200": _ok("a page of deliveries", _ref("WebhookDeliveryList"))}, 400, 404
                ),
            },
        },
        "/webhooks/{id}/deliveries/{deliveryId}/replay": {
            "parameters": [endpoint_id, delivery_id],
            "post": {
                "operationId": "replayWebhookDelivery",
                "summary": "Send a delivery again, with the same webhook-id",
                "responses": _responses(
                    {"200": _ok("the delivery, due now", _ref("WebhookDelivery"))}, 404
                ),
            },
        },
    }  # fmt: skip


async def _serve(_: Request) -> JSONResponse:
    return JSONResponse(openapi_document())


def openapi_route() -> Route:
    return Route("/openapi.json", _serve, methods=["GET"])
