"""The HTTP edge: the Starlette app and its routes; its lifespan (app/edge/lifespan.py) owns the
Container.

Routes: /healthz (liveness), /readyz (readiness), /metrics (JET_METRICS_TOKEN when set),
/openapi.json, /graphiql-assets and /console (no key: the console's own calls go to
/graphql with the user's key); /graphql (the GraphiQL page
without a key, every operation with one; its websocket: subscriptions); /mcp for agents
(app/edge/mcp/); the REST routes under /memory and /webhooks (app/edge/rest/).
Everything that touches memory goes through TenantBound, each route's middleware (the
websocket checks the key of its own connection_init). The Container is the lifespan's state
(app/edge/lifespan.py), read per request; an HttpProblem a REST handler raises is answered
by the app's exception handler. The app is stock Starlette, with HttpMetrics around every
request (metered_starlette).
"""

import html
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.types import ASGIApp, ExceptionHandler, Lifespan, Receive, Scope, Send

from app import __version__
from app.config import Settings
from app.deps import Container
from app.edge.auth import TenantBound
from app.edge.console.routes import console_routes
from app.edge.graphql_http.fastpath import ShortPathGraphQLView
from app.edge.graphql_http.graphiql import graphiql_html, graphiql_routes
from app.edge.graphql_http.view import GraphQLView, is_graphiql_page
from app.edge.graphql_http.websocket import SubscriptionView
from app.edge.lifespan import CONTAINER, GivenState, lifespan
from app.edge.limits import MAX_BODY_BYTES
from app.edge.mcp.http import McpEndpoint
from app.edge.observe import HttpMetrics, metrics_endpoint, readyz
from app.edge.request_ids import current_request_id
from app.edge.rest.openapi import openapi_route
from app.edge.rest.problems import HttpProblem, problem_exception
from app.edge.rest.routing import rest_routes
from app.graphql.schema import schema_for
from app.logs import request_id_var

log = logging.getLogger(__name__)


def create_app(settings: Settings | None = None, container: Container | None = None) -> Starlette:
    """The ASGI app. Give a built `container` (tests: its owner closes it, and each request
    is given it also without a lifespan) or `settings` (the lifespan builds and closes one)."""
    settings = container.settings if container else settings or Settings()
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
    # The body limit before the key (a 413 for a declared body over it, even without one).
    graphql_middleware = [Middleware(TenantBound, limit=MAX_BODY_BYTES, limit_first=True)]
    if page is not None:
        graphql_middleware.insert(0, Middleware(GraphiQLPage, page=page))

    async def healthz(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "version": __version__})

    mcp_endpoint = McpEndpoint()
    # The router tries routes in order: the ones every request of a workload takes first.
    routes: list[BaseRoute] = [
        Route(
            "/graphql",
            view_class(gql_schema, settings),
            methods=["GET", "POST"],
            middleware=graphql_middleware,
        ),
        *rest_routes(),
        Route("/mcp", mcp_endpoint, methods=["GET", "POST", "DELETE"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics_endpoint(settings.metrics_token), methods=["GET"]),
        WebSocketRoute("/graphql", SubscriptionView(gql_schema, settings)),
        openapi_route(),
    ]
    if settings.graphiql:
        routes += asset_routes
    if settings.console:
        routes += console_routes(settings.assets_dir)
    return metered_starlette(
        routes,
        mcp_endpoint.wrap(lifespan(settings, container)),
        cors_origins=settings.cors_origin_list,
        state=None if container is None else {CONTAINER: container},
        exception_handlers={HttpProblem: problem_exception},
    )


class GraphiQLPage:
    """ASGI middleware of /graphql: a browser's GET without a query gets the GraphiQL page,
    without a key; every other request goes on to `app` (TenantBound, then the view)."""

    def __init__(self, app: ASGIApp, page: Response) -> None:
        self.app = app
        self.page = page

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and is_graphiql_page(scope):
            await self.page(scope, receive, send)
            return
        await self.app(scope, receive, send)


# What a browser page on an allowed origin may send and read (JET_CORS_ORIGINS).
CORS_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
CORS_HEADERS = [
    "Authorization",
    "Content-Type",
    "Accept",
    "Idempotency-Key",
    "If-Match",
    "X-Request-Id",
    "Mcp-Session-Id",
    "Mcp-Protocol-Version",
]
CORS_EXPOSED = [
    "ETag",
    "Location",
    "X-Request-Id",
    "Retry-After",
    "WWW-Authenticate",
    "Allow",
    "Mcp-Session-Id",
]
CORS_MAX_AGE_S = 600


def metered_starlette(
    routes: Sequence[BaseRoute],
    lifespan: Lifespan[Any] | None = None,
    *,
    cors_origins: Sequence[str] = (),
    state: Mapping[str, Any] | None = None,
    exception_handlers: Mapping[Any, ExceptionHandler] | None = None,
) -> Starlette:
    """Stock Starlette (its router, its 404, 405 and 500) with HttpMetrics counting every
    request and the request id on Starlette's own answers; Starlette's CORSMiddleware
    inside it when `cors_origins` lists any (so preflights are counted too). With `state`,
    each request's lifespan state holds it also when no lifespan runs (GivenState)."""
    middleware = [Middleware(HttpMetrics)]
    if state is not None:
        middleware.insert(0, Middleware(GivenState, state=state))
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
            )
        )
    return Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={HTTPException: http_exception, **(exception_handlers or {})},
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
