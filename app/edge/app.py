"""The HTTP edge: the Starlette app, its routes and its lifespan (which owns the Container).

Routes: /healthz (liveness), /readyz (readiness), /metrics (JET_METRICS_TOKEN when set),
/openapi.json, /graphiql-assets and /console (no key: the console's own calls go to
/graphql with the user's key); /graphql (the GraphiQL page
without a key, every operation with one; its websocket: subscriptions); /mcp for agents
(app/edge/mcp/); the REST routes under /memory and /webhooks (app/edge/rest/).
Everything that touches memory goes through TenantBound. The app is stock Starlette, with
HttpMetrics around every request (metered_starlette).
"""

import contextlib
import gc
import html
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.types import Lifespan, Receive, Scope, Send

from app import __version__, allocator, metrics
from app.config import Settings
from app.deps import Container, build
from app.edge.answers import GRAPHQL_RESPONSE_ANSWERS
from app.edge.auth import TenantBound
from app.edge.console.routes import console_routes
from app.edge.graphql_http.fastpath import ShortPathGraphQLView
from app.edge.graphql_http.graphiql import graphiql_html, graphiql_routes
from app.edge.graphql_http.view import (
    WANTS_KEY,
    GraphQLView,
    is_graphiql_page,
    wants_graphql_response,
)
from app.edge.graphql_http.websocket import SubscriptionView
from app.edge.limits import MAX_BODY_BYTES
from app.edge.mcp.http import McpEndpoint
from app.edge.observe import HttpMetrics, metrics_endpoint, readyz
from app.edge.request_ids import current_request_id
from app.edge.rest.openapi import openapi_route
from app.edge.rest.routing import rest_routes
from app.graphql.schema import schema_for
from app.logs import request_id_var

log = logging.getLogger(__name__)


