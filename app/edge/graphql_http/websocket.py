"""The websocket at /graphql: graphql-transport-ws through Strawberry's stock view and
handler, on the schema HTTP requests use. The API key comes in connection_init's payload,
`{"authorization": "Bearer <key>"}`: a browser's WebSocket cannot send headers. A missing,
unknown or revoked key closes the socket with 4403. A client that leaves while something is
being sent to it is a normal end (one INFO line), not an error.

Subscriptions (memoryChanged) stream through Strawberry's own path. A query or a mutation
runs as POST /graphql runs it: Strawberry's handler runs every operation with the socket's
one context, which has no tenant database (a subscription leases one per page it reads),
so each query or mutation gets its own here, with TenantBound's steps (app/edge/auth.py) in
its order: a request id, the key verified again (a key revoked since connection_init stops
working as it does on HTTP, and closes the socket), the key's rate limit, the tenant's
database leased for the operation; then the schema's own execution (the fast path or the
stock one, with the same token, depth, alias and cost bounds) and the same errors, codes
and request id (view.py). A request error (parse, validation, variables, a refusal) is the
protocol's `error` message; an executed operation is one `next`.

Each socket is bounded, per API process: how many are open in all
(JET_WEBSOCKETS_PER_PROCESS, checked as one opens) and per API key (JET_WEBSOCKETS_PER_KEY,
checked at connection_init, once the key is known); one over a bound is closed with 1013
("try again later", which graphql-ws clients retry with backoff) and a reason naming it.
A socket that holds no operation and sends none for JET_WEBSOCKET_IDLE_SECONDS is closed.
uvicorn's `limit_concurrency` would count HTTP requests and websockets together and answer
every one over it with a 503, whoever sent it: a count of sockets alone, and per key, is
kept here instead.
"""

import asyncio
import hashlib
import json
import logging
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, cast

import orjson
from cross_web import HTTPException
from graphql import GraphQLFormattedError
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState
from starlette.websockets import WebSocketDisconnected as ClosedAlready
from strawberry.asgi import ASGIWebSocketAdapter, GraphQL
from strawberry.exceptions import ConnectionRejectionError, MissingQueryError
from strawberry.http.exceptions import WebSocketDisconnected
from strawberry.schema import BaseSchema
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
    Operation,
)
from strawberry.subscriptions.protocols.graphql_transport_ws.types import (
    Message,
    NextMessagePayload,
)
from strawberry.types.graphql import OperationType
from strawberry.types.unset import UNSET, UnsetType

from app import metrics
from app.config import Settings
from app.deps import Container
from app.edge.answers import STATUS_CODES
from app.edge.auth import UNKNOWN_KEY, key_requester, retry_after_header
from app.edge.graphql_http.request import request_data
from app.edge.graphql_http.view import coded_errors, is_request_error
from app.edge.lifespan import container_of
from app.edge.observe import operation_type
from app.edge.request_ids import new_request_id
from app.edge.unavailable import graphql_extensions
from app.graphql.request_context import Context
from app.logs import request_id_var, tenant_id_var
from app.storage.unavailable import TenantUnavailable

# RFC 6455's registry: the server is overloaded, or the client over its share; retry later.
TRY_AGAIN_LATER = 1013


class OpenSockets:
    """This process's open websockets, in all and per API key (held as a digest, never as
    the key itself). The check and the count are one step with no await between them, so
    sockets opening at once never pass a bound together."""

    def __init__(self, *, per_key: int, per_process: int) -> None:
        self.per_key = per_key
        self.per_process = per_process
        self.open = 0
        self._keys: dict[bytes, int] = {}

    def enter(self) -> str | None:
        """Count one more open socket; the reason to close it instead when over the bound."""
        if self.open >= self.per_process:
            return f"this server holds at most {self.per_process} open websockets; retry later"
        self.open += 1
        return None

    def leave(self) -> None:
        self.open -= 1

    def enter_key(self, key: str) -> str | None:
        """Count one more socket for `key`; the reason to close it instead when over."""
        slot = _slot(key)
        held = self._keys.get(slot, 0)
        if held >= self.per_key:
            return f"an API key holds at most {self.per_key} open websockets per server"
        self._keys[slot] = held + 1
        return None

    def leave_key(self, key: str) -> None:
        slot = _slot(key)
        held = self._keys[slot] - 1
        if held:
            self._keys[slot] = held
        else:
            del self._keys[slot]

    def held_by(self, key: str) -> int:
        """The sockets `key` holds open now."""
        return self._keys.get(_slot(key), 0)


def _slot(key: str) -> bytes:
    return hashlib.blake2b(key.encode(), digest_size=16).digest()


log = logging.getLogger(__name__)

# What a POST may run; a subscription goes to Strawberry's own streaming path.
SINGLE_RESULT = frozenset({OperationType.QUERY, OperationType.MUTATION})
# graphql-transport-ws's close code for a connection whose key is no good.
FORBIDDEN = 4403
UNTOLD_SUBSCRIPTION = (
    "this subscription could not be told from its document: name it in operationName"
)


@dataclass(slots=True)
class Answer:
    """What to send for one operation: `errors` (an `error` message: refused or invalid
    before it ran) or `result` (a `next` message, then `complete`); `close`: then close
    the socket with this code and reason (the key was revoked)."""

    errors: list[GraphQLFormattedError] = field(default_factory=list)
    result: NextMessagePayload | None = None
    close: tuple[int, str] | None = None


