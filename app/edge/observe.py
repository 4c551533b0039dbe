"""The edge's own operations routes and HTTP metrics: /readyz, /metrics, and the ASGI
middleware that counts and times every request by route template (and GraphQL operation).

It only observes: it never changes a request or a response, and never labels by tenant.
"""

import asyncio
import hmac
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from graphql import GraphQLSyntaxError, Source, TokenKind
from graphql.language.lexer import Lexer
from prometheus_client import CONTENT_TYPE_LATEST
from sqlalchemy import text
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from app import metrics
from app.deps import Container
from app.edge.auth import bearer_token
from app.edge.lifespan import container_of
from app.edge.responses import CLIENT_CLOSED_REQUEST, StatusNoted, unanswered_status

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 2.0
_METHODS = {"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"}
# Where the GraphQL layer leaves (operation name, type) for HttpMetrics; for a batch, the
# list of each operation's, in BATCH_STATE_KEY.
OPERATION_STATE_KEY = "graphql_operation"
BATCH_STATE_KEY = "graphql_batch"
# A /graphql request with these statuses is no GraphQL operation: refused before one ran
# (401, 429), or none received (the client left before its body arrived).
_NO_OPERATION = frozenset({401, 429, CLIENT_CLOSED_REQUEST})


# ---------------------------------------------------------------------------- /readyz


async def _check_control(container: Container) -> None:
    async with container.control.engine.connect() as conn:
        await conn.execute(text("SELECT 1"))


async def _check_redis(url: str) -> None:
    from redis.asyncio import Redis

    client = Redis.from_url(
        url, socket_timeout=READY_TIMEOUT_S, socket_connect_timeout=READY_TIMEOUT_S
    )
    try:
        await client.ping()
    finally:
        await client.aclose()


async def readyz(request: Request) -> Response:
    """200 when the control database (and Redis, when JET_REDIS_URL is set) answers."""
    container = container_of(request.scope)
    checks: dict[str, Awaitable[None]] = {"control_db": _check_control(container)}
    if container.settings.redis_url:
        checks["redis"] = _check_redis(container.settings.redis_url)
    results: dict[str, str] = {}
    for name, check in checks.items():
        try:
            await asyncio.wait_for(check, READY_TIMEOUT_S)
            results[name] = "ok"
        except Exception as exc:  # what failed is the answer; the URL is never in it
            log.warning("readiness check %s failed: %s", name, type(exc).__name__)
            results[name] = f"failed: {type(exc).__name__}"
    ready = all(v == "ok" for v in results.values())
    body = {"status": "ready" if ready else "not ready", "checks": results}
    return JSONResponse(body, status_code=200 if ready else 503)


# ---------------------------------------------------------------------------- /metrics


def metrics_endpoint(token: str | None) -> Callable[[Request], Awaitable[Response]]:
    """The Prometheus metrics (of every API process with serve --workers); with `token`,
    only for `Bearer <token>`."""

    async def endpoint(request: Request) -> Response:
        if token is not None:
            given = bearer_token(request.scope) or ""
            if not hmac.compare_digest(given.encode(), token.encode()):
                return JSONResponse(
                    {"error": "metrics need Authorization: Bearer <JET_METRICS_TOKEN>"},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
        return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    return endpoint


# ------------------------------------------------------------------------- middleware


def operation_type(query: str, operation_name: str | None) -> str:
    """query/mutation/subscription of the operation a request runs, or "unknown".

    Reads tokens only up to that operation's keyword: no parse, no validation. For the
    metrics of a document that does not parse (a parsed one's type is known).
    """
    try:
        lexer = Lexer(Source(query))
        depth, prev = 0, ""
        token = lexer.advance()
        while token.kind is not TokenKind.EOF:
            if token.kind is TokenKind.BRACE_L:
                if depth == 0 and not prev and operation_name is None:
                    return "query"  # the `{ … }` shorthand
                depth += 1
            elif token.kind is TokenKind.BRACE_R:
                depth -= 1
            elif depth == 0 and token.kind is TokenKind.NAME:
                if prev in ("query", "mutation", "subscription") and (
                    operation_name is None or token.value == operation_name
                ):
                    return str(prev)
                if token.value in ("query", "mutation", "subscription") and operation_name is None:
                    nxt = lexer.lookahead()
                    if nxt.kind is not TokenKind.NAME:
                        return str(token.value)
            if depth == 0 and token.kind is TokenKind.NAME:
                prev = str(token.value)
            elif depth == 0 and token.kind is TokenKind.BRACE_R:
                prev = ""
            token = lexer.advance()
    except GraphQLSyntaxError:
        pass
    return "unknown"


class _Series:
    """One label set of a counter and a histogram recorded together (a request's count and
    its time): the labelled children, looked up once."""

    __slots__ = ("_count", "_latency")

    def __init__(self, count: Any, latency: Any) -> None:
        self._count = count
        self._latency = latency

    def record(self, elapsed: float) -> None:
        self._count.inc()
        self._latency.observe(elapsed)


class HttpMetrics:
    """Counts and times every HTTP request by route template, method and status.

    A GraphQL request is also counted by operation name and type, as the GraphQL layer
    recorded them in the scope's state when it ran the operation (app/graphql/
    extensions.py, or the view for a body it refused): the body is never read here.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        # The labelled children of each metric, looked up once per label set rather than
        # through `labels()` (validation and a lock) on every request. Bounded like the
        # label sets themselves (route templates, methods, statuses, operation labels).
        self._http: dict[tuple[str, str, int], _Series] = {}
        self._graphql: dict[tuple[str, str, int], _Series] = {}

    @staticmethod
    def _series(
        cache: dict[tuple[str, str, int], _Series],
        counter: Any,
        latency: Any,
        first: str,
        second: str,
        status: int,
    ) -> _Series:
        """`counter`'s child for (first, second, status) and `latency`'s for (first,
        second), from `cache` after the first time."""
        key = (first, second, status)
        found = cache.get(key)
        if found is None:
            found = cache[key] = _Series(
                counter.labels(first, second, str(status)), latency.labels(first, second)
            )
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        noted = StatusNoted(send, 0)  # 0: none sent yet
        started = time.perf_counter()
        try:
            await self.app(scope, receive, noted)
        finally:
            status = noted.status or unanswered_status(scope)
            self.record(scope, status, time.perf_counter() - started)

    def record(self, scope: Scope, status: int, elapsed: float) -> None:
        """Count and time one answered HTTP request (`scope` after routing)."""
        route = getattr(scope.get("route"), "path", None) or "unmatched"
        method = scope["method"]
        if method not in _METHODS:
            method = "other"
        self._series(
            self._http, metrics.HTTP_REQUESTS, metrics.HTTP_LATENCY, route, method, status
        ).record(elapsed)
        if (
            scope["path"] == "/graphql"
            and status not in _NO_OPERATION
            and (method == "POST" or b"query=" in scope.get("query_string", b""))
        ):
            # Not recorded: refused before any operation ran (no JSON, no query).
            state = scope.get("state", {})
            operations = state.get(BATCH_STATE_KEY) or (
                state.get(OPERATION_STATE_KEY, (None, "unknown")),
            )
            for name, kind in operations:
                self._series(
                    self._graphql,
                    metrics.GRAPHQL_OPERATIONS,
                    metrics.GRAPHQL_LATENCY,
                    metrics.operation_label(name),
                    kind,
                    status,
                ).record(elapsed)
