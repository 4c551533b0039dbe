"""Where a request becomes a tenant: `Authorization: Bearer <key>` → the key's tenant.

Wraps an ASGI app so that it only ever runs with a verified tenant's database leased in
`scope["state"]["db"]`; a missing, unknown or revoked key is answered 401 here, before any
GraphQL or REST work. The tenant is never read from the request body or query.
"""

import logging
import random
import re
from collections.abc import Awaitable, Callable

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import metrics
from app.deps import Container
from app.edge.limits import (
    BodyTooLarge,
    LimitedReceive,
    TooLargeWriter,
    declared_over,
    graphql_too_large,
)
from app.edge.ratelimit import retry_after_header
from app.edge.responses import CLIENT_CLOSED_REQUEST, UNANSWERED_STATUS, StatusNoted, send_json
from app.edge.unavailable import UnavailableWriter, graphql_unavailable
from app.logs import request_id_var, tenant_id_var
from app.storage.unavailable import TenantUnavailable

log = logging.getLogger(__name__)
_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def request_id_of(scope: Scope) -> str:
    """The client's X-Request-Id when it is sane (the first such header), else a new one."""
    for name, value in scope.get("headers", ()):
        if name == b"x-request-id":
            text = _sane_request_id(value)
            if text is not None:
                return text
    return new_request_id()


def current_request_id(scope: Scope) -> str:
    """The id TenantBound gave this request, else request_id_of(scope) (an answer made
    before or without TenantBound)."""
    return scope.get("state", {}).get("request_id") or request_id_of(scope)


def _sane_request_id(value: bytes) -> str | None:
    text = value.decode("latin-1")
    return text if _REQUEST_ID.fullmatch(text) else None


def new_request_id() -> str:
    # 128 random bits as 32 hex digits (uuid4().hex's shape): ids need to be unique, not
    # secret (they are echoed and logged), and `random` (reseeded in every forked child)
    # costs no system call, where uuid4 reads os.urandom on every request.
    # The bytes' hex is f"{n:032x}" (leading zeros kept), at ~0.12 us instead of ~0.3.
    return random.getrandbits(128).to_bytes(16, "big").hex()


