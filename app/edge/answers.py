"""How a surface answers the edge's own refusals (401, 413, 429, 500, 503) that TenantBound
sends before or around its app: GraphQL's `errors` here, REST's problem+json in
app/edge/rest/problems.py, MCP's JSON-RPC errors in app/edge/mcp/http.py.

Every GraphQL refusal has one shape, whoever sends it (TenantBound here, the view for a
request it cannot run): `{"errors": [{"message", "extensions": {"code", "requestId"}}]}`,
in the media type the client's Accept asked for (application/graphql-response+json or
application/json), negotiated once per request (`wants_graphql_response_of`).
"""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from starlette.types import Scope, Send

from app.edge.limits import TooLargeWriter
from app.edge.responses import send_json
from app.edge.unavailable import UnavailableWriter, graphql_extensions, retry_after_headers
from app.storage.unavailable import TenantUnavailable

# (scope, send, message, request id). A 429's Retry-After is added to what the writer sends.
ErrorWriter = Callable[[Scope, Send, str, str], Awaitable[None]]

GRAPHQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"
# Where a request's Accept negotiation is kept, so it is parsed once per request.
WANTS_KEY = "jet.graphql_response"

# The code of a refusal by its HTTP status, where the refusal names none of its own.
STATUS_CODES = {
    400: "BAD_REQUEST",
    401: "UNAUTHENTICATED",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    413: "TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    429: "RATE_LIMITED",
    500: "INTERNAL_SERVER_ERROR",
}


@dataclass(frozen=True, slots=True)
class ErrorAnswers:
    """One writer per refusal, in one surface's shape."""

    unauthorized: ErrorWriter  # 401: no key, or an unknown or revoked one
    too_large: TooLargeWriter  # 413: the body is over the limit
    too_many: ErrorWriter  # 429: the key's rate limit
    unavailable: UnavailableWriter  # the tenant database is locked, corrupt or full
    internal_error: ErrorWriter  # 500: anything else that escaped before an answer


# A function of the header's text alone, and clients send a handful of distinct Accept
# headers: the answer is cached (bounded; least recently used dropped).
@lru_cache(maxsize=256)
def wants_graphql_response(accept: str) -> bool:
    """Whether an Accept header prefers application/graphql-response+json to JSON.

    The spec's negotiation: the new type wins a tie; no Accept (or one naming neither)
    keeps the legacy application/json.
    """
    best: dict[str, float] = {GRAPHQL_RESPONSE: 0.0, JSON: 0.0}
    for item in accept.split(","):
        media, *params = (part.strip() for part in item.split(";"))
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        media = media.lower()
        if media == GRAPHQL_RESPONSE:
            best[GRAPHQL_RESPONSE] = max(best[GRAPHQL_RESPONSE], q)
        elif media in (JSON, "application/*", "*/*"):
            best[JSON] = max(best[JSON], q)
    return best[GRAPHQL_RESPONSE] > 0 and best[GRAPHQL_RESPONSE] >= best[JSON]


def wants_graphql_response_of(scope: Scope) -> bool:
    """The request's negotiation (its first Accept header, as starlette's `Headers.get`
    reads it), kept in the scope under WANTS_KEY for the view."""
    wants: bool | None = scope.get(WANTS_KEY)
    if wants is None:
        accept = ""
        for name, value in scope["headers"]:
            if name == b"accept":
                accept = value.decode("latin-1")
                break
        wants = scope[WANTS_KEY] = wants_graphql_response(accept)
    return wants


def graphql_error_body(message: str, code: str, request_id: str | None) -> dict[str, Any]:
    """The GraphQL answer to a request refused before (or instead of) any operation."""
    return {"errors": [{"message": message, "extensions": {"code": code, "requestId": request_id}}]}


async def _write(
    scope: Scope,
    send: Send,
    status: int,
    body: dict[str, Any],
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    # application/graphql-response+json for a client whose Accept prefers it (Apollo
    # Client does), else application/json.
    media = GRAPHQL_RESPONSE if wants_graphql_response_of(scope) else JSON
    await send_json(send, status, body, content_type=media, headers=headers)


async def _unauthorized(scope: Scope, send: Send, message: str, request_id: str) -> None:
    body = graphql_error_body(message, STATUS_CODES[401], request_id)
    await _write(scope, send, 401, body, [(b"www-authenticate", b"Bearer")])


async def _too_large(scope: Scope, send: Send, limit: int) -> None:
    message = f"request body is over the limit of {limit} bytes"
    request_id = scope.get("state", {}).get("request_id")
    await _write(scope, send, 413, graphql_error_body(message, STATUS_CODES[413], request_id))


async def _too_many(scope: Scope, send: Send, message: str, request_id: str) -> None:
    await _write(scope, send, 429, graphql_error_body(message, STATUS_CODES[429], request_id))


async def _unavailable(scope: Scope, send: Send, exc: TenantUnavailable, request_id: str) -> None:
    extensions = graphql_extensions(exc, request_id)
    body = {"errors": [{"message": exc.message, "extensions": extensions}]}
    headers = [(k.lower().encode(), v.encode()) for k, v in retry_after_headers(exc).items()]
    await _write(scope, send, exc.status, body, headers)


async def _internal_error(scope: Scope, send: Send, message: str, request_id: str) -> None:
    await _write(scope, send, 500, graphql_error_body(message, STATUS_CODES[500], request_id))


GRAPHQL_ANSWERS = ErrorAnswers(
    unauthorized=_unauthorized,
    too_large=_too_large,
    too_many=_too_many,
    unavailable=_unavailable,
    internal_error=_internal_error,
)
