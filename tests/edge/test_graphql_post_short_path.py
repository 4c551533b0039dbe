"""The view's short path (app/edge/graphql_http/fastpath.py) answers as the stock view
(app/edge/graphql_http/view.py, Strawberry's `run`) does: its hand-made pieces are what the
library code they stand for makes (the sub-response and the response, the body read, the
header reads), and whole requests on a real tenant database get the same messages
(status, headers, body), errors included."""

import re
from typing import Any

import pytest
from starlette.background import BackgroundTask
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from strawberry.http.async_base_view import AsyncBaseHTTPView

from app.deps import Container
from app.edge.answers import GRAPHQL_RESPONSE, JSON, WANTS_KEY, wants_graphql_response
from app.edge.graphql_http import fastpath
from app.edge.graphql_http.fastpath import ShortPathGraphQLView
from app.edge.graphql_http.view import GraphQLView
from app.edge.lifespan import CONTAINER
from app.graphql.schema import build_schema
from tests.conftest import make_tenant

SCHEMA = build_schema(fast_path=True)


def _request(headers: list[tuple[bytes, bytes]], method: str = "POST") -> Request:
    return Request({"type": "http", "method": method, "headers": headers, "path": "/graphql"})


def _vars(response: Response) -> dict[str, Any]:
    # `_headers` is the MutableHeaders a header edit leaves behind: made again from
    # `raw_headers` by the `headers` property when absent.
    return {k: v for k, v in vars(response).items() if k != "_headers"}


@pytest.mark.parametrize("accept", [b"", b"application/json", GRAPHQL_RESPONSE.encode()])
async def test_sub_response_is_the_stock_views(container: Container, accept: bytes) -> None:
    headers = [(b"accept", accept)] if accept else []
    ours = await ShortPathGraphQLView(SCHEMA, container.settings).get_sub_response(
        _request(headers)
    )
    theirs = await GraphQLView(SCHEMA, container.settings).get_sub_response(_request(headers))
    assert type(ours) is type(theirs)
    assert _vars(ours) == _vars(theirs)
    ours.headers["x-set"] = "by a resolver"  # still a working Response
    assert ours.raw_headers == [(b"x-set", b"by a resolver")]


async def _messages(response: Response) -> list[Any]:
    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    async def receive() -> Any:  # pragma: no cover - not called
        raise AssertionError

    await response({"type": "http"}, receive, send)
    return sent


DATA: list[Any] = [
    {"data": {"__typename": "Query"}},
    {"data": None, "errors": [{"message": "boom", "path": ["x"]}]},
    {"errors": [{"message": "Syntax Error"}]},
    {"data": {"s": "ünïcode ✓"}, "extensions": {"k": 1}},
]


@pytest.mark.parametrize("media", [JSON, GRAPHQL_RESPONSE, "text/other"])
@pytest.mark.parametrize("status", [None, 201, 418])
@pytest.mark.parametrize("background", [False, True])
@pytest.mark.parametrize("data", DATA)
async def test_response_is_the_stock_views(
    container: Container, media: str, status: int | None, background: bool, data: Any
) -> None:
    views = (
        ShortPathGraphQLView(SCHEMA, container.settings),
        GraphQLView(SCHEMA, container.settings),
    )
    subs = []
    for view in views:
        sub = await view.get_sub_response(_request([]))
        sub.media_type = media
        sub.status_code = status  # type: ignore[assignment]
        sub.background = BackgroundTask(lambda: None) if background else None
        subs.append(sub)
    subs[1].background = subs[0].background
    ours = views[0].create_response(data, subs[0])
    theirs = views[1].create_response(data, subs[1])
    assert type(ours) is type(theirs)
    assert _vars(ours) == _vars(theirs)
    assert ours.headers.raw == theirs.headers.raw
    assert await _messages(ours) == await _messages(theirs)


async def test_a_sub_response_with_headers_takes_the_stock_path(container: Container) -> None:
    view = ShortPathGraphQLView(SCHEMA, container.settings)
    sub = await view.get_sub_response(_request([]))
    sub.headers["content-type"] = "text/plain"
    sub.headers.append("set-cookie", "a=b")
    response = view.create_response(DATA[0], sub)
    assert response.raw_headers == [
        (b"content-length", b"31"),
        (b"content-type", b"application/json"),
        (b"content-type", b"text/plain"),
        (b"set-cookie", b"a=b"),
        (b"vary", b"Accept"),
    ]


