"""Strawberry's ASGI view, bound to the leased tenant database and the offline GraphiQL.

Also the GraphQL-over-HTTP spec where strawberry stops short: a client whose Accept asks
for `application/graphql-response+json` gets that media type, and a 4xx without `data` for
a request error (parse, validation, variables); `application/json` answers 200 as always.
Every refusal is GraphQL errors with a code and the request id (app/edge/answers.py): a
field of the wrong JSON type (app/edge/graphql_http/request.py), an undecodable body, a missing
query are 400; another media type 415; a mutation over GET 405 with `Allow: POST`. Batches
run in order, each operation counted by the rate limit and the metrics. Every hook used
here is Strawberry's documented one; the view records the operation for the metrics and
names an unavailable tenant database (app/edge/unavailable.py) where the schema masked it.
"""

import json
import logging
import re
from typing import Any

import orjson
from cross_web import HTTPException
from graphql import GraphQLError
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLHTTPResponse, GraphQLRequestData
from strawberry.http.parse_content_type import parse_content_type
from strawberry.schema.exceptions import InvalidOperationTypeError
from strawberry.types import ExecutionResult

from app import metrics
from app.config import Settings
from app.edge.answers import (
    GRAPHQL_RESPONSE,
    JSON,
    STATUS_CODES,
    graphql_error_body,
    wants_graphql_response_of,
)
from app.edge.auth import bearer_token, requester, retry_after_header
from app.edge.graphql_http.graphiql import graphiql_html
from app.edge.graphql_http.request import NOT_AN_OBJECT, body_data, request_data
from app.edge.lifespan import container_of
from app.edge.observe import BATCH_STATE_KEY, OPERATION_STATE_KEY, operation_type
from app.edge.unavailable import graphql_extensions
from app.graphql.errors import with_code
from app.graphql.request_context import Context
from app.storage.unavailable import TenantUnavailable

log = logging.getLogger(__name__)

BAD_JSON = "Unable to parse request body as JSON"
__all__ = ["GRAPHQL_RESPONSE", "JSON", "NOT_AN_OBJECT", "GraphQLView"]
SUBSCRIPTION_OVER_HTTP = (
    "subscriptions are served over the websocket at /graphql (graphql-transport-ws), "
    "with the API key in connection_init's payload"
)
# 19 ASCII digits in a row: where an integer may be outside 64 bits (see decode_json).
_LONG_DIGITS: dict[type, Any] = {bytes: re.compile(rb"[0-9]{19}"), str: re.compile(r"[0-9]{19}")}


def is_request_error(result: ExecutionResult) -> bool:
    """Parse, validation or variable errors: execution never started, so no `data`.

    A field error that nulls the whole `data` still carries a path, and stays a 200.
    """
    errors: list[GraphQLError] = result.errors or []
    return result.data is None and bool(errors) and all(not e.path for e in errors)


