"""REST failures as application/problem+json (RFC 9457): the model, the exception the
handlers raise, the edge's own answers (401, 413, 429, 500, 503) and how service and
validation errors become problems naming the REST field and where it was (body, query, header).
"""

from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any, Literal

from pydantic import Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Scope as AsgiScope
from starlette.types import Send

from app.edge.answers import ErrorAnswers
from app.edge.request_ids import current_request_id
from app.edge.responses import send_json
from app.edge.rest.models import ResponseModel, did_you_mean
from app.edge.unavailable import retry_after_headers
from app.errors import ErrorCode, ExpectedError, ExpectedErrors
from app.storage.unavailable import TenantUnavailable

PROBLEM_JSON = "application/problem+json"
Where = Literal["body", "query", "header", "path"]
# Field errors of one problem, at most: a 1,000-item batch must not answer 10,000 lines.
MAX_PROBLEM_ERRORS = 50


class ProblemError(ResponseModel):
    """One offending field."""

    field: str | None = Field(
        description="dotted path in the body (`tags.2`, `3.body` in a batch), or the name of "
        "the query parameter or header; null when the whole body is at fault"
    )
    in_: Where = Field(alias="in")
    code: str = Field(
        description="INVALID, TOO_LARGE, NOT_FOUND, CONFLICT, FORBIDDEN, MALFORMED, "
        "UNAUTHENTICATED, UNSUPPORTED_MEDIA_TYPE, PRECONDITION_FAILED, METHOD_NOT_ALLOWED, "
        "READ_ONLY, INTERNAL"
    )
    message: str


class Problem(ResponseModel):
    """RFC 9457 problem details, with the offending fields in `errors`."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    request_id: str = Field(description="also in the X-Request-Id response header")
    errors: list[ProblemError]


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
            title=_title(self.status),
            status=self.status,
            detail=self.detail,
            request_id=request_id,
            errors=self.errors,
        ).model_dump(mode="json")

    def response(self, request_id: str) -> Response:
        return JSONResponse(
            self.body(request_id), self.status, headers=self.headers, media_type=PROBLEM_JSON
        )


# RFC 9110's names where Python's http module still has RFC 7231's.
_TITLES = {413: "Content Too Large", 422: "Unprocessable Content"}


def _title(status: int) -> str:
    return _TITLES.get(status) or HTTPStatus(status).phrase


def field_error(field: str | None, where: Where, code: str, message: str) -> ProblemError:
    return ProblemError(field=field, in_=where, code=code, message=message)


def problem(
    status: int,
    field: str | None,
    where: Where,
    code: str,
    message: str,
    headers: Mapping[str, str] | None = None,
) -> HttpProblem:
    return HttpProblem(status, [field_error(field, where, code, message)], headers=headers)


async def problem_exception(request: Request, exc: Exception) -> Response:
    """The app's exception handler of HttpProblem (Starlette's seam for what an endpoint
    raises): its problem+json, with the request id in the body and the X-Request-Id header."""
    assert isinstance(exc, HttpProblem)
    request_id = current_request_id(request.scope)
    response = exc.response(request_id)
    response.raw_headers.append((b"x-request-id", request_id.encode("latin-1")))
    return response


async def problem_unauthorized(scope: AsgiScope, send: Send, message: str, request_id: str) -> None:
    """TenantBound's 401, in problem+json."""
    p = problem(401, "Authorization", "header", "UNAUTHENTICATED", message)
    await send_json(
        send,
        401,
        p.body(request_id),
        content_type=PROBLEM_JSON,
        headers=[(b"www-authenticate", b"Bearer"), (b"x-request-id", request_id.encode())],
    )


def unavailable_problem(exc: TenantUnavailable) -> HttpProblem:
    """A tenant database locked, corrupt or full (app/edge/unavailable.py): not a bare 500."""
    return problem(exc.status, None, "body", exc.code, exc.message, retry_after_headers(exc))


