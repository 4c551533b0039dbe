"""Where a request becomes a tenant: `Authorization: Bearer <key>` → the key's tenant.

Wraps an ASGI app so that it only ever runs with a verified tenant's database leased in
`scope["state"]["db"]`; a missing, unknown or revoked key is answered 401 here, before any
GraphQL or REST work. The tenant is never read from the request body or query.
"""

import logging
import random
import re
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import metrics
from app.deps import Container
from app.edge.limits import BodyTooLarge
from app.edge.ratelimit import retry_after_header
from app.edge.responses import send_json
from app.edge.unavailable import UnavailableWriter, graphql_unavailable
from app.logs import request_id_var, tenant_id_var
from app.storage.unavailable import TenantUnavailable

log = logging.getLogger(__name__)
_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def request_id_of(scope: Scope) -> str:
    """The client's X-Request-Id when it is sane, else a new one."""
    for name, value in scope.get("headers", ()):
        if name == b"x-request-id":
            text: str = value.decode("latin-1")
            if _REQUEST_ID.fullmatch(text):
                return text
    # 128 random bits as 32 hex digits (uuid4().hex's shape): ids need to be unique, not
    # secret (they are echoed and logged), and `random` (reseeded in every forked child)
    # costs no system call, where uuid4 reads os.urandom on every request.
    return f"{random.getrandbits(128):032x}"


def bearer_token(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


# How a 401, 429 or 500 looks on each surface (GraphQL `errors`, REST problem+json):
# (send, message, request id). A 429's Retry-After is added to what the writer sends.
ErrorWriter = Callable[[Send, str, str], Awaitable[None]]


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


class TenantBound:
    """ASGI wrapper: authenticate, lease the tenant's database, then call `app`."""

    def __init__(
        self,
        app: ASGIApp,
        container: Container,
        *,
        unauthorized: ErrorWriter = graphql_unauthorized,
        internal_error: ErrorWriter = graphql_internal_error,
        too_many: ErrorWriter = graphql_too_many,
        unavailable: UnavailableWriter = graphql_unavailable,
        public: Callable[[Scope], bool] = lambda _: False,
    ) -> None:
        self.app = app
        self.container = container
        self.unauthorized = unauthorized
        self.internal_error = internal_error
        self.too_many = too_many
        self.unavailable = unavailable
        self.public = public

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        request_id = state.get("request_id") or request_id_of(scope)
        state["request_id"] = request_id
        # Every log record of this request carries its id (and tenant, once known).
        request_token = request_id_var.set(request_id)
        tenant_token = tenant_id_var.set(None)
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = list(message.get("headers", []))
                if not any(name == b"x-request-id" for name, _ in headers):
                    headers.append((b"x-request-id", request_id.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self._authorised(scope, receive, send_with_id, state, request_id)
        except BodyTooLarge:
            raise  # BodyLimit, outside us, answers it
        except TenantUnavailable as exc:
            # This tenant's database is locked, corrupt or full: say so (edge/unavailable.py).
            log.log(logging.ERROR if exc.reason == "corrupt" else logging.WARNING,
                    "tenant database unavailable (%s), request %s", exc.reason, request_id,
                    extra={"request_id": request_id})  # fmt: skip
            if started:
                raise
            await self.unavailable(send_with_id, exc, request_id)
        except Exception:
            # Anything that escapes (a tenant database that cannot open, a bug) is logged
            # with the request id and answered as JSON, never as a bare 500 page.
            log.exception("unhandled error (request %s)", request_id,
                          extra={"request_id": request_id})  # fmt: skip
            if started:
                raise
            await self.internal_error(send_with_id, "Internal server error", request_id)
        finally:
            tenant_id_var.reset(tenant_token)
            request_id_var.reset(request_token)

    async def _authorised(
        self, scope: Scope, receive: Receive, send: Send, state: dict[str, Any], request_id: str
    ) -> None:
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
        tenant_id_var.set(tenant_id)
        wait = self.container.limiter.acquire(token)
        if wait > 0:
            metrics.RATE_LIMITED.labels(surface=scope.get("path", "").split("/")[1]).inc()
            limit = self.container.limiter
            message = (f"rate limit of {limit.rate:g} requests per second (burst "
                       f"{limit.burst}) for this API key exceeded; retry later")  # fmt: skip
            await self.too_many(_with_retry_after(send, wait), message, request_id)
            return
        async with self.container.tenants.lease(tenant_id) as db:
            state["db"] = db
            await self.app(scope, receive, send)


def _with_retry_after(send: Send, wait: float) -> Send:
    async def sender(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [*message.get("headers", []), (b"retry-after", retry_after_header(wait))]
            message = {**message, "headers": headers}
        await send(message)

    return sender
