"""The pieces every path of the OpenAPI document is written with: schema references, JSON
bodies, query parameters from a model's schema, the shared headers and problem answers."""

from typing import Any

from app.edge.limits import MAX_BODY_BYTES

REF = "#/components/schemas/{model}"


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
