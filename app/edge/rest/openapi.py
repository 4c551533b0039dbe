"""The OpenAPI 3.1 document of the REST routes, served at GET /openapi.json without a key.

Made, never written: its paths from the route table (routing.py) and what each handler
declares with @operation (operations.py); its schemas from the pydantic request models
(models.py) and the service records the answers are (response_models.py). Written here is
only what every route shares: the headers, the problem answers and the introduction.
"""

import functools
import re
from collections.abc import Iterator
from typing import Any

from pydantic import TypeAdapter
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaMode
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from app import __version__, ids
from app.edge.limits import MAX_BODY_BYTES
from app.edge.rest.models import ONE_LINE_PATTERN, non_null
from app.edge.rest.operations import OPERATIONS, Answer, Operation
from app.edge.rest.problems import PROBLEM_JSON, Problem
from app.edge.rest.response_models import NOUNS, Noun
from app.edge.rest.routing import Resource, rest_routes
from app.services import limits

REF = "#/components/schemas/{model}"
# What parsing.if_match_versions takes: `*`, or ETags of this API (W/ is read as strong).
IF_MATCH_PATTERN = r'^\s*(\*|(W/)?"\d{1,18}"(\s*,\s*(W/)?"\d{1,18}")*)\s*$'
# The request headers an operation may read (Operation.headers).
REQUEST_HEADERS: dict[str, dict[str, Any]] = {
    "If-Match": {
        "description": 'update only if the entry is still at one of these versions, e.g. "3", '
        "or * (any)",
        "schema": {"type": "string", "pattern": IF_MATCH_PATTERN},
    },
    "Idempotency-Key": {
        "description": "makes a retry safe (a single event only; not with an array body)",
        "schema": {
            "type": "string",
            "minLength": 1,
            "maxLength": limits.REF_MAX_CHARS,
            "pattern": ONE_LINE_PATTERN,
        },
    },
}
# The response headers an answer may carry (Answer.headers), besides X-Request-Id on all.
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
# status → (its component's name, what it means)
PROBLEMS = {
    400: (
        "BadRequest",
        "the request cannot be read: malformed JSON, a bad query parameter or header",
    ),
    401: ("Unauthorized", "missing, unknown or revoked API key"),
    404: ("NotFound", "no such entry in this tenant"),
    409: ("Conflict", "a stale expectedVersion, or an Idempotency-Key reused for another event"),
    412: ("PreconditionFailed", "If-Match names a version the entry is no longer at"),
    413: ("ContentTooLarge", f"the request body is over {MAX_BODY_BYTES} bytes"),
    415: ("UnsupportedMediaType", "the body is not sent as application/json"),
    422: ("UnprocessableContent", "the body breaks a rule or a documented limit"),
    429: (
        "TooManyRequests",
        "the API key is over its rate limit (per API process); see Retry-After",
    ),
    500: (
        "InternalError",
        "a bug, or the tenant's database is corrupt (code "
        "TENANT_DATABASE_CORRUPT); the requestId is in the log",
    ),
    503: (
        "ServiceUnavailable",
        "the tenant's database is locked by another process (code "
        "TENANT_DATABASE_BUSY); see Retry-After",
    ),
    507: (
        "InsufficientStorage",
        "the tenant's database could not grow: disk full (code "
        "TENANT_DATABASE_FULL); nothing was written",
    ),
}
# Any route may meet a missing key, its rate limit, or a tenant database that is corrupt,
# busy or full; a body may be malformed, too large, not JSON or break a rule; a query
# string may not parse (parsing.py).
EVERY_ROUTE_PROBLEMS = (401, 429, 500, 503, 507)
BODY_PROBLEMS = (400, 413, 415, 422)
QUERY_PROBLEMS = (400,)

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


def operations() -> Iterator[tuple[str, str, Operation]]:
    """(path, method, operation) of every REST route but the catch-all 404s, in table order."""
    for route in rest_routes():
        assert isinstance(route, Route) and isinstance(route.endpoint, Resource)
        for method, handler in route.endpoint.handlers.items():
            yield route.path, method.lower(), OPERATIONS[handler]


def _types(body: Any) -> tuple[Any, ...]:
    return body if isinstance(body, tuple) else (body,)


class _Schemas:
    """Every schema of the document, made by pydantic in one pass (so each model and record
    is one component), then named as the API names them: a record under its noun's name,
    without its hidden fields."""

    def __init__(self, ops: list[Operation]) -> None:
        inputs: dict[tuple[Any, JsonSchemaMode], Any] = {(Problem, "serialization"): Problem}
        for op in ops:
            for t in (op.query, *_types(op.body)):
                if t is not None:
                    inputs[(t, "validation")] = t
            for answer in op.answers.values():
                for t in _types(answer.body):
                    if t is not None and not isinstance(t, Noun):
                        inputs[(t, "serialization")] = t
        for noun in NOUNS:
            inputs[(noun, "serialization")] = noun.record
            for t in noun.documented.values():
                inputs[(t, "serialization")] = t
        refs, top = TypeAdapter.json_schemas(
            [(t, mode, TypeAdapter(of)) for (t, mode), of in inputs.items()], ref_template=REF
        )
        defs: dict[str, Any] = top["$defs"]
        # A query model's schema becomes parameters, not a component.
        queries = {op.query for op in ops if op.query is not None}
        self.query = {q: defs.pop(q.__name__) for q in queries}
        names = {_name(refs[(noun, "serialization")]): noun.name for noun in NOUNS}
        for noun in NOUNS:
            schema = defs.pop(_name(refs[(noun, "serialization")]))
            defs[noun.name] = _noun(noun, schema, refs)
        for noun in NOUNS:
            if noun.inline is not None:
                field, inlined = noun.inline
                defs[noun.name] = _inlined(defs[noun.name], field, defs[inlined.name])
        for schema in (*defs.values(), *self.query.values()):
            _described(schema)
        self.defs: dict[str, Any] = _renamed(defs, names)
        self.refs: dict[tuple[Any, JsonSchemaMode], Any] = _renamed(refs, names)

    def of(self, body: Any, mode: JsonSchemaMode) -> dict[str, Any]:
        """The schema of a body: a reference to a component, or inline; one of, for a tuple."""
        found = [self.refs[(t, mode)] for t in _types(body)]
        return found[0] if len(found) == 1 else {"oneOf": found}


