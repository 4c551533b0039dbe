"""The REST edge's own shortcuts produce what Starlette's general code would: a JSON
response built directly (app/edge/rest/encoding.py `OrjsonResponse`), two request headers read in
one pass (`two_headers`), the Content-Type check."""

from typing import Any

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse

from app.edge.rest.encoding import OrjsonResponse, dumps
from app.edge.rest.parsing import require_json_type, two_headers
from app.edge.rest.problems import HttpProblem
from tests.conftest import TenantFixture

CONTENTS: list[Any] = [{"a": 1, "é": "ü", "n": None}, [], "x", 0, None, {"items": [1.5, True]}]


class StarlettesOwn(JSONResponse):
    """What `OrjsonResponse` was: Starlette's JSONResponse with orjson's rendering."""

    def render(self, content: Any) -> bytes:
        return dumps(content)


HEADERS = [
    None,
    {},
    {"Location": "/memory/x", "ETag": '"3"'},
    {"Content-Type": "text/plain"},
    {"content-length": "1"},
]


@pytest.mark.parametrize("status", [200, 201, 204, 304, 101, 404, 500])
@pytest.mark.parametrize("headers", HEADERS)
def test_a_json_response_is_starlettes_own(status: int, headers: dict[str, str] | None) -> None:
    for content in CONTENTS:
        ours = OrjsonResponse(content, status, headers)
        theirs = StarlettesOwn(content, status, headers=dict(headers or {}))
        assert vars(ours) == vars(theirs)
        assert ours.media_type == theirs.media_type and ours.charset == theirs.charset
        assert type(ours.raw_headers) is list  # the edge appends X-Request-Id to it


def scope_with(headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {"type": "http", "method": "POST", "path": "/", "headers": headers}


@pytest.mark.parametrize(
    "headers",
    [
        [],
        [(b"content-type", b"application/json")],
        [(b"idempotency-key", b"k1"), (b"content-type", b"a"), (b"content-type", b"b")],
        [(b"idempotency-key", b"k\xe91"), (b"idempotency-key", b"k2"), (b"x", b"y")],
        [(b"content-type", b""), (b"idempotency-key", b"")],
    ],
)
def test_two_headers_read_at_once_are_what_request_headers_gives(
    headers: list[tuple[bytes, bytes]],
) -> None:
    request = Request(scope_with(list(headers)))
    expected = (request.headers.get("content-type"), request.headers.get("idempotency-key"))
    assert two_headers(scope_with(headers), b"content-type", b"idempotency-key") == expected


@pytest.mark.parametrize(
    ("ctype", "ok"),
    [
        ("application/json", True),
        ("Application/JSON ; foo=bar", True),
        ("application/json; charset=utf-8", True),
        ('application/json; charset="UTF8"', True),
        ("application/json;charset=latin-1", False),
        ("application/json; CHARSET = iso-8859-1", False),
        ("text/plain", False),
        ("", False),
        (None, False),
    ],
)
def test_the_content_type_check(ctype: str | None, ok: bool) -> None:
    if ok:
        require_json_type(ctype)
    else:
        with pytest.raises(HttpProblem) as raised:
            require_json_type(ctype)
        assert raised.value.status == 415


async def test_an_append_reads_the_first_of_repeated_headers(
    client: httpx.AsyncClient, tenant: TenantFixture
) -> None:
    event = b'{"scope":"entity","scopeRef":"a","kind":"k","body":"b"}'
    headers = [
        (b"authorization", f"Bearer {tenant.key}".encode()),
        (b"content-type", b"application/json"),
        (b"content-type", b"text/plain"),
        (b"idempotency-key", b"first"),
        (b"idempotency-key", b"second"),
    ]
    r = await client.post("/memory/events", content=event, headers=headers)
    assert r.status_code == 201
    again = await client.post("/memory/events", content=event, headers=headers)
    assert again.status_code == 200 and again.json() == r.json()
    headers[1], headers[2] = headers[2], headers[1]
    assert (await client.post("/memory/events", content=event, headers=headers)).status_code == 415
