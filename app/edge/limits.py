"""The request body size limit of the HTTP edge: an over-limit body is refused before any work.

TenantBound (app/edge/auth.py) enforces it, with `limit`: a declared Content-Length over the
limit is answered 413 before anything else runs; a streamed body is counted as it is
received (`LimitedReceive`), and the first message over the limit raises BodyTooLarge,
which TenantBound answers 413 unless a response has started. Each surface says 413 in its
own shape (GraphQL `errors`, REST problem+json) via its ErrorAnswers' `too_large`.
"""

from collections.abc import Awaitable, Callable

from starlette.types import Message, Receive, Scope, Send

MAX_BODY_BYTES = 8 * 1024 * 1024

# Writes the 413 response: (scope, send, limit in bytes).
TooLargeWriter = Callable[[Scope, Send, int], Awaitable[None]]


class BodyTooLarge(Exception):
    """Raised from `receive` once a streamed body passes the limit; TenantBound answers 413.

    An app that catches broad exceptions around reading the body must re-raise this one.
    """


def declared_over(content_length: bytes | None, limit: int) -> bool:
    """Whether a Content-Length header's value declares a body over `limit` bytes."""
    return content_length is not None and content_length.isdigit() and int(content_length) > limit


class LimitedReceive:
    """`receive`, raising BodyTooLarge once the request's body passes `limit` bytes."""

    __slots__ = ("_receive", "limit", "seen")

    def __init__(self, receive: Receive, limit: int) -> None:
        self._receive = receive
        self.limit = limit
        self.seen = 0

    async def __call__(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.request":
            self.seen += len(message.get("body", b""))
            if self.seen > self.limit:
                raise BodyTooLarge
        return message
