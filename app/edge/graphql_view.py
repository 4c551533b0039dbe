"""Strawberry's ASGI view, bound to the leased tenant database and the offline GraphiQL.

Also the GraphQL-over-HTTP spec where strawberry stops short: a client whose Accept asks
for `application/graphql-response+json` gets that media type, and a 4xx without `data` for
a request error (parse, validation, variables); `application/json` answers 200 as always.
A mutation over GET is 405 with `Allow: POST`.

Per request, the common case (one operation POSTed as `application/json`) takes a short
path through the same hooks (`run` below); request bodies are parsed and responses encoded
with orjson. The short path makes by hand what starlette would for it (the body read, the
header reads, the sub-response and the response), each held to starlette's own code by
tests/graphql/test_view_short_path.py.
"""

import json
import logging
import re
from functools import lru_cache
from typing import Any

import orjson
from cross_web import HTTPException, StarletteRequestAdapter
from graphql import GraphQLError
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLHTTPResponse, GraphQLRequestData
from strawberry.schema.exceptions import InvalidOperationTypeError
from strawberry.types import ExecutionResult
from strawberry.types.unset import UNSET

from app.deps import Container
from app.edge.graphiql import graphiql_html
from app.edge.observe import OPERATION_STATE_KEY
from app.graphql.context import Context

log = logging.getLogger(__name__)

GRAPHQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"
_CONTENT_TYPES = {GRAPHQL_RESPONSE: GRAPHQL_RESPONSE.encode("latin-1")}
# 19 ASCII digits in a row: where an integer may be outside 64 bits (see decode_json).
_LONG_DIGITS: dict[type, Any] = {bytes: re.compile(rb"[0-9]{19}"), str: re.compile(r"[0-9]{19}")}


# A function of the header's text alone, and clients send a handful of distinct Accept
# headers: the answer is cached (bounded; least recently used dropped).
@lru_cache(maxsize=256)
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


# Where a request's Accept negotiation is kept, so it is parsed once per request.
_WANTS_KEY = "jet.graphql_response"


def _wants_graphql_response(request: Request | WebSocket) -> bool:
    wants: bool | None = request.scope.get(_WANTS_KEY)
    if wants is None:
        wants = request.scope[_WANTS_KEY] = wants_graphql_response(
            request.headers.get("accept", "")
        )
    return wants


def _is_json_post(request: Request) -> bool:
    """POST with Content-Type exactly application/json (parameters allowed).

    Also notes the Accept negotiation (`_wants_graphql_response`) on the way: both are
    read in one pass over the ASGI headers, as starlette's `Headers.get` reads them (the
    first header of each name, names as given (ASGI's are lowercase), values latin-1),
    without making the request's `Headers` object (~2 µs of a `{ __typename }` request).
    """
    scope = request.scope
    if scope["method"] != "POST":
        return False
    ctype = accept = None
    for name, value in scope["headers"]:
        if ctype is None and name == b"content-type":
            ctype = value.decode("latin-1")
        elif accept is None and name == b"accept":
            accept = value.decode("latin-1")
    if _WANTS_KEY not in scope:
        scope[_WANTS_KEY] = wants_graphql_response(accept or "")
    return (ctype or "").partition(";")[0].strip().lower() == "application/json"


async def _body(request: Request) -> bytes:
    """starlette's `Request.body()` (its `stream()` joined), without the async generator
    and `aclosing` around it (~3 µs of a `{ __typename }` request): the same messages
    received, the same attributes set (`_body`, `_stream_consumed`, `_is_disconnected`),
    the same errors, so strawberry's own `run` reads the same cached body after it."""
    if hasattr(request, "_body"):
        return request._body
    if request._stream_consumed:
        raise RuntimeError("Stream consumed")
    chunks: list[bytes] = []
    receive = request.receive
    while not request._stream_consumed:
        message = await receive()
        if message["type"] == "http.request":
            body = message.get("body", b"")
            if not message.get("more_body", False):
                request._stream_consumed = True
            if body:
                chunks.append(body)
        elif message["type"] == "http.disconnect":
            request._is_disconnected = True
            raise ClientDisconnect()
    request._body = b"".join(chunks)
    return request._body


