"""The request body size limit of the HTTP edge: an over-limit body is refused before any work.

Each surface says 413 in its own shape (GraphQL `errors`, REST problem+json) via `too_large`.
"""

from collections.abc import Awaitable, Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.edge.responses import send_json

MAX_BODY_BYTES = 8 * 1024 * 1024

# Writes the 413 response: (scope, send, limit in bytes).
TooLargeWriter = Callable[[Scope, Send, int], Awaitable[None]]


async def graphql_too_large(scope: Scope, send: Send, limit: int) -> None:
    msg = f"request body is over the limit of {limit} bytes"
    await send_json(send, 413, {"errors": [{"message": msg, "extensions": {"code": "TOO_LARGE"}}]})


class BodyTooLarge(Exception):
    """Raised from `receive` once a streamed body passes the limit; BodyLimit answers 413.

    An app that catches broad exceptions around reading the body must re-raise this one.
    """


class BodyLimit:
    """413 for a request body over `limit` bytes, declared or streamed, before any work."""

    def __init__(
        self, app: ASGIApp, limit: int, *, too_large: TooLargeWriter = graphql_too_large
    ) -> None:
        self.app = app
        self.limit = limit
        self.too_large = too_large

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self.too_large(scope, send, self.limit)
            return
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await self.too_large(scope, send, self.limit)
