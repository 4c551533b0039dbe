"""Strawberry's ASGI view, bound to the leased tenant database and the offline GraphiQL.

Also the GraphQL-over-HTTP spec where strawberry stops short: a client whose Accept asks
for `application/graphql-response+json` gets that media type, and a 4xx without `data` for
a request error (parse, validation, variables); `application/json` answers 200 as always.
A mutation over GET is 405 with `Allow: POST`.
"""

import logging
from typing import Any

from cross_web import HTTPException
from graphql import GraphQLError
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLHTTPResponse
from strawberry.schema.exceptions import InvalidOperationTypeError
from strawberry.types import ExecutionResult

from app.deps import Container
from app.edge.graphiql import graphiql_html
from app.graphql.context import Context

log = logging.getLogger(__name__)

GRAPHQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"


def wants_graphql_response(accept: str) -> bool:
    """Whether an Accept header prefers application/graphql-response+json to JSON.

    The spec's negotiation: the new type wins a tie; no Accept (or one naming neither)
    keeps the legacy application/json.
    """
    best: dict[str, float] = {GRAPHQL_RESPONSE: 0.0, JSON: 0.0}
    for item in accept.split(","):
        media, *params = (part.strip() for part in item.split(";"))
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        media = media.lower()
        if media == GRAPHQL_RESPONSE:
            best[GRAPHQL_RESPONSE] = max(best[GRAPHQL_RESPONSE], q)
        elif media in (JSON, "application/*", "*/*"):
            best[JSON] = max(best[JSON], q)
    return best[GRAPHQL_RESPONSE] > 0 and best[GRAPHQL_RESPONSE] >= best[JSON]


def _is_request_error(result: ExecutionResult) -> bool:
    """Parse, validation or variable errors: execution never started, so no `data`.

    A field error that nulls the whole `data` still carries a path, and stays a 200.
    """
    errors: list[GraphQLError] = result.errors or []
    return result.data is None and bool(errors) and all(not e.path for e in errors)


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

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        # As strawberry's own, plus the Allow header a 405 must carry.
        try:
            response = await self.run(Request(scope=scope, receive=receive))
        except HTTPException as exc:
            headers = {"Allow": "POST"} if exc.status_code == 405 else None
            response = PlainTextResponse(exc.reason, status_code=exc.status_code, headers=headers)
        await response(scope, receive, send)

    async def execute_single(self, *args: Any, **kwargs: Any) -> ExecutionResult:
        try:
            return await super().execute_single(*args, **kwargs)
        except HTTPException as exc:
            # Strawberry says 400 for a mutation over GET; the spec says 405.
            if isinstance(exc.__cause__, InvalidOperationTypeError):
                raise HTTPException(405, exc.reason) from exc.__cause__
            raise

    async def get_sub_response(self, request: Request | WebSocket) -> Response:
        sub_response = await super().get_sub_response(request)
        accept = request.headers.get("accept", "")
        sub_response.media_type = GRAPHQL_RESPONSE if wants_graphql_response(accept) else JSON
        return sub_response

    async def process_result(
        self, request: Request, result: ExecutionResult
    ) -> GraphQLHTTPResponse:
        response = await super().process_result(request, result)
        if wants_graphql_response(request.headers.get("accept", "")) and _is_request_error(result):
            response.pop("data", None)
        return response

    def create_response(
        self,
        response_data: GraphQLHTTPResponse | list[GraphQLHTTPResponse],
        sub_response: Response,
    ) -> Response:
        response = super().create_response(response_data, sub_response)
        response.headers.append("Vary", "Accept")  # the answer depends on it (GET is cacheable)
        if sub_response.media_type == GRAPHQL_RESPONSE:
            response.headers["content-type"] = GRAPHQL_RESPONSE
            if isinstance(response_data, dict) and "data" not in response_data:
                response.status_code = sub_response.status_code or 400
        return response

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
