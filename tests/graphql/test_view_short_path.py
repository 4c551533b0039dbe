"""The view's hand-made pieces (app/edge/graphql_view.py) are what the library code they
stand for makes: the sub-response and the response (starlette's `Response.__init__` and
header edits), the body (starlette's `Request.body()`), the JSON decoding (json.loads),
the header reads (starlette's `Headers.get`); and the whole short path answers as
strawberry's own `run` does, message for message."""

import json
import math
import random
from typing import Any

import pytest
from starlette.background import BackgroundTask
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response

from app.deps import Container
from app.edge import graphql_view
from app.edge.graphql_view import GRAPHQL_RESPONSE, JSON, GraphQLView, wants_graphql_response
from app.graphql.schema import schema
from app.storage.tenants import TenantDb


def _request(headers: list[tuple[bytes, bytes]], method: str = "POST") -> Request:
    return Request({"type": "http", "method": method, "headers": headers, "path": "/graphql"})


def _vars(response: Response) -> dict[str, Any]:
    # `_headers` is the MutableHeaders a header edit leaves behind: made again from
    # `raw_headers` by the `headers` property when absent.
    return {k: v for k, v in vars(response).items() if k != "_headers"}


@pytest.mark.parametrize("accept", [b"", b"application/json", GRAPHQL_RESPONSE.encode()])
async def test_sub_response_is_strawberrys(container: Container, accept: bytes) -> None:
    view = GraphQLView(schema, container)
    request = _request([(b"accept", accept)] if accept else [])
    ours = await view.get_sub_response(request)
    theirs = Response(status_code=204)  # strawberry's, as the view's docstring says
    theirs.status_code = None  # type: ignore[assignment]
    theirs.media_type = GRAPHQL_RESPONSE if accept == GRAPHQL_RESPONSE.encode() else JSON
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
async def test_response_is_the_general_paths(
    container: Container, media: str, status: int | None, background: bool, data: Any
) -> None:
    view = GraphQLView(schema, container)
    subs = []
    for _ in range(2):
        sub = await view.get_sub_response(_request([]))
        sub.media_type = media
        sub.status_code = status  # type: ignore[assignment]
        if background:
            sub.background = BackgroundTask(lambda: None)
        subs.append(sub)
    subs[1].background = subs[0].background
    ours = view.create_response(data, subs[0])
    general = view._create_response(data, subs[1])
    assert type(ours) is type(general)
    assert _vars(ours) == _vars(general)
    assert ours.headers.raw == general.headers.raw
    assert await _messages(ours) == await _messages(general)


async def test_a_sub_response_with_headers_takes_the_general_path(container: Container) -> None:
    view = GraphQLView(schema, container)
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
        except Exception as exc:  # noqa: BLE001 - compared
            outcome.append((type(exc), str(exc)))
    state = {k: v for k, v in vars(request).items() if k != "_receive"}
    return (*outcome, state, len(queue))


@pytest.mark.parametrize("messages", BODIES)
async def test_body_is_starlettes(messages: list[Any]) -> None:
    assert await _read(graphql_view._body, messages) == await _read(Request.body, messages)