def _response(body: bytes, status_code: int, raw_headers: list[tuple[bytes, bytes]]) -> Response:
    """A starlette `Response` with these attributes, as `Response(body, ...)` and header
    edits leave them, without `__init__`'s `render` and `init_headers` and the
    `MutableHeaders` the edits make (~4 µs a request; tests/graphql/test_view_short_path.py
    compares both ways)."""
    response = Response.__new__(Response)
    response.status_code = status_code
    response.media_type = JSON
    response.background = None
    response.body = body
    response.raw_headers = raw_headers
    return response


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
        # The short path in `run` knows nothing of streaming transports (SSE, multipart
        # subscriptions) or uploads: with any of them configured, strawberry runs it all.
        self._short_path = not self._stream_transport_map and not self.multipart_uploads_enabled

    def encode_json(self, data: object) -> bytes:
        # orjson: several times faster than json.dumps on a page of results, and UTF-8
        # (json.dumps escaped non-ASCII); what it cannot encode goes to json.dumps.
        try:
            return orjson.dumps(data)
        except TypeError:
            return json.dumps(data, separators=(",", ":")).encode()

    def decode_json(self, data: str | bytes) -> object:
        # orjson parses a request body several times faster than json.loads (~2 µs of
        # `{ __typename }`, more for a mutation's variables). It refuses some of what
        # json.loads takes (NaN, 1e400, lone surrogates, a BOM, UTF-16, deep nesting) and
        # reads an integer outside 64 bits as a float: a body with 19 digits in a row (as
        # an integer, or anywhere) or that orjson refuses is json.loads', which answers
        # (or raises) as before. For the rest the values are the same, types included
        # (tests/graphql/test_view_short_path.py, with a fuzz of 3,000 documents).
        long_digits = _LONG_DIGITS.get(type(data))
        if long_digits is not None and long_digits.search(data) is None:
            try:
                return orjson.loads(data)
            except orjson.JSONDecodeError:
                pass
        return json.loads(data)

    async def run(self, request: Any, context: Any = UNSET, root_value: Any = UNSET) -> Any:
        """Strawberry's `AsyncBaseHTTPView.run`, for one operation POSTed as JSON.

        The same steps and hooks in the same order (root value, sub-response, context, body,
        `execute_single`, `process_result`, `create_response`) without what such a request
        never needs: the request adapter's content-type parsing (email.message), the
        streaming-transport and IDE checks, the Protocol isinstance on the result. Any other
        request (GET, other content types, a batch, a body of another shape) is strawberry's
        own `run`, which reads the same cached body.
        """
        if (
            not self._short_path
            or context is not UNSET
            or root_value is not UNSET
            or not isinstance(request, Request)
            or not _is_json_post(request)
        ):
            return await super().run(request, context, root_value)
        root_value = await self.get_root_value(request)  # type: ignore[func-returns-value]
        sub_response = await self.get_sub_response(request)
        context = await self.get_context(request, response=sub_response)
        data = self.parse_json(await _body(request))  # 400 when it is not JSON
        if not isinstance(data, dict):
            if isinstance(data, list):  # refused (no batching) by strawberry's run
                request.scope["state"][OPERATION_STATE_KEY] = ("batch", "unknown")
            return await super().run(request)
        query, variables, extensions = (
            data.get("query"),
            data.get("variables"),
            data.get("extensions"),
        )
        if not (
            isinstance(query, str | None)
            and isinstance(variables, dict | None)
            and isinstance(extensions, dict | None)
        ):
            return await super().run(request)  # strawberry's 400 names the field
        result = await self.execute_single(
            request=request,
            request_adapter=StarletteRequestAdapter(request),
            sub_response=sub_response,
            context=context,
            root_value=root_value,
            request_data=GraphQLRequestData(
                query=query,
                variables=variables,
                operation_name=data.get("operationName"),
                extensions=extensions,
                protocol="http",
            ),
        )
        response_data = await self.process_result(request=request, result=result)
        if result.errors:
            self._handle_errors(result.errors, response_data)
        return self.create_response(response_data=response_data, sub_response=sub_response)

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
        # Strawberry's: a Response with no headers and no status. It makes `Response()` and
        # deletes its content-length header; a 204 gets none to delete (nor a content-type:
        # no media type), and its status is cleared the same way.
        # Made without `Response.__init__` (render, init_headers: ~1 µs), with the same
        # attributes (tests/graphql/test_view_short_path.py compares both ways).
        sub_response = Response.__new__(Response)
        sub_response.status_code = None  # type: ignore[assignment]
        sub_response.background = None
        sub_response.body = b""
        sub_response.raw_headers = []
        sub_response.media_type = GRAPHQL_RESPONSE if _wants_graphql_response(request) else JSON
        return sub_response

    async def process_result(
        self, request: Request, result: ExecutionResult
    ) -> GraphQLHTTPResponse:
        response = await super().process_result(request, result)
        if _wants_graphql_response(request) and _is_request_error(result):
            response.pop("data", None)
        return response

    def create_response(
        self,
        response_data: GraphQLHTTPResponse | list[GraphQLHTTPResponse],
        sub_response: Response,
    ) -> Response:
        if sub_response.raw_headers or not isinstance(response_data, dict):
            return self._create_response(response_data, sub_response)
        # What `_create_response` makes of a sub-response without headers (none set by a
        # resolver), built at once: tests/graphql/test_view_short_path.py compares both ways.
        media = sub_response.media_type
        status = sub_response.status_code or 200
        if media == GRAPHQL_RESPONSE and "data" not in response_data:
            status = sub_response.status_code or 400
        body = self.encode_json(response_data)
        response = _response(
            body,
            status,
            [
                (b"content-length", str(len(body)).encode("latin-1")),
                (b"content-type", _CONTENT_TYPES.get(media or "", b"application/json")),
                (b"vary", b"Accept"),
            ],
        )
        if sub_response.background:
            response.background = sub_response.background
        return response

    def _create_response(
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