def _name(ref: dict[str, str]) -> str:
    return ref["$ref"].rsplit("/", 1)[1]


def _noun(noun: Noun[Any], schema: dict[str, Any], refs: dict[Any, Any]) -> dict[str, Any]:
    """A record's schema as its noun's: its hidden fields gone, its documented ones retyped."""
    props = schema["properties"]
    hidden = {to_camel(f) for f in noun.hidden}
    for name in hidden:
        del props[name]
    for field, t in noun.documented.items():
        name = to_camel(field)
        described = (
            {"description": props[name]["description"]} if "description" in props[name] else {}
        )
        props[name] = {**refs[(t, "serialization")], **described}
    schema["required"] = [r for r in schema.get("required", []) if r not in hidden]
    schema["title"] = noun.name
    return schema


def _inlined(schema: dict[str, Any], field: str, inner: dict[str, Any]) -> dict[str, Any]:
    """`schema` with the object property `field` replaced by `inner`'s properties."""
    name = to_camel(field)
    props: dict[str, Any] = {}
    for key, prop in schema["properties"].items():
        props.update(inner["properties"] if key == name else {key: prop})
    required: list[str] = []
    for key in schema.get("required", []):
        required.extend(inner.get("required", []) if key == name else [key])
    return {**schema, "properties": props, "required": required}


def _renamed(schema: Any, names: dict[str, str]) -> Any:
    """`schema` with its references to records' components renamed to their nouns."""
    if isinstance(schema, dict):
        out = {k: _renamed(v, names) for k, v in schema.items()}
        if isinstance(out.get("$ref"), str):
            name = out["$ref"].rsplit("/", 1)[1]
            out["$ref"] = REF.format(model=names.get(name, name))
        return out
    if isinstance(schema, list):
        return [_renamed(v, names) for v in schema]
    return schema


def _described(schema: dict[str, Any]) -> None:
    """Property titles dropped (pydantic's "Scoperef": the names say it better), and the line
    breaks of a description from a docstring read as the spaces they are."""
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
        if "description" in prop:
            prop["description"] = re.sub(r"\s*\n\s*", " ", prop["description"])


def _query_parameters(schema: dict[str, Any]) -> list[dict[str, Any]]:
    params = []
    for name, prop in schema["properties"].items():
        prop = dict(prop)
        description = prop.pop("description", None)
        param: dict[str, Any] = {"name": name, "in": "query", "schema": non_null(prop)}
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


def _json(schema: dict[str, Any], media: str = "application/json") -> dict[str, Any]:
    return {"content": {media: {"schema": schema}}}


def _answer(answer: Answer, schemas: _Schemas) -> dict[str, Any]:
    out: dict[str, Any] = {
        "description": answer.description,
        "headers": {
            h: {"$ref": f"#/components/headers/{h}"} for h in ("X-Request-Id", *answer.headers)
        },
    }
    if answer.body is not None:
        out.update(_json(schemas.of(answer.body, "serialization"), answer.media))
    return out


def _operation(op: Operation, schemas: _Schemas) -> dict[str, Any]:
    out: dict[str, Any] = {"operationId": op.operation_id, "summary": op.summary}
    if op.description:
        out["description"] = op.description
    parameters = [{"name": h, "in": "header", **REQUEST_HEADERS[h]} for h in op.headers]
    if op.query is not None:
        parameters += _query_parameters(schemas.query[op.query])
    if parameters:
        out["parameters"] = parameters
    if op.body is not None:
        out["requestBody"] = {"required": True, **_json(schemas.of(op.body, "validation"))}
    responses = {str(s): _answer(a, schemas) for s, a in op.answers.items()}
    problems = {*EVERY_ROUTE_PROBLEMS, *op.problems}
    problems.update(BODY_PROBLEMS if op.body is not None else ())
    problems.update(QUERY_PROBLEMS if op.query is not None else ())
    for status in sorted(problems):
        responses[str(status)] = {"$ref": f"#/components/responses/{PROBLEMS[status][0]}"}
    out["responses"] = responses
    return out


def _path_parameters(path: str, op: Operation) -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "in": "path",
            "required": True,
            "schema": {"type": "string", "pattern": ids.pattern(op.path[name])},
        }
        for name in re.findall(r"{(\w+)}", path)
    ]


@functools.cache
def openapi_document() -> dict[str, Any]:
    """The document (built once per process)."""
    found = list(operations())
    schemas = _Schemas([op for _, _, op in found])
    paths: dict[str, Any] = {}
    for path, method, op in found:
        item = paths.setdefault(path, {})
        if "{" in path:
            params = _path_parameters(path, op)
            assert item.setdefault("parameters", params) == params, path
        item[method] = _operation(op, schemas)
    problem_headers = {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}}
    responses = {
        name: {
            "description": description,
            "headers": problem_headers,
            **_json({"$ref": REF.format(model="Problem")}, PROBLEM_JSON),
        }
        for name, description in PROBLEMS.values()
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
            "schemas": schemas.defs,
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
