"""The websocket at /graphql: GraphQL subscriptions (memoryChanged) over graphql-transport-ws,
through Strawberry's stock view, on the schema HTTP requests use. The API key comes
in connection_init's payload, `{"authorization": "Bearer <key>"}`: a browser's WebSocket
cannot send headers. A missing, unknown or revoked key closes the socket with 4403."""

import json
from datetime import timedelta
from typing import Any

import orjson
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.types.unset import UNSET, UnsetType

from app.deps import Container
from app.edge.request_ids import new_request_id
from app.graphql.context import Context

# A client that opens the socket and never says who it is holds it no longer than this.
CONNECTION_INIT_SECONDS = 10


def _secret(params: Any) -> str | None:
    if not isinstance(params, dict):
        return None
    value = params.get("authorization", params.get("Authorization"))
    if isinstance(value, str) and value[:7].lower() == "bearer ":
        return value[7:].strip() or None
    return None


class SubscriptionView(GraphQL[Context, None]):
    def __init__(self, schema: Any, container: Container) -> None:
        super().__init__(
            schema,
            graphql_ide=None,
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,),
            connection_init_wait_timeout=timedelta(seconds=CONNECTION_INIT_SECONDS),
            multipart_uploads_enabled=False,
        )
        self.container = container

    def encode_json(self, data: object) -> str:
        # orjson, as for HTTP answers (app/edge/graphql_view.py): one message per change and
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
        context.tenant_id = tenant_id
        context.api_key = secret
        ack: UnsetType = UNSET
        return ack
