"""How a surface answers the edge's own refusals (401, 413, 429, 500, 503) that TenantBound
sends before or around its app: GraphQL's `errors` here, REST's problem+json in
app/edge/rest/problems.py.

Every GraphQL refusal has one shape, whoever sends it (TenantBound here, the view for a
request it cannot run): `{"errors": [{"message", "extensions": {"code", "requestId"}}]}`,
in the media type the client's Accept asked for (application/graphql-response+json or
application/json).
"""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.types import Scope, Send

from app.edge.limits import TooLargeWriter
from app.edge.responses import send_json
from app.edge.unavailable import UnavailableWriter, graphql_extensions, retry_after_headers
from app.storage.unavailable import TenantUnavailable

# (send, message, request id). A 429's Retry-After is added to what the writer sends.
ErrorWriter = Callable[[Send, str, str], Awaitable[None]]

GRAPHQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"

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


def graphql_error_body(message: str, code: str, request_id: str | None) -> dict[str, Any]:
    """The GraphQL answer to a request refused before (or instead of) any operation."""
    return {"errors": [{"message": message, "extensions": {"code": code, "requestId": request_id}}]}


def graphql_answers(media_type: str) -> ErrorAnswers:
    """The GraphQL writers, answering in `media_type`."""

    async def write(
        send: Send,
        status: int,
        body: dict[str, Any],
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        await send_json(send, status, body, content_type=media_type, headers=headers)

    async def unauthorized(send: Send, message: str, request_id: str) -> None:
        body = graphql_error_body(message, STATUS_CODES[401], request_id)
        await write(send, 401, body, [(b"www-authenticate", b"Bearer")])

    async def too_large(scope: Scope, send: Send, limit: int) -> None:
        message = f"request body is over the limit of {limit} bytes"
        request_id = scope.get("state", {}).get("request_id")
        await write(send, 413, graphql_error_body(message, STATUS_CODES[413], request_id))

    async def too_many(send: Send, message: str, request_id: str) -> None:
        await write(send, 429, graphql_error_body(message, STATUS_CODES[429], request_id))

    async def unavailable(send: Send, exc: TenantUnavailable, request_id: str) -> None:
        body = {"errors": [{"message": exc.message,
                            "extensions": graphql_extensions(exc, request_id)}]}  # fmt: skip
        headers = [(k.lower().encode(), v.encode()) for k, v in retry_after_headers(exc).items()]
        await write(send, exc.status, body, headers)

    async def internal_error(send: Send, message: str, request_id: str) -> None:
        await write(send, 500, graphql_error_body(message, STATUS_CODES[500], request_id))

    return ErrorAnswers(
        unauthorized=unauthorized,
        too_large=too_large,
        too_many=too_many,
        unavailable=unavailable,
        internal_error=internal_error,
    )


GRAPHQL_ANSWERS = graphql_answers(JSON)
# For a client whose Accept prefers the GraphQL-over-HTTP media type (Apollo Client does).
GRAPHQL_RESPONSE_ANSWERS = graphql_answers(GRAPHQL_RESPONSE)
