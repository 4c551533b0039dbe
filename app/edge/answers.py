"""How a surface answers the edge's own refusals (401, 413, 429, 500, 503) that TenantBound
sends before or around its app: GraphQL's `errors` here, REST's problem+json in
app/edge/rest/problems.py."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.types import Send

from app.edge.limits import TooLargeWriter, graphql_too_large
from app.edge.responses import send_json
from app.edge.unavailable import UnavailableWriter, graphql_unavailable

# (send, message, request id). A 429's Retry-After is added to what the writer sends.
ErrorWriter = Callable[[Send, str, str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ErrorAnswers:
    """One writer per refusal, in one surface's shape."""

    unauthorized: ErrorWriter  # 401: no key, or an unknown or revoked one
    too_large: TooLargeWriter  # 413: the body is over the limit
    too_many: ErrorWriter  # 429: the key's rate limit
    unavailable: UnavailableWriter  # the tenant database is locked, corrupt or full
    internal_error: ErrorWriter  # 500: anything else that escaped before an answer


async def graphql_unauthorized(send: Send, message: str, request_id: str) -> None:
    await send_json(
        send,
        401,
        {"errors": [{"message": message, "extensions": {"code": "UNAUTHENTICATED"}}]},
        headers=[(b"www-authenticate", b"Bearer"), (b"x-request-id", request_id.encode())],
    )


async def graphql_internal_error(send: Send, message: str, request_id: str) -> None:
    await send_json(
        send,
        500,
        {"errors": [{"message": message,
                     "extensions": {"code": "INTERNAL_SERVER_ERROR", "requestId": request_id}}]},
    )  # fmt: skip


async def graphql_too_many(send: Send, message: str, request_id: str) -> None:
    await send_json(
        send,
        429,
        {"errors": [{"message": message,
                     "extensions": {"code": "RATE_LIMITED", "requestId": request_id}}]},
    )  # fmt: skip


GRAPHQL_ANSWERS = ErrorAnswers(
    unauthorized=graphql_unauthorized,
    too_large=graphql_too_large,
    too_many=graphql_too_many,
    unavailable=graphql_unavailable,
    internal_error=graphql_internal_error,
)