class GraphQLView(GraphQL[Context, None]):
    """Strawberry's view, one per app: each request's Container is the lifespan state's
    (app/edge/lifespan.py), its tenant database the one TenantBound leased."""

    def __init__(self, schema: Any, settings: Settings) -> None:
        super().__init__(
            schema,
            graphql_ide="graphiql" if settings.graphiql else None,
            # Subscriptions and multipart are not part of the contract.
            multipart_uploads_enabled=False,
        )
        self.settings = settings
        self._page = graphiql_html() if settings.graphiql else ""

    def encode_json(self, data: object) -> bytes:
        # orjson: several times faster than json.dumps on a page of results, and UTF-8
        # (json.dumps escaped non-ASCII); what it cannot encode goes to json.dumps.
        try:
            return orjson.dumps(data)
        except TypeError:
            return json.dumps(data, separators=(",", ":")).encode()

    def decode_json(self, data: str | bytes) -> object:
        # orjson parses a request body several times faster than json.loads. It refuses
        # some of what json.loads takes (NaN, 1e400, lone surrogates, a BOM, UTF-16, deep
        # nesting) and reads an integer outside 64 bits as a float: a body with 19 digits
        # in a row (as an integer, or anywhere) or that orjson refuses is json.loads',
        # which answers (or raises) as before. For the rest the values are the same, types included
        # (tests/edge/test_graphql_bodies.py, with a fuzz of 3,000 documents).
        long_digits = _LONG_DIGITS.get(type(data))
        if long_digits is not None and long_digits.search(data) is None:
            try:
                return orjson.loads(data)
            except orjson.JSONDecodeError:
                pass
        # json.loads' own refusals are Strawberry's 400; these two escaped it as a 500.
        try:
            return json.loads(data)
        except RecursionError:
            raise HTTPException(400, f"{BAD_JSON}: nested too deeply") from None
        except UnicodeDecodeError:
            raise HTTPException(400, f"{BAD_JSON}: not valid UTF-8") from None

    async def parse_http_body(self, request: Any) -> Any:
        # Strawberry's, with each field's type checked for every JSON type a client may
        # send (app/edge/graphql_http/request.py), an unsupported media type a 415 and a batch
        # within its cap (Strawberry's own check says neither the cap nor the field).
        if request.method == "GET":
            params = dict(request.query_params)
            for name in ("variables", "extensions"):
                if params.get(name):
                    try:
                        params[name] = self.decode_json(params[name])
                    except json.JSONDecodeError:
                        raise HTTPException(400, f"`{name}` is not valid JSON") from None
            return request_data(params)
        content_type, _ = parse_content_type(request.content_type or "")
        if "application/json" not in content_type:
            raise HTTPException(
                415, f"Unsupported content type {content_type or 'none'}: send application/json"
            )
        data = self.parse_json(await request.get_body())
        return body_data(data, self.settings.graphql_batch_max)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        request = Request(scope=scope, receive=receive)
        try:
            response = await self.run(request)
        except HTTPException as exc:
            response = await self.refusal(request, exc)
        await response(scope, receive, send)

    async def refusal(self, request: Request, exc: HTTPException) -> Response:
        """A request refused before any operation ran, as GraphQL errors with a code."""
        scope = request.scope
        if exc.status_code == 400 and await _is_batch(request):
            # Refused before any operation ran: labelled as a batch.
            scope["state"][OPERATION_STATE_KEY] = ("batch", "unknown")
        headers = {"Allow": "POST"} if exc.status_code == 405 else {}
        if isinstance(exc, BatchRateLimited):
            headers["Retry-After"] = retry_after_header(exc.wait).decode()
        code = STATUS_CODES.get(exc.status_code, STATUS_CODES[400])
        body = graphql_error_body(exc.reason, code, scope["state"].get("request_id"))
        media = GRAPHQL_RESPONSE if wants_graphql_response_of(request.scope) else JSON
        return Response(self.encode_json(body), exc.status_code, headers, media)

    async def execute_operation(
        self,
        request: Any,
        request_adapter: Any,
        request_data: GraphQLRequestData | list[GraphQLRequestData],
        context: Any,
        root_value: Any,
        sub_response: Any,
    ) -> Any:
        if not isinstance(request_data, list):
            return await super().execute_operation(
                request, request_adapter, request_data, context, root_value, sub_response
            )
        self._take_batch_tokens(request, len(request_data))
        request.scope["state"][BATCH_STATE_KEY] = []  # each operation's, for the metrics
        # One after another, in order (a mutation then a query reads what it wrote), each
        # with its own context (its own loaders); Strawberry's runs them all at once.
        results = []
        for data in request_data:
            try:
                result = await self.execute_single(
                    request=request,
                    request_adapter=request_adapter,
                    sub_response=sub_response,
                    context=await self.get_context(request, response=sub_response),
                    root_value=root_value,
                    request_data=data,
                )
            except HTTPException as exc:
                # This operation's refusal (no query, an unknown operationName) is its own
                # answer: the others may have written, and their answers must reach the client.
                code = STATUS_CODES.get(exc.status_code, STATUS_CODES[400])
                result = ExecutionResult(
                    data=None, errors=[GraphQLError(exc.reason, extensions={"code": code})]
                )
            results.append(result)
        return results

    def _take_batch_tokens(self, request: Request, operations: int) -> None:
        """The rate limit counts every operation: TenantBound took one token, the rest here."""
        limiter = container_of(request.scope).limiter
        token = bearer_token(request.scope)
        if operations > 1 and limiter.enabled and token is not None:
            if operations - 1 > limiter.burst:
                raise HTTPException(
                    400,
                    f"A batch of {operations} operations can never fit this API key's rate "
                    f"limit (burst {limiter.burst}): send at most {limiter.burst + 1}",
                )
            wait = limiter.acquire(token, operations - 1)
            if wait > 0:
                metrics.RATE_LIMITED.labels(surface="graphql").inc()
                raise BatchRateLimited(limiter.rate, limiter.burst, operations, wait)

    async def execute_single(self, *args: Any, **kwargs: Any) -> ExecutionResult:
        data: GraphQLRequestData = kwargs["request_data"]
        # The substring test first: a C scan, so other operations pay nothing more.
        query = data.query
        if (
            isinstance(query, str)
            and "subscription" in query
            and operation_type(query, data.operation_name) == "subscription"
        ):
            _note_operation(kwargs["request"], kwargs["context"], data)
            raise HTTPException(400, SUBSCRIPTION_OVER_HTTP)
        try:
            return await super().execute_single(*args, **kwargs)
        except HTTPException as exc:
            # Strawberry says 400 for a mutation over GET; the spec says 405.
            if isinstance(exc.__cause__, InvalidOperationTypeError):
                raise HTTPException(405, exc.reason) from exc.__cause__
            raise
        finally:
            _note_operation(kwargs["request"], kwargs["context"], kwargs["request_data"])

    async def get_sub_response(self, request: Request | WebSocket) -> Response:
        sub_response = await super().get_sub_response(request)
        sub_response.media_type = (
            GRAPHQL_RESPONSE if wants_graphql_response_of(request.scope) else JSON
        )
        return sub_response

    async def process_result(
        self, request: Request, result: ExecutionResult
    ) -> GraphQLHTTPResponse:
        if result.errors:
            result.errors = coded_errors(result.errors, request.scope["state"].get("request_id"))
        response = await super().process_result(request, result)
        if wants_graphql_response_of(request.scope) and is_request_error(result):
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
        container = container_of(request.scope)
        return Context(
            container=container,
            db=state["db"],
            request_id=state["request_id"],
            request=request,
            response=response,
            actor=lambda: requester(request.scope, container),
        )