BODIES: list[list[Any]] = [
    [{"type": "http.request", "body": b'{"query": "{ a }"}'}],
    [{"type": "http.request", "body": b'{"query": "{ a }"}', "more_body": False}],
    [{"type": "http.request"}],
    [{"type": "http.request", "body": b""}],
    [
        {"type": "http.request", "body": b'{"qu', "more_body": True},
        {"type": "http.request", "body": b"", "more_body": True},
        {"type": "other"},
        {"type": "http.request", "body": b'ery": 1}'},
    ],
    [{"type": "http.request", "body": b"ab", "more_body": True}, {"type": "http.disconnect"}],
    [{"type": "http.disconnect"}],
]


async def _read(read: Any, messages: list[Any]) -> tuple[Any, ...]:
    queue = list(messages)

    async def receive() -> Any:
        return queue.pop(0)

    request = Request({"type": "http", "method": "POST", "headers": []}, receive)
    outcome: list[Any] = []
    for _ in range(2):  # read again: the cached body (or the same error)
        try:
            outcome.append(await read(request))
        except Exception as exc:
            outcome.append((type(exc), str(exc)))
    state = {k: v for k, v in vars(request).items() if k != "_receive"}
    return (*outcome, state, len(queue))


@pytest.mark.parametrize("messages", BODIES)
async def test_body_is_starlettes(messages: list[Any]) -> None:
    assert await _read(fastpath._body, messages) == await _read(Request.body, messages)


HEADERS: list[list[tuple[bytes, bytes]]] = [
    [],
    [(b"content-type", b"application/json")],
    [(b"content-type", b"Application/JSON; charset=utf-8")],
    [(b"content-type", b"application/jsonx")],
    [(b"Content-Type", b"application/json")],  # not lowercase: starlette does not match it
    [(b"content-type", b"text/plain"), (b"content-type", b"application/json")],
    [(b"accept", GRAPHQL_RESPONSE.encode()), (b"content-type", b"application/json")],
    [(b"accept", b"application/json"), (b"accept", GRAPHQL_RESPONSE.encode())],
    [(b"Accept", GRAPHQL_RESPONSE.encode()), (b"content-type", b"application/json")],
    [(b"content-type", b"application/json\xe9"), (b"accept", b"*/*;q=0.5, \xe9")],
]


@pytest.mark.parametrize("headers", HEADERS)
@pytest.mark.parametrize("method", ["POST", "GET"])
def test_header_reads_are_starlettes(headers: list[tuple[bytes, bytes]], method: str) -> None:
    request = _request(headers, method)
    theirs = Headers(raw=headers)
    expected = (
        method == "POST"
        and theirs.get("content-type", "").partition(";")[0].strip().lower() == JSON
    )
    assert fastpath._is_json_post(request) is expected
    if method == "POST":
        assert request.scope[WANTS_KEY] is wants_graphql_response(theirs.get("accept", ""))


