"""The HTTP edge: the Starlette app, its routes and its lifespan (which owns the Container).

Routes: /healthz (liveness), /readyz (readiness), /metrics (JET_METRICS_TOKEN when set),
/openapi.json and /graphiql-assets (no key); /graphql (the GraphiQL page
without a key, every operation with one); the REST routes under /memory (app/edge/rest.py).
Everything that touches memory goes through TenantBound. Edge (below) is the Starlette app,
with HttpMetrics around every request and a direct way to the fixed-path ASGI routes.
"""

import contextlib
import gc
import html
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Host, Match, Route
from starlette.types import Lifespan, Receive, Scope, Send

from app import __version__
from app.config import Settings
from app.deps import Container, build
from app.edge.auth import TenantBound, current_request_id
from app.edge.fastpath.graphql_post import ShortPathGraphQLView
from app.edge.graphiql import graphiql_html, graphiql_routes
from app.edge.graphql_view import GraphQLView, is_graphiql_page
from app.edge.limits import MAX_BODY_BYTES
from app.edge.observe import HttpMetrics, metrics_endpoint, readyz
from app.edge.openapi import openapi_route
from app.edge.responses import StatusNoted, unanswered_status
from app.edge.rest import rest_routes
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
            holder["c"] = await build(settings)
            # Everything alive now (modules, the schema, the container) lives as long as
            # the server: out of the collector's sight, a full collection scans only what
            # requests allocate (~130,000 objects took gen-2 collections of 60-140 ms).
            gc.collect()
            gc.freeze()
        try:
            yield
        finally:
            if owned:
                gc.unfreeze()
                await holder.pop("c").aclose()

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
        container: Container | None = None

        def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
            # Not a coroutine itself: it returns the one that answers the request (a frame
            # fewer to create and to resume through on every request, ~0.4 us).
            if page is not None and is_graphiql_page(scope):
                return page(scope, receive, send)
            # The container exists once lifespan has started, and is a new one when the
            # lifespan restarts (test clients do that): never serve a closed one.
            c = holder["c"]
            if self.bound is None or c is not self.container:
                self.container = c
                view = view_class(gql_schema, c)
                # The body limit before the key (a 413 for a declared body over it, even
                # without one), as when BodyLimit wrapped TenantBound here.
                self.bound = TenantBound(view, c, limit=MAX_BODY_BYTES, limit_first=True)
            return self.bound(scope, receive, send)

    async def healthz(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "version": __version__})

    routes: list[BaseRoute] = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz(lambda: holder["c"]), methods=["GET"]),
        Route("/metrics", metrics_endpoint(settings.metrics_token), methods=["GET"]),
        Route("/graphql", GraphQLEndpoint(), methods=["GET", "POST"]),
        *rest_routes(lambda: holder["c"]),
        openapi_route(),
    ]
    if settings.graphiql:
        routes += asset_routes
    return Edge(routes=routes, lifespan=lifespan)


class Edge(Starlette):
    """Starlette with HttpMetrics around every request and a direct way to the hot routes.

    A request for a route with a fixed path and an ASGI app as its endpoint (/graphql and
    the REST resources, which do their own auth, limits and error answers) goes straight
    to that app: what Starlette's stack would do for it (ServerErrorMiddleware's 500 for
    an exception that escapes before the response starts, the router trying each route in
    turn, the scope's app/router/route/endpoint/path_params), done here in one frame that
    also notes the status for the metrics. Four layers of coroutines and send wrappers
    fewer per request (Starlette's two middlewares, the router, the route). Any other
    request (another route, a method the route does not allow, a root_path, lifespan)
    goes through Starlette's stack as before, inside HttpMetrics; Starlette's own answers
    there (routing's 404 and 405) carry the request id too (`http_exception`).
    """

    def __init__(
        self, *, routes: Sequence[BaseRoute], lifespan: Lifespan[Any] | None = None
    ) -> None:
        super().__init__(
            routes=routes, lifespan=lifespan, exception_handlers={HTTPException: http_exception}
        )
        self.metrics = HttpMetrics(super().__call__)
        self._direct: dict[str, Route] | None = None

    def _direct_routes(self) -> dict[str, Route]:
        """Fixed path -> its Route, for routes that no earlier route could take first."""
        direct: dict[str, Route] = {}
        earlier: list[BaseRoute] = []
        for route in self.router.routes:
            if (
                isinstance(route, Route)
                and not route.param_convertors
                and route.app is route.endpoint  # an ASGI app, not a function Starlette wraps
                and route.path not in direct
                and not any(_may_match(r, route.path) for r in earlier)
            ):
                direct[route.path] = route
            earlier.append(route)
        return direct

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        if self._direct is None:  # routes are final once serving (benchmarks add some)
            self._direct = self._direct_routes()
        route = None if scope.get("root_path") else self._direct.get(scope["path"])
        if route is None or (route.methods is not None and scope["method"] not in route.methods):
            await self.metrics(scope, receive, send)
            return
        noted = StatusNoted(send, 0)  # 0: none sent yet
        started = time.perf_counter()
        scope["app"] = self
        if "router" not in scope:
            scope["router"] = self.router
        scope["route"] = route
        scope["endpoint"] = route.endpoint
        scope["path_params"] = dict(scope.get("path_params", {}))
        try:
            await route.app(scope, receive, noted)
        except Exception:
            # As ServerErrorMiddleware: a plain 500 if nothing was sent, then re-raise
            # for the server to log.
            if not noted.status:
                await PlainTextResponse("Internal Server Error", 500)(scope, receive, send)
                noted.status = 500
            raise
        finally:
            status = noted.status or unanswered_status(scope)
            self.metrics.record(scope, status, time.perf_counter() - started)


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


def _may_match(route: BaseRoute, path: str) -> bool:
    """Whether `route` could take a request for `path` (any method, any host)."""
    if isinstance(route, Host):
        return True  # depends on the Host header
    scope = {"type": "http", "path": path, "root_path": "", "method": "GET", "headers": []}
    try:
        return route.matches(scope)[0] is not Match.NONE
    except Exception:
        return True  # when in doubt, Starlette decides