def create_app(settings: Settings | None = None, container: Container | None = None) -> Starlette:
    """The ASGI app. Give a built `container` (tests) or `settings` (built in lifespan)."""
    settings = container.settings if container else settings or Settings()
    holder: dict[str, Container] = {}
    if container is not None:
        holder["c"] = container

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        owned = "c" not in holder
        if owned:
            # Before the process starts its threads (SQLite's, the thread pool's).
            allocator.limit_arenas(settings.malloc_arenas)
        # Several API processes (serve --workers): a replaced worker's live gauges go.
        metrics.forget_dead_processes()
        if owned:
            holder["c"] = await build(settings)
        indexer = holder["c"].indexer() if owned else None
        if indexer is not None:
            indexer.start()  # embeds entries in the background, off every request
        if owned:
            # Everything alive now (modules, the schema, the container) lives as long as
            # the server: out of the collector's sight, a full collection scans only what
            # requests allocate (docs/benchmarks.md has the pauses this avoids).
            gc.collect()
            gc.freeze()
        try:
            yield
        finally:
            if indexer is not None:
                await indexer.aclose()
            if owned:
                gc.unfreeze()
                await holder.pop("c").aclose()
            metrics.process_stopping()

    page = HTMLResponse(graphiql_html()) if settings.graphiql else None
    asset_routes: list[BaseRoute] = []
    if settings.graphiql:
        try:
            asset_routes = graphiql_routes(settings.assets_dir)
        except RuntimeError as exc:
            # No npm on this machine (or assets not installed): the API works without them.
            log.error("GraphiQL is unavailable: %s", exc)
            page = HTMLResponse(
                f"<!doctype html><title>GraphiQL unavailable</title><p>{html.escape(str(exc))}",
                status_code=503,
            )
    # With the fast path off, the stock view (Strawberry's `run`) answers every request.
    view_class = ShortPathGraphQLView if settings.graphql_fast_path else GraphQLView
    gql_schema = schema_for(
        introspection=settings.introspection, fast_path=settings.graphql_fast_path
    )

    class GraphQLEndpoint:
        """The GraphiQL page for a browser without a key; every operation via TenantBound."""

        bound: TenantBound | None = None
        # The same, answering its refusals in application/graphql-response+json.
        bound_graphql_response: TenantBound | None = None
        container: Container | None = None

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            if page is not None and is_graphiql_page(scope):
                await page(scope, receive, send)
                return
            # The container exists once lifespan has started, and is a new one when the
            # lifespan restarts (test clients do that): never serve a closed one.
            c = holder["c"]
            if self.bound is None or c is not self.container:
                self.container = c
                view = view_class(gql_schema, c)
                # The body limit before the key (a 413 for a declared body over it, even
                # without one), as when BodyLimit wrapped TenantBound here.
                self.bound = TenantBound(view, c, limit=MAX_BODY_BYTES, limit_first=True)
                self.bound_graphql_response = TenantBound(
                    view, c, answers=GRAPHQL_RESPONSE_ANSWERS, limit=MAX_BODY_BYTES,
                    limit_first=True,
                )  # fmt: skip
            # The Accept negotiation, noted for the view too (it reads it from the scope).
            wants = scope[WANTS_KEY] = wants_graphql_response(_accept(scope))
            bound = self.bound_graphql_response if wants else self.bound
            assert bound is not None
            await bound(scope, receive, send)

    class SubscriptionEndpoint:
        """The websocket at /graphql (app/edge/graphql_http/websocket.py), on the same schema
        as HTTP (with the fast path on, its short cuts too)."""

        view: SubscriptionView | None = None
        container: Container | None = None

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            c = holder["c"]
            if self.view is None or c is not self.container:
                self.container = c
                self.view = SubscriptionView(gql_schema, c)
            await self.view(scope, receive, send)

    async def healthz(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "version": __version__})

    mcp_endpoint = McpEndpoint(lambda: holder["c"])
    # The router tries routes in order: the ones every request of a workload takes first.
    routes: list[BaseRoute] = [
        Route("/graphql", GraphQLEndpoint(), methods=["GET", "POST"]),
        *rest_routes(lambda: holder["c"]),
        Route("/mcp", mcp_endpoint, methods=["GET", "POST", "DELETE"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz(lambda: holder["c"]), methods=["GET"]),
        Route("/metrics", metrics_endpoint(settings.metrics_token), methods=["GET"]),
        WebSocketRoute("/graphql", SubscriptionEndpoint()),
        openapi_route(),
    ]
    if settings.graphiql:
        routes += asset_routes
    if settings.console:
        routes += console_routes(settings.assets_dir)
    return metered_starlette(
        routes, mcp_endpoint.wrap(lifespan), cors_origins=settings.cors_origin_list
    )


# What a browser page on an allowed origin may send and read (JET_CORS_ORIGINS).
CORS_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
CORS_HEADERS = [
    "Authorization", "Content-Type", "Accept", "Idempotency-Key", "If-Match", "X-Request-Id",
    "Mcp-Session-Id", "Mcp-Protocol-Version",
]  # fmt: skip
CORS_EXPOSED = [
    "ETag", "Location", "X-Request-Id", "Retry-After", "WWW-Authenticate", "Allow",
    "Mcp-Session-Id",
]  # fmt: skip
CORS_MAX_AGE_S = 600


def _accept(scope: Scope) -> str:
    """The request's first Accept header, as starlette's `Headers.get` reads it."""
    for name, value in scope["headers"]:
        if name == b"accept":
            return str(value.decode("latin-1"))
    return ""


def metered_starlette(
    routes: Sequence[BaseRoute],
    lifespan: Lifespan[Any] | None = None,
    *,
    cors_origins: Sequence[str] = (),
) -> Starlette:
    """Stock Starlette (its router, its 404, 405 and 500) with HttpMetrics counting every
    request and the request id on Starlette's own answers; Starlette's CORSMiddleware
    inside it when `cors_origins` lists any (so preflights are counted too)."""
    middleware = [Middleware(HttpMetrics)]
    if cors_origins:
        # No credentials: the API key travels in Authorization, never in a cookie.
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(cors_origins),
                allow_methods=CORS_METHODS,
                allow_headers=CORS_HEADERS,
                expose_headers=CORS_EXPOSED,
                max_age=CORS_MAX_AGE_S,
            )  # fmt: skip
        )
    return Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={HTTPException: http_exception},
    )


async def http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's answer to an HTTPException (routing's 404 for a path no route knows and
    405 for a method a route does not take, StaticFiles' 404), as its ExceptionMiddleware
    makes it, with the request id: in the X-Request-Id header, as on every answer of the
    API, and in the log context while it is sent (uvicorn's access line)."""
    assert isinstance(exc, HTTPException)
    request_id = current_request_id(request.scope)
    if exc.status_code in {204, 304}:
        return WithRequestId(request_id, None, exc.status_code, exc.headers)
    return WithRequestId(request_id, exc.detail, exc.status_code, exc.headers, "text/plain")


class WithRequestId(Response):
    """A Response with `x-request-id: <request_id>`, sent with that id in the log context."""

    def __init__(
        self,
        request_id: str,
        content: str | None,
        status_code: int,
        headers: Mapping[str, str] | None,
        media_type: str | None = None,
    ) -> None:
        super().__init__(content, status_code, headers, media_type)
        self.request_id = request_id
        self.raw_headers.append((b"x-request-id", request_id.encode("latin-1")))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = request_id_var.set(self.request_id)
        try:
            await super().__call__(scope, receive, send)
        finally:
            request_id_var.reset(token)
