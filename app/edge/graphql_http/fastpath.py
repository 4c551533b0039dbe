"""The view's short path for one GraphQL operation POSTed as JSON: Strawberry's `run` for
that request without what it never needs, the body read and the response built without
starlette's generic helpers. Anything else is the stock view's (app/edge/graphql_http/view.py).
"""

from typing import Any

from cross_web import StarletteRequestAdapter
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.websockets import WebSocket
from strawberry.http import GraphQLHTTPResponse
from strawberry.types.unset import UNSET

from app.edge.answers import GRAPHQL_RESPONSE, JSON, WANTS_KEY, wants_graphql_response
from app.edge.graphql_http.request import request_data as graphql_request_data
from app.edge.graphql_http.view import GraphQLView

_CONTENT_TYPES = {GRAPHQL_RESPONSE: GRAPHQL_RESPONSE.encode("latin-1")}


def _is_json_post(request: Request) -> bool:
    """POST with Content-Type exactly application/json (parameters allowed).

    Also notes the Accept negotiation on the way: both are read in one pass over the ASGI
    headers, as starlette's `Headers.get` reads them (the first header of each name, names
    as given (ASGI's are lowercase), values latin-1), without the request's `Headers`.
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
    if WANTS_KEY not in scope:
        scope[WANTS_KEY] = wants_graphql_response(accept or "")
    return (ctype or "").partition(";")[0].strip().lower() == "application/json"


async def _body(request: Request) -> bytes:
    """starlette's `Request.body()` (its `stream()` joined) without the async generator
    and `aclosing` around it: the same messages received, the same attributes set
    (`_body`, `_stream_consumed`, `_is_disconnected`), the same errors, so Strawberry's own
    `run` reads the same cached body after it."""
    if hasattr(request, "_body"):
        body: bytes = request._body
        return body
    if request._stream_consumed:
        raise RuntimeError("Stream consumed")
    chunks: list[bytes] = []
    receive = request.receive
    while not request._stream_consumed:
        message = await receive()
        if message["type"] == "http.request":
            chunk = message.get("body", b"")
            if not message.get("more_body", False):
                request._stream_consumed = True
            if chunk:
                chunks.append(chunk)
        elif message["type"] == "http.disconnect":
            request._is_disconnected = True
            raise ClientDisconnect()
    request._body = b"".join(chunks)
    return request._body


def _response(body: bytes, status_code: int, raw_headers: list[tuple[bytes, bytes]]) -> Response:
    """A starlette `Response` with the attributes `Response(body, ...)` and the stock view's
    header edits leave, without `__init__`'s `render`, `init_headers` and `MutableHeaders`."""
    response = Response.__new__(Response)
    response.status_code = status_code
    response.media_type = JSON
    response.background = None
    response.body = body
    response.raw_headers = raw_headers
    return response


class ShortPathGraphQLView(GraphQLView):
    """The stock view, with the short path for one operation POSTed as JSON."""

    async def run(self, request: Any, context: Any = UNSET, root_value: Any = UNSET) -> Any:
        """Strawberry's `AsyncBaseHTTPView.run` for one operation POSTed as JSON: the same
        hooks in the same order (root value, sub-response, context, body, `execute_single`,
        `process_result`, `create_response`) without the request adapter's content-type
        parsing, the streaming-transport and IDE checks and the result's isinstance checks.
        Any other request (GET, other content types, a batch, a body of another shape) is
        Strawberry's own `run`, which reads the same cached body."""
        if (
            context is not UNSET
            or root_value is not UNSET
            or self._stream_transport_map
            or not isinstance(request, Request)
            or not _is_json_post(request)
        ):
            return await super().run(request, context, root_value)
        root_value = await self.get_root_value(request)  # type: ignore[func-returns-value]
        sub_response = await self.get_sub_response(request)
        context = await self.get_context(request, response=sub_response)
        data = self.parse_json(await _body(request))  # a 400 when it is not JSON
        if not isinstance(data, dict):
            return await super().run(request)  # a batch, or not an object (a 400)
        request_data = graphql_request_data(data)  # the stock view's 400 naming a field
        result = await self.execute_single(
            request=request,
            request_adapter=StarletteRequestAdapter(request),
            sub_response=sub_response,
            context=context,
            root_value=root_value,
            request_data=request_data,
        )
        response_data = await self.process_result(request=request, result=result)
        if result.errors:
            self._handle_errors(result.errors, response_data)
        return self.create_response(response_data=response_data, sub_response=sub_response)

    async def get_sub_response(self, request: Request | WebSocket) -> Response:
        # Strawberry's: a Response with no headers (it deletes the content-length that
        # `Response()` set) and no status, made without `Response.__init__`.
        sub_response = Response.__new__(Response)
        sub_response.status_code = None  # type: ignore[assignment]
        sub_response.background = None
        sub_response.body = b""
        sub_response.raw_headers = []
        wants = request.scope.get(WANTS_KEY)
        if wants is None:
            wants = request.scope[WANTS_KEY] = wants_graphql_response(
                request.headers.get("accept", "")
            )
        sub_response.media_type = GRAPHQL_RESPONSE if wants else JSON
        return sub_response

    def create_response(
        self,
        response_data: GraphQLHTTPResponse | list[GraphQLHTTPResponse],
        sub_response: Response,
    ) -> Response:
        if sub_response.raw_headers or not isinstance(response_data, dict):
            return super().create_response(response_data, sub_response)
        # What the stock view makes of a sub-response no resolver set a header on.
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