def _same(a: Any, b: Any) -> bool:
    """Equal, of the same types all the way down, floats to the bit, keys in order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    return bool(a == b)


TRICKY: list[bytes | str] = [
    b'{"query": "{ __typename }"}',
    b'{"a": 1, "a": 2, "b": {"c": [1, 2.5, -0.0, 1e2, 1E-7, true, false, null]}}',
    b'{"big": 123456789012345678901234567890, "neg": -9223372036854775809}',
    b'{"n": 9223372036854775807, "m": -9223372036854775808, "u": 18446744073709551615}',
    b'{"nan": NaN, "inf": Infinity, "ninf": -Infinity}',
    b'{"f": 1e400, "g": -1e400, "h": 4.9e-324, "i": 2.2250738585072014e-308}',
    b'{"f": 0.1, "g": 1.7976931348623157e308, "h": 123456789.123456789e-5}',
    b'{"s": "\\ud800", "t": "\\udc00\\ud800", "u": "\\u00e9\\u0000"}',
    b'{"s": "\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80"}',
    b"\xef\xbb\xbf{}",
    '{"utf16": 1}'.encode("utf-16"),
    '{"utf32": 1}'.encode("utf-32"),
    b'{"bad": "\xff"}',
    b'{"ctl": "a\tb"}',
    b"[" * 2000 + b"]" * 2000,
    b"[" * 600 + b"]" * 600,
    b"  \n\t{ }\r\n ",
    b"{} x",
    b"",
    b"1",
    b'"s"',
    b"[1,]",
    b"{'a': 1}",
    b"01",
    b"-",
    b"1.",
    b'{"a" 1}',
    b'{"id": "12345678901234567890", "n": 1}',
    b"[1234567890123456789, 12345678901234567890, -1234567890123456789, 99999999999999999999]",
    '{"s": "str, not bytes", "n": 12345678901234567890}',
]


def _decode(decode: Any, body: bytes) -> Any:
    try:
        return ("ok", decode(body))
    except RecursionError:
        return ("error", RecursionError)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        return ("error", type(exc), str(exc))


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randrange(-(2**70), 2**70) if rng.random() < 0.2 else rng.randrange(-999, 999)
    if kind == 2:
        return rng.uniform(-1e6, 1e6) * 10 ** rng.randrange(-300, 300)
    if kind == 3:
        return rng.choice([0.0, -0.0, 1.0, 5e-324, 1.7976931348623157e308, 0.1, 1 / 3])
    if kind in (4, 5):
        return "".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x80, 0x2FFFF)]))
                       for _ in range(rng.randrange(8)))  # fmt: skip
    if kind == 6:
        return [_random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {
        str(_random_json(rng, 4)): _random_json(rng, depth + 1) for _ in range(rng.randrange(4))
    }


async def test_decode_json_is_json_loads(container: Container) -> None:
    view = GraphQLView(schema, container)
    rng = random.Random(7)
    bodies = list(TRICKY)
    for _ in range(3000):
        text = json.dumps(_random_json(rng), ensure_ascii=rng.random() < 0.5)
        bodies.append(text.encode("utf-8", "surrogatepass"))
    for body in bodies:
        ours, theirs = _decode(view.decode_json, body), _decode(json.loads, body)
        assert ours[0] == theirs[0] and _same(ours[1:], theirs[1:]), body[:80]


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
    assert graphql_view._is_json_post(request) is expected
    if method == "POST":
        wanted = wants_graphql_response(theirs.get("accept", ""))
        assert request.scope[graphql_view._WANTS_KEY] is wanted


REQUESTS: list[tuple[str, list[tuple[bytes, bytes]], bytes]] = [
    ("POST", [(b"content-type", b"application/json")], b'{"query": "{ __typename }"}'),
    ("POST", [(b"content-type", b"application/json"), (b"accept", GRAPHQL_RESPONSE.encode())],
     b'{"query": "{ __typename }"}'),  # fmt: skip
    ("POST", [(b"content-type", b"application/json"), (b"accept", GRAPHQL_RESPONSE.encode())],
     b'{"query": "{ nope }"}'),  # fmt: skip
    ("POST", [(b"content-type", b"application/json")], b'{"query": "{ nope }"}'),
    ("POST", [(b"content-type", b"application/json")], b'{"query": "{ __typename"}'),
    ("POST", [(b"content-type", b"application/json")], b"not json"),
    ("POST", [(b"content-type", b"application/json")], b'{"query": 1}'),
    ("POST", [(b"content-type", b"application/json")], b"[]"),
    ("POST", [(b"content-type", b"application/json")], b'"q"'),
    ("POST", [(b"content-type", b"application/json")], b"{}"),
    ("POST", [(b"content-type", b"application/json")],
     b'{"query": "query($f: MemoryEventFilter!) { memoryEvents(filter: $f) '
     b'{ edges { node { id } } } }", "variables": {"f": {"scope": "NOPE"}}}'),  # fmt: skip
    ("POST", [(b"content-type", b"application/json")],
     b'{"query": "query A { __typename } query B { __typename }",'
     b' "operationName": "B"}'),  # fmt: skip
    ("POST", [(b"content-type", b"application/json")],
     b'{"query": "query A { __typename }", "operationName": "C"}'),  # fmt: skip
    ("POST", [(b"content-type", b"application/json")], b'{"query": "{ __typename }", "v": 1e400}'),
    ("GET", [], b""),
]  # fmt: skip


@pytest.mark.parametrize("method,headers,body", REQUESTS)
async def test_short_path_answers_as_strawberrys_run(
    container: Container, db: TenantDb, method: str, headers: Any, body: bytes
) -> None:
    answers = []
    for short in (True, False):
        view = GraphQLView(schema, container)
        view._short_path = short
        sent: list[Any] = []

        async def receive() -> Any:
            return {"type": "http.request", "body": body}

        async def send(message: Any, sent: list[Any] = sent) -> None:
            sent.append(message)

        scope = {
            "type": "http", "method": method, "path": "/graphql", "headers": headers,
            "query_string": b"query=%7B__typename%7D" if method == "GET" else b"",
            "state": {"db": db, "request_id": "rid"},
        }  # fmt: skip
        try:
            await view(scope, receive, send)
        except Exception as exc:  # noqa: BLE001 - compared (a body of another shape)
            sent.append((type(exc), str(exc)))
        # A batch is labelled for the metrics by the short path alone (before strawberry
        # refuses it).
        if body != b"[]":
            sent.append(scope["state"])
        answers.append(sent)
    assert answers[0] == answers[1]
