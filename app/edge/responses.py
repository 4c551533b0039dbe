"""Raw ASGI JSON responses, for the edge's own answers before any framework runs, the `send`
wrapper that notes a response's status, and the status the metrics record for a request
that got no answer."""

import json

from starlette.types import Message, Scope, Send

# The status of a request the client gave up on before its body arrived: nginx's 499
# ("client closed request"). Never sent (nobody is left to read it): the metrics and the
# log say it. TenantBound notes it in the scope's state under UNANSWERED_STATUS.
CLIENT_CLOSED_REQUEST = 499
UNANSWERED_STATUS = "jet.unanswered_status"


def unanswered_status(scope: Scope) -> int:
    """What the metrics record for a request that ended without a response: the status
    the edge noted for it (CLIENT_CLOSED_REQUEST), else 500 (an exception escaped, or an
    app returned without answering, which the server answers 500)."""
    return int(scope.get("state", {}).get(UNANSWERED_STATUS, 500))


async def send_json(
    send: Send,
    status: int,
    body: object,
    *,
    content_type: str = "application/json",
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(data)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


class StatusNoted:
    """`send`, noting the status of the response it starts (`status` until then) and, once
    `request_id` is set, adding `x-request-id: <request_id>` to a response start that has
    none (TenantBound sets it).

    HttpMetrics uses it for the status, TenantBound for the header and whether a response
    started: one wrapper rather than one per job, as each is a coroutine call per message.
    """

    __slots__ = ("_send", "request_id", "started", "status")

    def __init__(self, send: Send, status: int) -> None:
        self._send = send
        self.status = status
        self.started = False
        self.request_id: bytes | None = None

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.started = True
            request_id = self.request_id
            if request_id is not None:
                headers = message.get("headers", [])
                for name, _ in headers:
                    if name == b"x-request-id":
                        break
                else:
                    # A new message and list: the app's (a Response's raw_headers) is kept.
                    message = {**message, "headers": [*headers, (b"x-request-id", request_id)]}
        await self._send(message)
