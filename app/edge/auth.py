"""Where a request becomes a tenant: `Authorization: Bearer <key>` → the key's tenant.

TenantBound is the ASGI middleware of each surface's routes (app/edge/app.py: GraphQL's and
MCP's route, the REST routes' mount) so that they only ever run with a verified tenant's
database leased in `scope["state"]["db"]`; a missing, unknown or revoked key is answered 401
here, before any GraphQL, REST or MCP work. The tenant is never read from the request body
or query.
"""

import logging
import math

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import metrics
from app.deps import Container
from app.edge.answers import GRAPHQL_ANSWERS, ErrorAnswers
from app.edge.lifespan import CONTAINER
from app.edge.limits import BodyTooLarge, LimitedReceive, declared_over
from app.edge.request_ids import bind_request_id, sane_request_id
from app.edge.responses import CLIENT_CLOSED_REQUEST, UNANSWERED_STATUS, StatusNoted
from app.logs import request_id_var, tenant_id_var
from app.services.ratelimit import RateLimiter
from app.storage.unavailable import TenantUnavailable

log = logging.getLogger(__name__)

MISSING_KEY = "missing API key: send Authorization: Bearer <key>"
UNKNOWN_KEY = "invalid or revoked API key"


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


def read_headers(scope: Scope) -> tuple[bytes | None, str | None, bytes | None]:
    """(the first Authorization, the first sane X-Request-Id, the last Content-Length as
    `dict(headers)` gives it), in one pass over the request's headers."""
    authorization = content_length = None
    client_request_id: str | None = None
    for name, value in scope["headers"]:
        if name == b"authorization":
            if authorization is None:
                authorization = value
        elif name == b"x-request-id":
            if client_request_id is None:
                client_request_id = sane_request_id(value)
        elif name == b"content-length":
            content_length = value
    return authorization, client_request_id, content_length


def noting_sender(send: Send, request_id: str) -> StatusNoted:
    """The request's one `send` wrapper: it notes whether a response started and adds the
    request id to the response."""
    sender = StatusNoted(send, 0)
    sender.request_id = request_id.encode()
    return sender


