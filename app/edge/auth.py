"""Where a request becomes a tenant: `Authorization: Bearer <key>` → the key's tenant.

Wraps an ASGI app so that it only ever runs with a verified tenant's database leased in
`scope["state"]["db"]`; a missing, unknown or revoked key is answered 401 here, before any
GraphQL or REST work. The tenant is never read from the request body or query.
"""

import json
import re
import uuid
from collections.abc import Awaitable, Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from app.deps import Container

_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def request_id_of(scope: Scope) -> str:
    """The client's X-Request-Id when it is sane, else a new one."""
    for name, value in scope.get("headers", ()):
        if name == b"x-request-id":
            text = value.decode("latin-1")
            if _REQUEST_ID.fullmatch(text):
                return text
    return uuid.uuid4().hex


def bearer_token(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


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


# How a 401 looks on each surface: GraphQL clients expect `errors`, REST problem+json.
Unauthorized = Callable[[Send, str, str], Awaitable[None]]


async def graphql_unauthorized(send: Send, message: str, request_id: str) -> None:
    await send_json(
        send,
        401,
        {"errors": [{"message": message, "extensions": {"code": "UNAUTHENTICATED"}}]},
        headers=[(b"www-authenticate", b"Bearer"), (b"x-request-id", request_id.encode())],
    )


class TenantBound:
    """ASGI wrapper: authenticate, lease the tenant's database, then call `app`."""

    def __init__(
        self,
        app: ASGIApp,
        container: Container,
        *,
        unauthorized: Unauthorized = graphql_unauthorized,
        public: Callable[[Scope], bool] = lambda _: False,
    ) -> None:
        self.app = app
        self.container = container
        self.unauthorized = unauthorized
        self.public = public

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        request_id = state.get("request_id") or request_id_of(scope)
        state["request_id"] = request_id
        if self.public(scope):
            await self.app(scope, receive, send)
            return
        token = bearer_token(scope)
        if token is None:
            msg = "missing API key: send Authorization: Bearer <key>"
            await self.unauthorized(send, msg, request_id)
            return
        tenant_id = await self.container.auth.tenant_for(token)
        if tenant_id is None:
            await self.unauthorized(send, "invalid or revoked API key", request_id)
            return
        state["tenant_id"] = tenant_id
        async with self.container.tenants.lease(tenant_id) as db:
            state["db"] = db
            await self.app(scope, receive, send)
