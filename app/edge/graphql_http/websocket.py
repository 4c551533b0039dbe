"""The websocket at /graphql: graphql-transport-ws through Strawberry's stock view and
handler, on the schema HTTP requests use. The API key comes in connection_init's payload,
`{"authorization": "Bearer <key>"}`: a browser's WebSocket cannot send headers. A missing,
unknown or revoked key closes the socket with 4403.

Subscriptions (memoryChanged) stream through Strawberry's own path; a query or a mutation
runs as POST /graphql runs it (socket_operations.py beside this module). Each socket is
bounded (socket_limits.py): in number per process and per key, and in time, closed once it
holds no operation and sends none for JET_WEBSOCKET_IDLE_SECONDS. A client that leaves while
something is being sent to it is a normal end (one INFO line), not an error.
"""

import asyncio
import json
import logging
from contextlib import suppress
from datetime import timedelta
from typing import Any, cast

import orjson
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState
from starlette.websockets import WebSocketDisconnected as ClosedAlready
from strawberry.asgi import ASGIWebSocketAdapter, GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.http.exceptions import WebSocketDisconnected
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
    Operation,
)
from strawberry.subscriptions.protocols.graphql_transport_ws.types import Message
from strawberry.types.unset import UNSET, UnsetType

from app.deps import Container
from app.edge.graphql_http import socket_operations
from app.edge.graphql_http.socket_limits import TRY_AGAIN_LATER, OpenSockets
from app.edge.request_ids import new_request_id
from app.graphql.request_context import Context

log = logging.getLogger(__name__)

# A client that opens the socket and never says who it is holds it no longer than this.
CONNECTION_INIT_SECONDS = 10
# RFC 6455's normal closure: the socket's purpose is over (it held nothing for a while).
IDLE_CLOSE = 1000
# What does not count as activity: a client answering pings holds the socket for nothing.
_KEEPALIVE = frozenset({"ping", "pong"})


def _secret(params: Any) -> str | None:
    if not isinstance(params, dict):
        return None
    value = params.get("authorization", params.get("Authorization"))
    if isinstance(value, str) and value[:7].lower() == "bearer ":
        return value[7:].strip() or None
    return None


class SocketAdapter(ASGIWebSocketAdapter):
    """Strawberry's adapter, where a socket closed by either side is one case: a send to it
    raises WebSocketDisconnected (Strawberry's "the client left"), a close does nothing."""

    async def send_json(self, message: Any) -> None:
        try:
            await super().send_json(message)
        except ClosedAlready as exc:  # closed by this side, as the client left
            raise WebSocketDisconnected from exc

    async def close(self, code: int, reason: str) -> None:
        await _close(self.ws, code, reason)