class TenantBound:
    """ASGI middleware that gives `app` a verified tenant's database, with the Container of
    the lifespan state (`scope["state"]["container"]`). Its steps, in order:

    1. request id: bound to the request (scope state, log context, the answer's header);
    2. body limit, with `limit` (app/edge/limits.py): a streamed body is counted as it is
       received; a declared Content-Length over it is refused before the key is read with
       `limit_first` (GraphQL's order), else once the key is verified (REST's: a request
       without a valid key is a 401 whatever its size);
    3. API key → tenant: 401 for a missing, unknown or revoked key;
    4. rate limit: 429 with Retry-After once the key's requests per second are spent;
    5. lease: the tenant's database in `scope["state"]["db"]` while `app` runs;
    6. error answers: every refusal, and what escapes before a response started, answered
       in the surface's shape (`answers`). A body found over the limit while the app reads
       it is a 413 unless a response has started (then the app's response stands). A client
       that closes the connection before its body has arrived gets no answer, nobody being
       left to read it: one INFO line (no traceback: not an error of ours) and the metrics'
       CLIENT_CLOSED_REQUEST (499). Nothing was parsed, so nothing was stored.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        answers: ErrorAnswers = GRAPHQL_ANSWERS,
        limit: int | None = None,
        limit_first: bool = False,
    ) -> None:
        self.app = app
        self.answers = answers
        self.limit = limit
        # The limit a declared Content-Length is held to before / after the key is read.
        self.limit_before_key = limit if limit_first else None
        self.limit_after_key = None if limit_first else limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        authorization, client_request_id, content_length = read_headers(scope)
        # 1. request id
        request_id = bind_request_id(scope, client_request_id)
        # Every log record of this request carries its id (and tenant, once known).
        request_token = request_id_var.set(request_id)
        tenant_token = tenant_id_var.set(None)
        sender = noting_sender(send, request_id)
        if self.limit is not None:
            receive = LimitedReceive(receive, self.limit)
        try:
            # 2. body limit, before the key (GraphQL's order)
            limit = self.limit_before_key
            if limit is not None and declared_over(content_length, limit):
                await self.answers.too_large(scope, sender, limit)
                return
            # 3. API key -> tenant
            container: Container = scope["state"][CONTAINER]
            token = _bearer(authorization)
            auth = container.auth
            # A key verified within the cache's ttl costs no coroutine (tenant_for's own
            # first step); anything else is verified by tenant_for.
            tenant_id = (
                None if token is None else auth.cached(token) or await auth.tenant_for(token)
            )
            if token is None or tenant_id is None:
                await self.answers.unauthorized(
                    scope, sender, MISSING_KEY if token is None else UNKNOWN_KEY, request_id
                )
                return
            scope["state"]["tenant_id"] = tenant_id
            tenant_id_var.set(tenant_id)
            # 4. rate limit
            limiter = container.limiter
            if limiter.enabled:
                wait = limiter.acquire(token)
                if wait > 0:
                    await self._too_many(scope, sender, limiter, wait, request_id)
                    return
            # 2'. body limit, once the key is known (REST's order)
            limit = self.limit_after_key
            if limit is not None and declared_over(content_length, limit):
                await self.answers.too_large(scope, sender, limit)
                return
            # 5. lease
            async with container.tenants.lease(tenant_id) as db:
                scope["state"]["db"] = db
                await self.app(scope, receive, sender)
        except Exception as exc:  # 6. error answers
            if not await self._answer_failure(exc, scope, receive, sender, content_length):
                raise
        finally:
            tenant_id_var.reset(tenant_token)
            request_id_var.reset(request_token)

    async def _too_many(
        self, scope: Scope, send: Send, limit: RateLimiter, wait: float, request_id: str
    ) -> None:
        metrics.RATE_LIMITED.labels(surface=scope.get("path", "").split("/")[1]).inc()
        message = (
            f"rate limit of {limit.rate:g} requests per second (burst "
            f"{limit.burst}) for this API key exceeded; retry later"
        )
        await self.answers.too_many(scope, _with_retry_after(send, wait), message, request_id)

    async def _answer_failure(
        self,
        exc: Exception,
        scope: Scope,
        receive: Receive,
        sender: StatusNoted,
        content_length: bytes | None,
    ) -> bool:
        """Answer what escaped a step or the app; False when it must propagate instead (a
        response had started: only the server can end it)."""
        request_id: str = scope["state"]["request_id"]
        if isinstance(exc, BodyTooLarge):
            assert self.limit is not None  # LimitedReceive raised it
            if not sender.started:  # else the app's response stands
                await self.answers.too_large(scope, sender, self.limit)
            return True
        if isinstance(exc, ClientDisconnect):
            _client_left(scope, receive, content_length, request_id)
            return True
        if isinstance(exc, TenantUnavailable):
            # This tenant's database is locked, corrupt or full: say so (edge/unavailable.py).
            log.log(
                logging.ERROR if exc.reason == "corrupt" else logging.WARNING,
                "tenant database unavailable (%s), request %s",
                exc.reason,
                request_id,
                extra={"request_id": request_id},
            )
            if sender.started:
                return False
            await self.answers.unavailable(scope, sender, exc, request_id)
            return True
        # Anything else (a tenant database that cannot open, a bug) is logged with the
        # request id and answered as JSON, never as a bare 500 page.
        log.error(
            "unhandled error (request %s)",
            request_id,
            exc_info=exc,
            extra={"request_id": request_id},
        )
        if sender.started:
            return False
        await self.answers.internal_error(scope, sender, "Internal server error", request_id)
        return True


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
        scope["method"],
        getattr(scope.get("route"), "path", "?"),
        receive.seen if isinstance(receive, LimitedReceive) else "?",
        declared,
        request_id,
        state.get("tenant_id"),
    )


def _with_retry_after(send: Send, wait: float) -> Send:
    async def sender(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [*message.get("headers", []), (b"retry-after", retry_after_header(wait))]
            message = {**message, "headers": headers}
        await send(message)

    return sender


def retry_after_header(wait: float) -> bytes:
    """Retry-After is whole seconds (RFC 9110): round up, at least 1."""
    return str(max(1, math.ceil(wait))).encode()


async def requester(scope: Scope, container: Container) -> str:
    """The id of the API key that made this request (TenantBound verified it): who changed
    an entry or asked for an erasure."""
    token = bearer_token(scope)
    return "revoked-key" if token is None else await key_requester(container, token)


async def key_requester(container: Container, token: str) -> str:
    """The id of API key `token` (a request's, or a websocket's from its connection_init)."""
    key_id = await container.auth.key_id_for(token)
    # Revoked between TenantBound's check and now: still the key that asked.
    return key_id or "revoked-key"
