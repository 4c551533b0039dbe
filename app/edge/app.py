"""The HTTP edge: the Starlette app, its routes and its lifespan (which owns the Container).

Routes: /healthz (no key), /graphql (GraphiQL page without a key, every operation with
one), /graphiql-assets (no key). Everything that touches memory goes through TenantBound.
"""

import contextlib
import logging
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from app import __version__
from app.config import Settings
from app.deps import Container, build
from app.edge.auth import TenantBound
from app.edge.graphiql import graphiql_html, graphiql_routes
from app.edge.graphql_view import GraphQLView, is_graphiql_page
from app.edge.limits import MAX_BODY_BYTES, BodyLimit
from app.graphql.schema import schema

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
        try:
            yield
        finally:
            if owned:
                await holder.pop("c").aclose()

    page = HTMLResponse(graphiql_html()) if settings.graphiql else None

    class GraphQLEndpoint:
        """The GraphiQL page for a browser without a key; every operation via TenantBound."""

        bound: BodyLimit | None = None

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            if page is not None and is_graphiql_page(scope):
                await page(scope, receive, send)
                return
            if self.bound is None:  # the container exists once lifespan has started
                c = holder["c"]
                self.bound = BodyLimit(TenantBound(GraphQLView(schema, c), c), MAX_BODY_BYTES)
            await self.bound(scope, receive, send)

    async def healthz(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "version": __version__})

    routes: list[BaseRoute] = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/graphql", GraphQLEndpoint(), methods=["GET", "POST"]),
    ]
    if settings.graphiql:
        routes += graphiql_routes(settings.assets_dir)
    return Starlette(routes=routes, lifespan=lifespan)