def is_subscription(query: object, operation_name: object, variables: object) -> bool:
    """Whether an operation is a well-formed subscription, for Strawberry's streaming path;
    anything else (a query, a mutation, a malformed payload) is `run`'s."""
    # The substring test first, as the HTTP view does: a C scan, a query pays nothing more.
    return (
        isinstance(query, str)
        and (operation_name is None or isinstance(operation_name, str))
        and (variables is None or isinstance(variables, dict))
        and "subscription" in query
        and operation_type(query, operation_name) == "subscription"
    )


def _refusal(
    message: str, code: str, request_id: str, **extensions: Any
) -> list[GraphQLFormattedError]:
    return [
        {"message": message, "extensions": {"code": code, "requestId": request_id, **extensions}}
    ]


async def run(
    schema: BaseSchema, container: Container, connection: Context, payload: dict[str, Any]
) -> Answer:
    """One query or mutation of the socket whose context is `connection` (its tenant and key
    authenticated at connection_init), from its subscribe message's `payload`."""
    request_id = new_request_id()
    # Every log record of the operation carries its id (and tenant, once known).
    request_token = request_id_var.set(request_id)
    tenant_token = tenant_id_var.set(None)
    try:
        return await _run(schema, container, connection, payload, request_id)
    except TenantUnavailable as exc:
        log.log(
            logging.ERROR if exc.reason == "corrupt" else logging.WARNING,
            "tenant database unavailable (%s), request %s",
            exc.reason,
            request_id,
            extra={"request_id": request_id},
        )
        return Answer([{"message": exc.message, "extensions": graphql_extensions(exc, request_id)}])
    except Exception as exc:
        log.error(
            "unhandled error (request %s)",
            request_id,
            exc_info=exc,
            extra={"request_id": request_id},
        )
        return Answer(_refusal("Internal server error", STATUS_CODES[500], request_id))
    finally:
        tenant_id_var.reset(tenant_token)
        request_id_var.reset(request_token)


async def _run(
    schema: BaseSchema,
    container: Container,
    connection: Context,
    payload: dict[str, Any],
    request_id: str,
) -> Answer:
    key = connection.api_key
    assert key is not None  # on_ws_connect authenticated the socket
    auth = container.auth
    tenant_id = auth.cached(key) or await auth.tenant_for(key)
    if tenant_id is None:
        return Answer(
            _refusal(UNKNOWN_KEY, STATUS_CODES[401], request_id), close=(FORBIDDEN, UNKNOWN_KEY)
        )
    tenant_id_var.set(tenant_id)
    limiter = container.limiter
    if limiter.enabled:
        wait = limiter.acquire(key)
        if wait > 0:
            metrics.RATE_LIMITED.labels(surface="graphql").inc()
            message = (
                f"rate limit of {limiter.rate:g} requests per second (burst "
                f"{limiter.burst}) for this API key exceeded; retry later"
            )
            retry_after = int(retry_after_header(wait))  # whole seconds, as HTTP's Retry-After
            return Answer(_refusal(message, STATUS_CODES[429], request_id, retryAfter=retry_after))
    try:
        data = request_data(payload)  # each field's JSON type, as for a POST body
    except HTTPException as exc:
        return Answer(_refusal(exc.reason, STATUS_CODES[400], request_id))
    async with container.tenants.lease(tenant_id) as db:
        context = Context(
            container=container,
            db=db,
            request_id=request_id,
            request=connection.request,
            actor=lambda: key_requester(container, key),
            connection_params=connection.connection_params,
            tenant_id=tenant_id,
            api_key=key,
        )
        try:
            result = await schema.execute(
                data.query,
                variable_values=data.variables,
                context_value=context,
                operation_name=data.operation_name,
                allowed_operation_types=SINGLE_RESULT,
                operation_extensions=data.extensions,
            )
        except CannotGetOperationTypeError as exc:
            return Answer(_refusal(exc.as_http_error_reason(), STATUS_CODES[400], request_id))
        except InvalidOperationTypeError:
            # A subscription `is_subscription` could not tell from its tokens.
            return Answer(_refusal(UNTOLD_SUBSCRIPTION, STATUS_CODES[400], request_id))
        except MissingQueryError:
            return Answer(
                _refusal("No GraphQL query found in the request", STATUS_CODES[400], request_id)
            )
    if result.errors:
        result.errors = coded_errors(result.errors, request_id)
    if is_request_error(result):
        return Answer([error.formatted for error in result.errors or []])
    # The `next` payload as Strawberry's handler makes it for a subscription's result.
    answer: NextMessagePayload = {"data": result.data}
    if result.errors:
        answer["errors"] = [error.formatted for error in result.errors]
    if result.extensions:
        answer["extensions"] = result.extensions
    return Answer(result=answer)


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
        if is_subscription(operation.query, operation.operation_name, operation.variables):
            await super().run_operation(operation)
            return
        payload = {
            "query": operation.query,
            "variables": operation.variables,
            "operationName": operation.operation_name,
        }
        container = container_of(self.context.request.scope)
        answer = await run(self.schema, container, self.context, payload)
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

    """The websocket at /graphql, one per app: each connection's Container is the lifespan
    state's (app/edge/lifespan.py)."""

    def __init__(self, schema: Any, settings: Settings) -> None:
        super().__init__(
            schema,
            graphql_ide=None,
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,),
            connection_init_wait_timeout=timedelta(seconds=CONNECTION_INIT_SECONDS),
            multipart_uploads_enabled=False,
        )
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
            container=container_of(request.scope),
            db=None,
            request_id=new_request_id(),
            request=request,
            response=response,
        )

    async def on_ws_connect(self, context: Context) -> UnsetType | dict[str, object] | None:
        secret = _secret(context.connection_params)
        if secret is None:
            raise ConnectionRejectionError({"message": "send authorization: Bearer <key>"})
        tenant_id = await container_of(context.request.scope).auth.tenant_for(secret)
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
