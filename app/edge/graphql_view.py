"""Strawberry's ASGI view, bound to the leased tenant database and the offline GraphiQL."""

import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.types import Scope
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL

from app.deps import Container
from app.edge.graphiql import graphiql_html
from app.graphql.context import Context

log = logging.getLogger(__name__)


class GraphQLView(GraphQL[Context, None]):
    def __init__(self, schema: Any, container: Container) -> None:
        super().__init__(
            schema,
            graphql_ide="graphiql" if container.settings.graphiql else None,
            # Subscriptions and multipart are not part of the contract.
            multipart_uploads_enabled=False,
        )
        self.container = container
        self._page = graphiql_html() if container.settings.graphiql else ""

    async def render_graphql_ide(self, request: Request) -> Response:
        return HTMLResponse(self._page)

    async def get_context(self, request: Request | WebSocket, response: Any) -> Context:
        state = request.scope["state"]
        return Context(
            container=self.container,
            db=state["db"],
            request_id=state["request_id"],
            request=request,
            response=response,
        )


def is_graphiql_page(scope: Scope) -> bool:
    """A browser's GET /graphql without a query is the GraphiQL page (no key needed)."""
    if scope["method"] != "GET":
        return False
    qs: bytes = scope.get("query_string", b"")
    if any(p.split(b"=", 1)[0] == b"query" for p in qs.split(b"&")):
        return False
    accept = dict(scope["headers"]).get(b"accept", b"")
    return b"text/html" in accept