CT = (b"content-type", b"application/json")
GQL = (b"accept", GRAPHQL_RESPONSE.encode())
APPEND = (
    b'{"query": "mutation($i: AppendMemoryEventInput!) { appendMemoryEvent(input: $i) '
    b'{ event { id kind body scopeRef occurredAt } replayed errors { field code message } } }",'
    b' "variables": {"i": %s}}'
)
EVENTS = (
    b'{"query": "query($f: MemoryEventFilter, $n: Int) { memoryEvents(filter: $f, first: $n)'
    b' { edges { node { id kind body } } pageInfo { hasNextPage } } }", "variables": %s}'
)
ENTRY = (
    b'{"scope": "ENTITY", "scopeRef": "acme", "kind": "decision", "body": "budget \xe2\x9c\x93",'
    b' "occurredAt": "2026-03-01T12:30:00Z"}'
)
# (method, headers, body, whether the short path answers it)
REQUESTS: list[tuple[str, list[tuple[bytes, bytes]], bytes, bool]] = [
    ("POST", [CT], b'{"query": "{ __typename }"}', True),
    ("POST", [CT, GQL], b'{"query": "{ __typename }"}', True),
    ("POST", [CT, GQL], b'{"query": "{ nope }"}', True),
    ("POST", [CT], b'{"query": "{ nope }"}', True),
    ("POST", [CT], b'{"query": "{ __typename"}', True),
    ("POST", [CT], b"not json", True),  # its 400 from `parse_json`, as Strawberry's
    ("POST", [CT], b'{"query": 1}', True),
    ("POST", [CT], b'{"query": "{ __typename }", "operationName": true}', True),
    ("POST", [CT], b'{"query": "{ __typename }", "operationName": {"obj": "ect"}}', True),
    ("POST", [CT], b"[]", False),
    ("POST", [CT], b'[{"query": "{ __typename }"}]', False),
    ("POST", [CT], b'"q"', False),
    ("POST", [CT], b"{}", True),
    ("POST", [CT], b'{"query": "{ __typename }", "v": 1e400}', True),
    ("POST", [CT], b'{"query": "{ __typename }", "variables": [1]}', True),
    (
        "POST",
        [CT],
        b'{"query": "query A { __typename } query B { __typename }", "operationName": "B"}',
        True,
    ),
    ("POST", [CT], b'{"query": "query A { __typename }", "operationName": "C"}', True),
    ("POST", [CT], APPEND % ENTRY, True),
    ("POST", [CT, GQL], APPEND % ENTRY, True),
    ("POST", [CT], APPEND % b'{"scope": "ENTITY", "scopeRef": "", "kind": "k", "body": "b"}', True),
    ("POST", [CT, GQL], APPEND % b'{"scope": "NOPE", "kind": "k", "body": "b"}', True),
    ("POST", [CT], APPEND % b'{"scope": "NOPE", "kind": "k", "body": "b"}', True),
    ("POST", [CT], EVENTS % b'{"f": {"scope": "ENTITY", "scopeRef": "acme"}, "n": 5}', True),
    ("POST", [CT], EVENTS % b'{"f": {"search": "budget"}}', True),
    ("POST", [CT], EVENTS % b'{"n": -1}', True),
    (
        "POST",
        [(b"content-type", b"application/json; charset=utf-8")],
        b'{"query": "{ __typename }"}',
        True,
    ),
    ("POST", [(b"content-type", b"text/plain")], b'{"query": "{ __typename }"}', False),
    ("POST", [], b'{"query": "{ __typename }"}', False),
    ("POST", [CT], b'{"query": "mutation { __typename }"}', True),
    ("GET", [], b"", False),
    ("GET", [], b"mutation", False),
    ("PUT", [CT], b'{"query": "{ __typename }"}', False),
]

_ID = re.compile(rb"\b[a-z]{3}_[0-9a-z]{26}\b")


async def _answers(view: GraphQLView, db: Any, container: Container) -> list[Any]:
    ids: dict[bytes, bytes] = {}
    answers = []
    for method, headers, body, _ in REQUESTS:
        sent: list[Any] = []

        async def receive(body: bytes = body) -> Any:
            return {"type": "http.request", "body": body}

        async def send(message: Any, sent: list[Any] = sent) -> None:
            if message["type"] == "http.response.body":  # ids numbered in order
                message = {
                    **message,
                    "body": _ID.sub(
                        lambda m: ids.setdefault(m.group(), b"ID%03d" % len(ids)), message["body"]
                    ),
                }
            sent.append(message)

        query = b"query=" + body if method == "GET" and body else b""
        scope = {
            "type": "http",
            "method": method,
            "path": "/graphql",
            "headers": headers,
            "query_string": query,
            "state": {"db": db, "request_id": "rid", CONTAINER: container},
        }
        try:
            await view(scope, receive, send)
        except Exception as exc:
            sent.append((type(exc), str(exc)))
        # What the view left for the metrics (the operation's name and type).
        sent.append({k: v for k, v in scope["state"].items() if k != "db"})
        answers.append(sent)
    return answers


async def test_short_path_answers_as_the_stock_view(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: list[Any] = []
    stock_run = AsyncBaseHTTPView.run

    async def counted(self: Any, request: Any, *args: Any) -> Any:
        runs.append(request.scope["method"])
        return await stock_run(self, request, *args)

    monkeypatch.setattr(AsyncBaseHTTPView, "run", counted)
    answers = []
    taken = []
    for view_class in (ShortPathGraphQLView, GraphQLView):
        tenant = await make_tenant(container, view_class.__name__)
        async with container.tenants.lease(tenant.id) as db:
            runs.clear()
            answers.append(await _answers(view_class(SCHEMA, container.settings), db, container))
            taken.append(len(runs))
    for n, (ours, theirs) in enumerate(zip(*answers, strict=True)):
        assert ours == theirs, (n, REQUESTS[n][2][:60])
    # The stock view ran Strawberry's `run` for every request, the short path only for
    # those it leaves to it.
    assert taken == [sum(not short for *_, short in REQUESTS), len(REQUESTS)]
    statuses = {m[0]["status"] for m in answers[0] if isinstance(m[0], dict)}
    assert {200, 400, 405} <= statuses