class ConnectionHandler(BaseGraphQLTransportWSHandler[Context, None]):
    """Strawberry's graphql-transport-ws handler with queries and mutations run as on HTTP,
    the idle close, malformed messages refused (4400) rather than raised, and a client that
    leaves mid-send logged as what it is. What it overrides are the handler's own methods
    (strawberry-graphql is pinned exactly in pyproject.toml)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        assert isinstance(self.view, SubscriptionView)
        self.sockets = self.view.sockets
        self.container = self.view.container
        self.idle_seconds = self.view.idle_seconds
        self._loop = asyncio.get_running_loop()
        self._active_at = self._loop.time()
        self._idle_task: asyncio.Task[None] | None = None

    def on_request_accepted(self) -> None:
        super().on_request_accepted()
        self._idle_task = asyncio.create_task(self._close_when_idle())

    async def shutdown(self) -> None:
        try:
            if self._idle_task is not None:
                self._idle_task.cancel()
                with suppress(asyncio.CancelledError):
                    await self._idle_task
            await super().shutdown()
        finally:
            if self.context.api_key is not None:  # counted by on_ws_connect
                self.sockets.leave_key(self.context.api_key)

    async def _close_when_idle(self) -> None:
        while True:
            if self.operations:  # a subscription (or an operation) is what the socket is for
                self._active_at = self._loop.time()
            wait = self._active_at + self.idle_seconds - self._loop.time()
            if wait <= 0:
                break
            await asyncio.sleep(wait)
        log.info("websocket closed: idle for %g s", self.idle_seconds)
        await self.websocket.close(IDLE_CLOSE, f"idle for {self.idle_seconds:g} s")

    def _touch(self) -> None:
        self._active_at = self._loop.time()

    async def handle_message(self, message: Message) -> None:
        if not isinstance(message, dict):  # JSON, but not an object: Strawberry would raise
            await self.handle_invalid_message("Failed to parse message")
            return
        kind = message.get("type")
        if kind not in _KEEPALIVE:
            self._touch()
        if kind == "subscribe":
            payload = message.get("payload")
            if not isinstance(message.get("id"), str) or not isinstance(payload, dict):
                await self.handle_invalid_message(
                    "a subscribe message needs an id (a string) and a payload (an object)"
                )
                return
            # Without a query: HTTP's "No GraphQL query found", not a closed socket.
            message = cast("Message", {**message, "payload": {"query": None, **payload}})
        await super().handle_message(message)

    def forget_id(self, id: str) -> None:
        super().forget_id(id)
        self._touch()

    async def cleanup_operation(self, operation_id: str) -> None:
        await super().cleanup_operation(operation_id)
        self._touch()

    async def run_operation(self, operation: Operation[Context, None]) -> None:
        if socket_operations.is_subscription(
            operation.query, operation.operation_name, operation.variables
        ):
            await super().run_operation(operation)
            return
        payload = {
            "query": operation.query,
            "variables": operation.variables,
            "operationName": operation.operation_name,
        }
        answer = await socket_operations.run(self.schema, self.container, self.context, payload)
        try:
            if answer.result is not None:
                await operation.send_operation_message(
                    {"id": operation.id, "type": "next", "payload": answer.result}
                )
                await operation.send_operation_message({"id": operation.id, "type": "complete"})
            else:
                await operation.send_operation_message(
                    {"id": operation.id, "type": "error", "payload": answer.errors}
                )
            if answer.close is not None:
                await self.websocket.close(*answer.close)
        except WebSocketDisconnected:
            _left_mid_send()

    async def handle_task_exception(self, error: Exception) -> None:
        if isinstance(error, WebSocketDisconnected):
            _left_mid_send()
            return
        await super().handle_task_exception(error)


class SubscriptionView(GraphQL[Context, None]):
    graphql_transport_ws_handler_class = ConnectionHandler
    websocket_adapter_class = SocketAdapter

    def __init__(self, schema: Any, container: Container) -> None:
        super().__init__(
            schema,
            graphql_ide=None,
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,),
            connection_init_wait_timeout=timedelta(seconds=CONNECTION_INIT_SECONDS),
            multipart_uploads_enabled=False,
        )
        self.container = container
        settings = container.settings
        self.sockets = OpenSockets(
            per_key=settings.websockets_per_key, per_process=settings.websockets_per_process
        )
        self.idle_seconds = settings.websocket_idle_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = self.sockets.enter()
        if refusal is not None:
            await _refuse(WebSocket(scope, receive, send), refusal)
            return
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.sockets.leave()

    def encode_json(self, data: object) -> str:
        # orjson, as for HTTP answers (app/edge/graphql_http/view.py): one message per change and
        # subscriber. Text, not bytes: graphql-transport-ws messages are text frames.
        try:
            return orjson.dumps(data).decode()
        except TypeError:
            return json.dumps(data, separators=(",", ":"))

    async def get_context(self, request: Any, response: Any) -> Context:
        assert isinstance(request, WebSocket)
        return Context(
            container=self.container, db=None, request_id=new_request_id(), request=request,
            response=response,
        )  # fmt: skip

    async def on_ws_connect(self, context: Context) -> UnsetType | dict[str, object] | None:
        secret = _secret(context.connection_params)
        if secret is None:
            raise ConnectionRejectionError({"message": "send authorization: Bearer <key>"})
        tenant_id = await self.container.auth.tenant_for(secret)
        if tenant_id is None:
            raise ConnectionRejectionError({"message": "unknown or revoked API key"})
        refusal = self.sockets.enter_key(secret)
        if refusal is not None:
            log.info("websocket refused (tenant %s): %s", tenant_id, refusal)
            # Closed here with its own code and reason; Strawberry's 4403 after it finds the
            # socket closed and does nothing (SocketAdapter.close).
            await _close(context.response, TRY_AGAIN_LATER, refusal)
            raise ConnectionRejectionError({"message": refusal})
        # The key's socket is counted from here until ConnectionHandler.shutdown.
        context.tenant_id = tenant_id
        context.api_key = secret
        ack: UnsetType = UNSET
        return ack


def _left_mid_send() -> None:
    log.info("websocket closed by the client while an answer was being sent to it")


async def _close(ws: WebSocket, code: int, reason: str) -> None:
    """Close `ws` unless it is closed already (by this side, or by the client leaving)."""
    if ws.application_state is WebSocketState.DISCONNECTED:
        return
    with suppress(WebSocketDisconnect):  # the client had left: nothing to close
        await ws.close(code, reason)


async def _refuse(ws: WebSocket, reason: str) -> None:
    """Accept the socket (so the client can read why) and close it: over a bound."""
    offered = ws.scope.get("subprotocols") or []
    subprotocol = (
        GRAPHQL_TRANSPORT_WS_PROTOCOL if GRAPHQL_TRANSPORT_WS_PROTOCOL in offered else None
    )
    log.info("websocket refused: %s", reason)
    with suppress(WebSocketDisconnect):
        await ws.accept(subprotocol)
        await _close(ws, TRY_AGAIN_LATER, reason)