class BatchRateLimited(HTTPException):
    """A batch whose operations are more than the key's rate limit has left (a 429)."""

    def __init__(self, rate: float, burst: int, operations: int, wait: float) -> None:
        super().__init__(
            429,
            f"rate limit of {rate:g} requests per second (burst {burst}) for this API key "
            f"exceeded: each of the batch's {operations} operations counts as one; retry later",
        )
        self.wait = wait


async def _is_batch(request: Request) -> bool:
    """A JSON array POSTed (the body is read by then: `body()` answers from its cache)."""
    if request.method != "POST" or "json" not in request.headers.get("content-type", ""):
        return False
    return (await request.body()).lstrip()[:1] == b"["


def coded_errors(errors: list[GraphQLError], request_id: str | None) -> list[GraphQLError]:
    """An answer's errors as every transport sends them (HTTP here, the websocket in
    app/edge/graphql_http/websocket.py): each with a code and the request id."""
    return [with_code(_unmasked(e, request_id), request_id) for e in errors]


def _unmasked(error: GraphQLError, request_id: str | None) -> GraphQLError:
    """A masked error caused by a tenant database that cannot serve names it instead."""
    cause = error.__cause__
    if not isinstance(cause, TenantUnavailable):
        return error
    named = GraphQLError(
        cause.message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
    )
    named.extensions = graphql_extensions(cause, request_id)
    return named


def _note_operation(request: Any, context: Any, request_data: GraphQLRequestData) -> None:
    """Leave (name, type) of the operation in the ASGI scope for HttpMetrics: the one the
    schema noted, or, for a document that did not parse, read from its tokens."""
    scope = getattr(request, "scope", None)
    if not isinstance(scope, dict):
        return
    operation = getattr(context, "operation", None)
    if operation is None:
        name, query = request_data.operation_name, request_data.query
        operation = (name, operation_type(query, name) if isinstance(query, str) else "unknown")
    state = scope.setdefault("state", {})
    state[OPERATION_STATE_KEY] = operation
    batch = state.get(BATCH_STATE_KEY)
    if batch is not None:
        batch.append(operation)


def is_graphiql_page(scope: Scope) -> bool:
    """A browser's GET /graphql without a query is the GraphiQL page (no key needed)."""
    if scope["method"] != "GET":
        return False
    qs: bytes = scope.get("query_string", b"")
    if any(p.split(b"=", 1)[0] == b"query" for p in qs.split(b"&")):
        return False
    accept = dict(scope["headers"]).get(b"accept", b"")
    return b"text/html" in accept
