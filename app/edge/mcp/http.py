"""/mcp: the tools over stateless Streamable HTTP, behind TenantBound like /graphql and /memory.

TenantBound decides the tenant from the API key (same auth cache, rate limit, request ids,
body limit) and leases its database into scope["state"]["db"] before the SDK sees the
request; a tool reads it from there. Stateless with JSON responses: any replica can answer
any request, so a plain load balancer needs no session affinity, and GET (a stream for the
server's own messages, which a stateless server never sends) is a 405. The SDK's session manager
needs a task group for the app's lifetime: `McpEndpoint.wrap` runs it inside the app's
lifespan (a new one per lifespan, as the SDK allows one run per manager).
"""

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.requests import Request
from starlette.types import Lifespan, Receive, Scope, Send

from app.edge.answers import ErrorAnswers
from app.edge.auth import TenantBound, requester
from app.edge.lifespan import container_of
from app.edge.limits import MAX_BODY_BYTES
from app.edge.mcp.server import build_server
from app.edge.request_ids import current_request_id
from app.edge.responses import send_json
from app.storage.tenants import TenantDb
from app.storage.unavailable import TenantUnavailable

# JSON-RPC error codes of answers made before MCP runs (the server-defined range).
UNAUTHORIZED = -32001
RATE_LIMITED = -32002
UNAVAILABLE = -32003
INTERNAL = -32603
INVALID_REQUEST = -32600  # what the SDK answers its own 405s with
NO_STREAM = (
    "GET /mcp opens no stream: this server is stateless and answers each POST in its "
    "response (Streamable HTTP's 405 for a server without a GET stream)"
)


def _rpc_error(code: int, message: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message, "data": data}}


async def mcp_unauthorized(scope: Scope, send: Send, message: str, request_id: str) -> None:
    await send_json(
        send,
        401,
        _rpc_error(UNAUTHORIZED, message, {"code": "UNAUTHENTICATED", "requestId": request_id}),
        headers=[(b"www-authenticate", b'Bearer realm="jet-memory"')],
    )


async def mcp_too_many(scope: Scope, send: Send, message: str, request_id: str) -> None:
    data = {"code": "RATE_LIMITED", "requestId": request_id}
    await send_json(send, 429, _rpc_error(RATE_LIMITED, message, data))


async def mcp_internal_error(scope: Scope, send: Send, message: str, request_id: str) -> None:
    data = {"code": "INTERNAL", "requestId": request_id}
    await send_json(send, 500, _rpc_error(INTERNAL, message, data))


async def mcp_unavailable(
    scope: Scope, send: Send, exc: TenantUnavailable, request_id: str
) -> None:
    data = {"code": exc.code, "reason": exc.reason, "requestId": request_id}
    headers = [] if exc.retry_after is None else [(b"retry-after", str(exc.retry_after).encode())]
    await send_json(send, exc.status, _rpc_error(UNAVAILABLE, exc.message, data), headers=headers)


async def mcp_too_large(scope: Scope, send: Send, limit: int) -> None:
    message = f"request body is over the limit of {limit} bytes"
    await send_json(send, 413, _rpc_error(INTERNAL, message, {"code": "TOO_LARGE"}))


MCP_ANSWERS = ErrorAnswers(
    unauthorized=mcp_unauthorized,
    too_large=mcp_too_large,
    too_many=mcp_too_many,
    unavailable=mcp_unavailable,
    internal_error=mcp_internal_error,
)


class McpEndpoint:
    """The ASGI app of /mcp (see the module docstring), one per app: each request's Container
    is the lifespan state's (app/edge/lifespan.py), its session manager the running
    lifespan's."""

    def __init__(self) -> None:
        self._server = build_server(self._resolve)
        self._manager: StreamableHTTPSessionManager | None = None
        # GET and a lifespan not started are answered before the key is read.
        self._bound = TenantBound(
            self._handle, answers=MCP_ANSWERS, limit=MAX_BODY_BYTES, limit_first=True
        )

    def _resolve(
        self, ctx: ServerRequestContext[Any, Any]
    ) -> tuple[TenantDb, int, Callable[[], Awaitable[str]]]:
        # TenantBound put the verified tenant's database here; the SDK hands tools the request.
        request = ctx.request
        assert isinstance(request, Request), "tools run only on an authenticated HTTP request"
        container = container_of(request.scope)
        return (
            request.scope["state"]["db"],
            container.settings.group_commit_max_rows,
            lambda: requester(request.scope, container),
        )

    def wrap(self, lifespan: Lifespan[Any]) -> Lifespan[Any]:
        """`lifespan`, with the MCP session manager running inside it."""

        @contextlib.asynccontextmanager
        async def with_mcp(app: Any) -> AsyncIterator[Any]:
            async with lifespan(app) as state:
                manager = StreamableHTTPSessionManager(
                    self._server,
                    json_response=True,
                    stateless=True,
                    # No DNS-rebinding check: every request needs an API key, which a page
                    # a browser was tricked into loading does not have.
                    security_settings=None,
                    max_request_body_size=MAX_BODY_BYTES,
                )
                async with manager.run():
                    self._manager = manager
                    try:
                        yield state
                    finally:
                        self._manager = None

        return with_mcp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] == "GET":
            await _no_stream(scope, send)
            return
        if self._manager is None:
            await _not_started(send)
            return
        await self._bound(scope, receive, send)

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = self._manager
        if manager is None:  # the lifespan ended while the key was read
            await _not_started(send)
            return
        await manager.handle_request(scope, receive, send)


async def _no_stream(scope: Scope, send: Send) -> None:
    """GET /mcp: the specification's 405 for a server that offers no stream of its own.
    Stateless, this server never writes to one, and a GET stream would hold a connection
    (and a tenant lease) open for nothing; answered before the key is read, as it reveals
    nothing."""
    request_id = current_request_id(scope)
    data = {"code": "METHOD_NOT_ALLOWED", "requestId": request_id}
    await send_json(
        send,
        405,
        _rpc_error(INVALID_REQUEST, NO_STREAM, data),
        headers=[(b"allow", b"POST"), (b"x-request-id", request_id.encode())],
    )


async def _not_started(send: Send) -> None:
    message = "the MCP endpoint is not running (the app's lifespan has not started)"
    await send_json(send, 503, _rpc_error(UNAVAILABLE, message, {"code": "NOT_STARTED"}))
