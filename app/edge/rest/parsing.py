"""Reading a REST request: Content-Type, the body's JSON into a model, the query string
into a model, If-Match and two headers in one pass; failures become problems."""

import re
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError
from starlette.requests import Request
from starlette.types import Scope as AsgiScope

from app.edge.rest.models import AppendMemoryEventInput, QueryModel
from app.edge.rest.problems import (
    HttpProblem,
    ProblemError,
    field_error,
    problem,
    unknown_name,
    validation_problem,
)
from app.services.records import Entry, EventIn

T = TypeVar("T")
Q = TypeVar("Q", bound=QueryModel)


def require_json(request: Request) -> None:
    require_json_type(request.headers.get("content-type"))


_CHARSET = re.compile(r"charset\s*=\s*\"?([\w-]+)", re.IGNORECASE)


def require_json_type(ctype: str | None) -> None:
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
            [
                field_error(
                    "Content-Type",
                    "header",
                    "UNSUPPORTED_MEDIA_TYPE",
                    "send the body as JSON: Content-Type: application/json (UTF-8)",
                )
            ],
        )


def parse_body(raw: bytes, adapter: TypeAdapter[T]) -> T:
    try:
        return adapter.validate_json(raw)
    except ValidationError as exc:
        raise validation_problem(exc, "body") from None


EMPTY = "empty; give it a value or leave the parameter out"


def parse_query(request: Request, model: type[Q]) -> Q:
    names = {field.alias or name for name, field in model.model_fields.items()}
    data: dict[str, Any] = {}
    errors: list[ProblemError] = []
    for name in dict.fromkeys(request.query_params.keys()):
        values = request.query_params.getlist(name)
        if name not in names:
            errors.append(field_error(name, "query", "INVALID", unknown_name(name, name, "query")))
        elif "" in values:
            # One rule on every route: `scope=` is neither absent nor a value (docs/rest.md).
            errors.append(field_error(name, "query", "INVALID", f"{name}: {EMPTY}"))
        elif name in model.repeatable:
            data[name] = values or None
        elif len(values) > 1:
            errors.append(field_error(name, "query", "INVALID", f"{name}: given more than once"))
        elif values:
            data[name] = values[0]
    if errors:
        raise HttpProblem(400, errors)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_problem(exc, "query") from None


_ETAG = re.compile(r'(?:W/)?"(\d{1,18})"')


def etag(entry: Entry) -> str:
    # Strong: any change to an entry bumps its version, so equal versions are equal bytes.
    return f'"{entry.version}"'


def if_match_versions(request: Request) -> list[int] | None:
    """The versions an If-Match header allows, or None for absent or `*`."""
    given = request.headers.getlist("if-match")
    if not given:
        return None
    raw = ",".join(given)
    if raw.strip() == "*":
        return None
    versions = []
    for part in raw.split(","):
        found = _ETAG.fullmatch(part.strip())
        if found is None:
            raise problem(
                400,
                "If-Match",
                "header",
                "INVALID",
                'If-Match must hold ETags of this API, e.g. "3" (the entry\'s version), or *',
            )
        versions.append(int(found.group(1)))
    return versions


def event_in(i: AppendMemoryEventInput, idempotency_key: str | None) -> EventIn:
    return EventIn(
        scope=i.scope,
        scope_ref=i.scope_ref,
        kind=i.kind,
        body=i.body,
        source=i.source,
        source_ref=i.source_ref,
        occurred_at=i.occurred_at,
        idempotency_key=idempotency_key,
    )


def two_headers(scope: AsgiScope, first: bytes, second: bytes) -> tuple[str | None, str | None]:
    """The values of two request headers (lowercase names), each its first, as
    `request.headers.get(name)` gives them, in one pass over the scope's headers and
    without building Starlette's Headers for two lookups."""
    one = two = None
    for name, value in scope["headers"]:
        if name == first:
            if one is None:
                one = value.decode("latin-1")
        elif name == second and two is None:
            two = value.decode("latin-1")
    return one, two


def is_json_array(raw: bytes) -> bool:
    return raw.lstrip(b" \t\r\n")[:1] == b"["