def bearer_token(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            return _bearer(value)
    return None


def _bearer(authorization: bytes | None) -> str | None:
    """The key of the first Authorization header, when its scheme is Bearer."""
    if authorization is None:
        return None
    scheme, _, token = authorization.decode("latin-1").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


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
    """ASGI wrapper: authenticate, lease the tenant's database, then call `app`.

    With `limit`, it is also the request body limit (app/edge/limits.py), in the same frame
    rather than as a BodyLimit wrapper around or inside it (one coroutine, one `send` and
    one `receive` wrapper fewer per request): `limit_first` answers an over-limit declared
    Content-Length with 413 before the key is read (GraphQL's order; a body found over the
    limit while streaming is answered once the tenant is released), otherwise after
    authentication, within the lease (REST's order). Either way every 413 carries the
    request id, and a body over the limit that is only found while the app reads it is a
    413 unless a response has started (then the app's response stands).

    A client that closes the connection before its body has arrived (the app's read
    raises Starlette's ClientDisconnect) gets no answer, nobody being left to read it: it
    is logged in one INFO line (no traceback: not an error of ours) and counted as
    CLIENT_CLOSED_REQUEST (499). Nothing was parsed, so nothing was stored.
    """

    def __init__(
        self,
        app: ASGIApp,
        container: Container,
        *,
        unauthorized: ErrorWriter = graphql_unauthorized,
        internal_error: ErrorWriter = graphql_internal_error,
        too_many: ErrorWriter = graphql_too_many,
        unavailable: UnavailableWriter = graphql_unavailable,
        limit: int | None = None,
        too_large: TooLargeWriter = graphql_too_large,
        limit_first: bool = False,
    ) -> None:
        self.app = app
        self.container = container
        self.unauthorized = unauthorized
        self.internal_error = internal_error
        self.too_many = too_many
        self.unavailable = unavailable
        self.limit = limit
        self.too_large = too_large
        self.limit_first = limit_first
        # The limit a declared Content-Length is held to before the key is read, if any.
        self.first_limit = limit if limit_first else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # One pass over the headers for what request_id_of and bearer_token take (the
        # first sane x-request-id, the first authorization) and the limit (the last
        # content-length, as `dict(headers)` gives it): ~0.6 us less than three passes.
        authorization = content_length = None
        client_request_id: str | None = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                if authorization is None:
                    authorization = value
            elif name == b"x-request-id":
                if client_request_id is None:
                    client_request_id = _sane_request_id(value)
            elif name == b"content-length":
                content_length = value
        limit = self.limit
        if limit is not None:
            receive = LimitedReceive(receive, limit)
        state = scope.setdefault("state", {})
        request_id = state.get("request_id") or client_request_id or new_request_id()
        state["request_id"] = request_id
        # Every log record of this request carries its id (and tenant, once known).
        request_token = request_id_var.set(request_id)
        tenant_token = tenant_id_var.set(None)
        # Edge's direct way hands us its own StatusNoted: it adds the request id too, rather
        # than a second wrapper around it.
        if type(send) is StatusNoted and send.request_id is None and not send.started:
            sender = send
        else:
            sender = StatusNoted(send, 0)
        sender.request_id = request_id.encode()
        try:
            first_limit = self.first_limit
            if first_limit is not None and declared_over(content_length, first_limit):
                await self.too_large(scope, sender, first_limit)
                return
            token = _bearer(authorization)
            if token is None:
                msg = "missing API key: send Authorization: Bearer <key>"
                await self.unauthorized(sender, msg, request_id)
                return
            auth = self.container.auth
            # A key verified within the cache's ttl without a coroutine (tenant_for's own
            # first step); anything else goes to tenant_for.
            tenant_id = auth.cached(token)
            if tenant_id is None:
                tenant_id = await auth.tenant_for(token)
                if tenant_id is None:
                    await self.unauthorized(sender, "invalid or revoked API key", request_id)
                    return
            state["tenant_id"] = tenant_id
            tenant_id_var.set(tenant_id)
            limiter = self.container.limiter
            if limiter.enabled:
                wait = limiter.acquire(token)
                if wait > 0:
                    await self._too_many(scope, sender, token, wait, request_id)
                    return
            async with self.container.tenants.lease(tenant_id) as db:
                state["db"] = db
                if limit is None or self.limit_first:
                    await self.app(scope, receive, sender)
                elif declared_over(content_length, limit):
                    await self.too_large(scope, sender, limit)
                else:
                    try:
                        await self.app(scope, receive, sender)
                    except BodyTooLarge:
                        if not sender.started:
                            await self.too_large(scope, sender, limit)
        except BodyTooLarge:
            # limit_first: answered once the tenant is released; after a response started,
            # the app's response stands.
            assert limit is not None  # LimitedReceive raised it
            if not sender.started:
                await self.too_large(scope, sender, limit)
        except ClientDisconnect:
            _client_left(scope, receive, content_length, request_id)
        except TenantUnavailable as exc:
            # This tenant's database is locked, corrupt or full: say so (edge/unavailable.py).
            log.log(logging.ERROR if exc.reason == "corrupt" else logging.WARNING,
                    "tenant database unavailable (%s), request %s", exc.reason, request_id,
                    extra={"request_id": request_id})  # fmt: skip
            if sender.started:
                raise
            await self.unavailable(sender, exc, request_id)
        except Exception:
            # Anything that escapes (a tenant database that cannot open, a bug) is logged
            # with the request id and answered as JSON, never as a bare 500 page.
            log.exception("unhandled error (request %s)", request_id,
                          extra={"request_id": request_id})  # fmt: skip
            if sender.started:
                raise
            await self.internal_error(sender, "Internal server error", request_id)
        finally:
            if sender is send:
                sender.request_id = None  # Edge's: anything it sends after us is its own
            tenant_id_var.reset(tenant_token)
            request_id_var.reset(request_token)

    async def _too_many(
        self, scope: Scope, send: Send, token: str, wait: float, request_id: str
    ) -> None:
        metrics.RATE_LIMITED.labels(surface=scope.get("path", "").split("/")[1]).inc()
        limit = self.container.limiter
        message = (f"rate limit of {limit.rate:g} requests per second (burst "
                   f"{limit.burst}) for this API key exceeded; retry later")  # fmt: skip
        await self.too_many(_with_retry_after(send, wait), message, request_id)


def _client_left(
    scope: Scope, receive: Receive, content_length: bytes | None, request_id: str
) -> None:
    """Log (one line) and note for the metrics a client that left before its body arrived."""
    state = scope["state"]
    state[UNANSWERED_STATUS] = CLIENT_CLOSED_REQUEST
    declared = content_length.decode() if content_length and content_length.isdigit() else "?"
    log.info(
        "client disconnected before the body was read: %s %s, %s of %s bytes read "
        "(request %s, tenant %s)",
        scope["method"], getattr(scope.get("route"), "path", "?"),
        receive.seen if isinstance(receive, LimitedReceive) else "?", declared,
        request_id, state.get("tenant_id"),
    )  # fmt: skip


def _with_retry_after(send: Send, wait: float) -> Send:
    async def sender(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [*message.get("headers", []), (b"retry-after", retry_after_header(wait))]
            message = {**message, "headers": headers}
        await send(message)

    return sender