async def problem_unavailable(
    scope: AsgiScope, send: Send, exc: TenantUnavailable, request_id: str
) -> None:
    p = unavailable_problem(exc)
    await send_json(
        send,
        exc.status,
        p.body(request_id),
        content_type=PROBLEM_JSON,
        headers=[(k.lower().encode(), v.encode()) for k, v in p.headers.items()],
    )


async def problem_internal_error(
    scope: AsgiScope, send: Send, message: str, request_id: str
) -> None:
    """TenantBound's 500 (e.g. a tenant database that cannot open), in problem+json."""
    p = problem(500, None, "body", "INTERNAL", f"{message}; quote the requestId")
    await send_json(send, 500, p.body(request_id), content_type=PROBLEM_JSON)


async def problem_too_many(scope: AsgiScope, send: Send, message: str, request_id: str) -> None:
    """TenantBound's 429 (the API key's rate limit), in problem+json."""
    p = problem(429, "Authorization", "header", "RATE_LIMITED", message)
    await send_json(send, 429, p.body(request_id), content_type=PROBLEM_JSON)


async def problem_too_large(scope: AsgiScope, send: Send, limit: int) -> None:
    """BodyLimit's 413, in problem+json."""
    request_id = current_request_id(scope)
    message = f"the request body is over the limit of {limit} bytes"
    p = problem(413, None, "body", "TOO_LARGE", message)
    await send_json(
        send,
        413,
        p.body(request_id),
        content_type=PROBLEM_JSON,
        headers=[(b"x-request-id", request_id.encode())],
    )


PROBLEM_ANSWERS = ErrorAnswers(
    unauthorized=problem_unauthorized,
    too_large=problem_too_large,
    too_many=problem_too_many,
    unavailable=problem_unavailable,
    internal_error=problem_internal_error,
)


# Service error code → status when the input came from the body (query: 400, see below).
_STATUS = {
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.CONFLICT: 409,
    ErrorCode.INVALID: 422,
    ErrorCode.TOO_LARGE: 422,  # a field over its limit; 413 is the whole request body's
    ErrorCode.FORBIDDEN: 422,  # a reserved value (source=compactor), not a missing right
    ErrorCode.BUDGET_EXCEEDED: 422,
}
# The services' names of a list's paging arguments → REST's query parameters.
LIST_NAMES: dict[str, tuple[str, Where]] = {
    "after": ("cursor", "query"),
    "first": ("limit", "query"),
}


def _service_problem(
    exc: ExpectedError | ExpectedErrors, where: Where, names: Mapping[str, tuple[str, Where]]
) -> HttpProblem:
    found = exc.errors if isinstance(exc, ExpectedErrors) else [exc]
    errors = []
    for e in found:
        # The services' paths are REST's ("3.body", "search"); the empty path is the body.
        dotted = ".".join(e.field)
        name: str | None = dotted or None
        at: Where = where
        message = e.message
        if dotted in names:
            name, at = names[dotted]
            message = e.renamed([name], name).message
        errors.append(field_error(name, at, e.code.value, message))
    status = _STATUS.get(found[0].code, 422)
    if where == "query" and status == 422:
        status = 400
    return HttpProblem(status, errors)


class service_errors:
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
        if isinstance(exc, (ExpectedError, ExpectedErrors)):
            raise _service_problem(exc, self.where, self.names or {}) from None


def unknown_name(name: str, field: str, where: Where) -> str:
    """`field: unknown field`, with the name meant when it is one misspelt (`scope_ref`)."""
    what = "field" if where == "body" else "parameter"
    meant = did_you_mean(name)
    return f"{field}: unknown {what}" + (f"; did you mean {meant}?" if meant else "")


def validation_problem(exc: ValidationError, where: Where) -> HttpProblem:
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
            message = unknown_name(str(d["loc"][-1]), field or "", where)
        else:
            message = f"{field}: {d['msg']}" if field else d["msg"]
        code = "FORBIDDEN" if d["type"] == "forbidden" else "INVALID"
        errors.append(field_error(field, where, code, message))
    return HttpProblem(422 if where == "body" else 400, errors)
