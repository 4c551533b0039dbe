"""TenantBound with the body limit in the same frame (app/edge/auth.py), message by message:
which comes first of 401 and 413 (GraphQL: 413 first, REST: 401 first), every 413 with the
request id, a body found over the limit while the app reads it, after a response started;
a client that leaves before its body arrived (no answer, one log line, 499 in the metrics,
nothing stored); the request id added once; the headers read in one pass
(first sane X-Request-Id, first Authorization, last Content-Length); the key -> tenant
cache read without a coroutine."""

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import pytest
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from app.config import Settings
from app.deps import Container, build
from app.edge import request_ids
from app.edge.answers import GRAPHQL_ANSWERS
from app.edge.app import create_app
from app.edge.auth import TenantBound
from app.edge.lifespan import CONTAINER, GivenState
from app.edge.limits import MAX_BODY_BYTES
from app.logs import request_id_var, tenant_id_var
from app.services import tenants
from tests.conftest import TenantFixture, sample


def bound(
    app: Callable[[Scope, Receive, Send], Awaitable[None]], container: Container, **options: Any
) -> GivenState:
    """TenantBound around `app`, each request given `container` as the lifespan would."""
    return GivenState(TenantBound(app, **options), {CONTAINER: container})


LIMIT = MAX_BODY_BYTES
JSON = [(b"content-type", b"application/json")]
EVENT = b'{"scope":"entity","scopeRef":"a","kind":"k","body":"b"}'
TRIVIAL = b'{"query":"{ __typename }"}'
RANDOM_ID = re.compile(r"[0-9a-f]{32}")
PROBLEM_413 = {
    "type": "about:blank",
    "title": "Content Too Large",
    "status": 413,
    "detail": f"the request body is over the limit of {LIMIT} bytes",
    "errors": [
        {
            "field": None,
            "in": "body",
            "code": "TOO_LARGE",
            "message": f"the request body is over the limit of {LIMIT} bytes",
        }
    ],
}


def graphql_413(request_id: str) -> dict[str, Any]:
    return {
        "errors": [
            {
                "message": f"request body is over the limit of {LIMIT} bytes",
                "extensions": {"code": "TOO_LARGE", "requestId": request_id},
            }
        ]
    }


class Exchange:
    """One request to an ASGI app: every message it sent, and what escaped it."""

    def __init__(self, messages: list[Message], escaped: BaseException | None) -> None:
        self.messages = messages
        self.escaped = escaped

    @property
    def start(self) -> Message:
        [start] = [m for m in self.messages if m["type"] == "http.response.start"]
        return start

    @property
    def status(self) -> int:
        return int(self.start["status"])

    @property
    def headers(self) -> list[tuple[bytes, bytes]]:
        return [(bytes(k), bytes(v)) for k, v in self.start["headers"]]

    def header(self, name: bytes) -> list[bytes]:
        return [v for k, v in self.headers if k == name]

    @property
    def json(self) -> Any:
        return json.loads(b"".join(m.get("body", b"") for m in self.messages[1:]))


async def exchange(
    app: Callable[[Scope, Receive, Send], Awaitable[None]],
    path: str,
    headers: list[tuple[bytes, bytes]],
    chunks: list[bytes],
    *,
    method: str = "POST",
    root_path: str = "",
    send: Callable[[Message], Awaitable[None]] | None = None,
    disconnect: bool = False,
) -> Exchange:
    """`chunks` as the body; with `disconnect`, the client then closes the connection
    instead of finishing it (the last chunk says more_body)."""
    messages: list[Message] = []
    pending = list(chunks)
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": root_path + path,
        "raw_path": (root_path + path).encode(),
        "query_string": b"",
        "root_path": root_path,
        "headers": headers,
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }

    async def receive() -> Message:
        if not pending:
            await asyncio.sleep(0.01)
            return {"type": "http.disconnect"}
        body = pending.pop(0)
        return {"type": "http.request", "body": body, "more_body": bool(pending) or disconnect}

    async def record(message: Message) -> None:
        messages.append(message)
        if send is not None:
            await send(message)

    escaped = None
    try:
        await app(scope, receive, record)
    except Exception as exc:
        escaped = exc
    return Exchange(messages, escaped)


def auth(tenant: TenantFixture) -> list[tuple[bytes, bytes]]:
    return [(b"authorization", f"Bearer {tenant.key}".encode())]


def over_limit() -> list[bytes]:
    return [b" " * (1 << 20)] * (LIMIT // (1 << 20)) + [b" "]


# ---------------------------------------------------------------- order of 401 and 413


async def test_rest_a_request_without_a_key_is_401_whatever_its_declared_size(
    container: Container,
) -> None:
    app = create_app(container=container)
    r = await exchange(app, "/memory/events", [*JSON, (b"content-length", b"99999999999")], [])
    assert r.status == 401 and r.json["status"] == 401
    assert r.header(b"www-authenticate") == [b"Bearer"]
    assert len(r.header(b"x-request-id")) == 1


async def test_graphql_a_declared_body_over_the_limit_is_413_before_the_key(
    container: Container,
) -> None:
    app = create_app(container=container)
    headers = [*JSON, (b"content-length", b"99999999999"), (b"x-request-id", b"t-1")]
    r = await exchange(app, "/graphql", headers, [])
    assert r.status == 413 and r.json == graphql_413("t-1")
    data = json.dumps(graphql_413("t-1")).encode()
    assert r.headers == [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"x-request-id", b"t-1"),
    ]
    # Without a (sane) one of the client's, a new one.
    r = await exchange(app, "/graphql", headers[:-1], [])
    assert r.status == 413 and RANDOM_ID.fullmatch(r.header(b"x-request-id")[0].decode())


async def test_rest_a_declared_body_over_the_limit_is_a_413_problem_with_the_request_id(
    container: Container, tenant: TenantFixture
) -> None:
    app = create_app(container=container)
    headers = [
        *auth(tenant),
        *JSON,
        (b"content-length", str(LIMIT + 1).encode()),
        (b"x-request-id", b"t-2"),
    ]
    r = await exchange(app, "/memory/events", headers, [EVENT])
    assert r.status == 413 and r.json == {**PROBLEM_413, "requestId": "t-2"}
    assert [k for k, _ in r.headers] == [b"content-type", b"content-length", b"x-request-id"]
    assert r.header(b"x-request-id") == [b"t-2"]
    assert r.header(b"content-type") == [b"application/problem+json"]


@pytest.mark.parametrize("surface", ["rest", "graphql"])
async def test_a_declared_length_at_the_limit_or_not_a_number_is_not_refused(
    container: Container, tenant: TenantFixture, surface: str
) -> None:
    app = create_app(container=container)
    path, body = ("/memory/events", EVENT) if surface == "rest" else ("/graphql", TRIVIAL)
    for declared in [str(LIMIT).encode(), b"12x", b"-5"]:
        headers = [*auth(tenant), *JSON, (b"content-length", declared)]
        r = await exchange(app, path, headers, [body])
        assert r.status in (200, 201), declared


async def test_a_streamed_body_over_the_limit_is_413_on_each_surface(
    container: Container, tenant: TenantFixture
) -> None:
    app = create_app(container=container)
    headers = [*auth(tenant), *JSON, (b"x-request-id", b"t-3")]
    rest = await exchange(app, "/memory/events", headers, over_limit())
    assert rest.status == 413 and rest.json == {**PROBLEM_413, "requestId": "t-3"}
    assert rest.header(b"x-request-id") == [b"t-3"]
    graphql = await exchange(app, "/graphql", headers, over_limit())
    assert graphql.status == 413 and graphql.json == graphql_413("t-3")
    assert graphql.header(b"x-request-id") == [b"t-3"]
    # Exactly at the limit is read in full (and is then not JSON: a 400/422, not a 413).
    at_limit = [b" " * (1 << 20)] * (LIMIT // (1 << 20))
    assert (await exchange(app, "/memory/events", headers, at_limit)).status == 400
    assert (await exchange(app, "/graphql", headers, at_limit)).status == 400
    assert (request_id_var.get(), tenant_id_var.get()) == (None, None)


@pytest.mark.parametrize("limit_first", [False, True])
async def test_a_body_over_the_limit_after_the_response_started_keeps_that_response(
    container: Container, tenant: TenantFixture, limit_first: bool
) -> None:
    async def answers_then_reads(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 202, "headers": []})
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.body", "body": b"done"})

    app = bound(answers_then_reads, container, limit=10, limit_first=limit_first)
    r = await exchange(app, "/x", auth(tenant), [b"12345678", b"9012"])
    assert r.escaped is None and r.status == 202
    assert [m["type"] for m in r.messages] == ["http.response.start"]  # nothing after it
    assert len(r.header(b"x-request-id")) == 1


@pytest.mark.parametrize("limit_first", [False, True])
async def test_the_413_of_a_streamed_body_is_sent_within_the_request(
    container: Container, tenant: TenantFixture, limit_first: bool
) -> None:
    """Both ways, the request's id and tenant are in the logs' context (uvicorn's access
    line) and the 413 carries the id, once the lease is given back."""
    seen: list[tuple[str | None, str | None]] = []

    async def too_large(scope: Scope, send: Send, limit: int) -> None:
        seen.append((request_id_var.get(), tenant_id_var.get()))
        await JSONResponse({"limit": limit}, 413)(scope, _no_receive, send)

    async def reads(scope: Scope, receive: Receive, send: Send) -> None:
        while (await receive()).get("more_body"):
            pass
        await JSONResponse({})(scope, receive, send)

    app = bound(
        reads,
        container,
        answers=replace(GRAPHQL_ANSWERS, too_large=too_large),
        limit=10,
        limit_first=limit_first,
    )
    r = await exchange(app, "/x", [*auth(tenant), (b"x-request-id", b"t-4")], [b"1" * 8, b"2" * 3])
    assert r.status == 413 and r.json == {"limit": 10}
    assert seen == [("t-4", tenant.id)] and r.header(b"x-request-id") == [b"t-4"]
    assert (request_id_var.get(), tenant_id_var.get()) == (None, None)


async def _no_receive() -> Message:
    raise AssertionError("not read")


# ------------------------------------------------------------------------ request ids


@pytest.mark.parametrize("path", ["/memory/events", "/graphql"])
async def test_the_first_sane_request_id_the_first_key_and_the_last_length_count(
    container: Container, tenant: TenantFixture, path: str
) -> None:
    app = create_app(container=container)
    body = EVENT if path == "/memory/events" else TRIVIAL
    headers = [
        *JSON,
        (b"x-request-id", b"bad id"),
        *auth(tenant),
        (b"authorization", b"Bearer jm_not-this-one"),
        (b"x-request-id", b"good-1"),
        (b"x-request-id", b"good-2"),
        (b"content-length", str(LIMIT + 1).encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    r = await exchange(app, path, headers, [body])
    assert r.status in (200, 201) and r.header(b"x-request-id") == [b"good-1"]
    # The first Authorization header decides, even when a later one would be valid.
    headers = [*JSON, (b"authorization", b"Bearer jm_nope"), *auth(tenant)]
    assert (await exchange(app, path, headers, [body])).status == 401
    # The last Content-Length decides whether the body is refused unread.
    headers = [
        *auth(tenant),
        *JSON,
        (b"content-length", b"1"),
        (b"content-length", str(LIMIT + 1).encode()),
    ]
    assert (await exchange(app, path, headers, [body])).status == 413
    only_bad = [*auth(tenant), *JSON, (b"x-request-id", b"bad id")]
    r = await exchange(app, path, only_bad, [body])
    assert RANDOM_ID.fullmatch(r.header(b"x-request-id")[0].decode())


async def test_the_request_id_is_added_once_and_an_apps_own_is_kept(
    container: Container, tenant: TenantFixture
) -> None:
    async def own_id(scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"x-request-id", b"the-apps"), (b"content-length", b"0")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    response = JSONResponse({"ok": True})

    async def starlette(scope: Scope, receive: Receive, send: Send) -> None:
        await response(scope, receive, send)

    r = await exchange(bound(own_id, container), "/x", auth(tenant), [])
    assert r.headers == [(b"x-request-id", b"the-apps"), (b"content-length", b"0")]
    headers = [*auth(tenant), (b"x-request-id", b"t-5")]
    r = await exchange(bound(starlette, container), "/x", headers, [])
    assert r.headers == [*response.raw_headers, (b"x-request-id", b"t-5")]
    assert b"x-request-id" not in dict(response.raw_headers)  # the response's own list kept


@pytest.mark.parametrize("path", ["/memory/events", "/graphql"])
async def test_the_request_id_is_added_once_with_or_without_a_root_path(
    container: Container, tenant: TenantFixture, path: str
) -> None:
    app = create_app(container=container)
    body = EVENT if path == "/memory/events" else TRIVIAL
    headers = [*auth(tenant), *JSON, (b"x-request-id", b"t-6")]
    direct = await exchange(app, path, headers, [body])
    stacked = await exchange(app, path, headers, [body], root_path="/api")
    for r in (direct, stacked):
        assert r.status in (200, 201) and r.header(b"x-request-id") == [b"t-6"]
    assert [k for k, _ in direct.headers] == [k for k, _ in stacked.headers]


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize("limit_first", [False, True])
async def test_an_error_after_the_response_started_escapes_logged_and_contexts_reset(
    container: Container,
    tenant: TenantFixture,
    limit_first: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def fails_late(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise RuntimeError("late")

    async def fails_early(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("early")

    headers = [*auth(tenant), (b"x-request-id", b"t-7")]
    with caplog.at_level(logging.ERROR, logger="app.edge.auth"):
        late = await exchange(
            bound(fails_late, container, limit=10, limit_first=limit_first),
            "/x",
            headers,
            [],
        )
        early = await exchange(
            bound(fails_early, container, limit=10, limit_first=limit_first),
            "/x",
            headers,
            [],
        )
    assert isinstance(late.escaped, RuntimeError) and late.status == 200
    assert early.escaped is None and early.status == 500
    assert early.json["errors"][0]["extensions"] == {
        "code": "INTERNAL_SERVER_ERROR",
        "requestId": "t-7",
    }
    assert [r.getMessage() for r in caplog.records] == ["unhandled error (request t-7)"] * 2
    assert (request_id_var.get(), tenant_id_var.get()) == (None, None)


# ------------------------------------------------------------- a client that leaves

GONE = "client disconnected before the body was read"
APPEND_GQL = (
    b'{"query":"mutation { appendMemoryEvent(input: {scope: ENTITY, scopeRef: '
    b'\\"a\\", kind: \\"k\\", body: \\"b\\"}) { event { id } } }"}'
)
EVENTS = b'{"query":"{ memoryEvents { edges { cursor } } }"}'


@pytest.mark.parametrize(
    ("path", "body"),
    [("/memory/events", EVENT), ("/memory/events", b"[" + EVENT + b"]"), ("/graphql", APPEND_GQL)],
    ids=["rest", "rest-batch", "graphql"],
)
# 10 bytes, or the whole JSON but not the end of the body its Content-Length declared.
@pytest.mark.parametrize("whole", [False, True], ids=["10-bytes", "whole-json"])
@pytest.mark.parametrize("root_path", ["", "/api"], ids=["direct", "stack"])
async def test_a_client_that_leaves_before_its_body_arrived_is_a_499_and_stores_nothing(
    container: Container,
    tenant: TenantFixture,
    caplog: pytest.LogCaptureFixture,
    path: str,
    body: bytes,
    whole: bool,
    root_path: str,
) -> None:
    """Not an error of ours: no traceback, one INFO line with the request id and tenant,
    no answer (nobody is left to read it), 499 in the metrics (not a 500)."""
    app = create_app(container=container)
    series = {"route": path, "method": "POST"}
    before = {s: sample("jet_http_requests_total", **series, status=s) for s in ("499", "500")}
    operation = {"operation": "anonymous", "type": "unknown", "status": "499"}
    operations = sample("jet_graphql_operations_total", **operation)
    headers = [
        *auth(tenant),
        *JSON,
        (b"content-length", str(len(body) + 990).encode()),
        (b"x-request-id", b"gone-1"),
    ]
    with caplog.at_level(logging.DEBUG):
        r = await exchange(
            app, path, headers, [body if whole else body[:10]], disconnect=True, root_path=root_path
        )
    assert r.escaped is None and r.messages == []
    assert [(s, sample("jet_http_requests_total", **series, status=s)) for s in before] == [
        ("499", before["499"] + 1),
        ("500", before["500"]),
    ]
    assert sample("jet_graphql_operations_total", **operation) == operations  # none received
    assert not [rec for rec in caplog.records if rec.levelno >= logging.WARNING]
    [line] = [rec for rec in caplog.records if GONE in rec.getMessage()]
    assert line.levelno == logging.INFO and line.exc_info is None and line.name == "app.edge.auth"
    sent = len(body) if whole else 10
    declared = len(body) + 990
    assert line.getMessage() == (
        f"{GONE}: POST {path}, {sent} of {declared} bytes read (request gone-1, tenant {tenant.id})"
    )
    assert (request_id_var.get(), tenant_id_var.get()) == (None, None)
    stored = await exchange(app, "/graphql", [*auth(tenant), *JSON], [EVENTS])
    assert stored.json == {"data": {"memoryEvents": {"edges": []}}}


# ---------------------------------------------------------------------- the key cache


async def test_a_verified_key_is_answered_from_the_cache_until_its_ttl(
    container: Container, tenant: TenantFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    auth_ = container.auth
    assert auth_.cached(tenant.key) is None  # not verified yet
    assert auth_.cached("jm_unknown") is None and auth_.cached("other") is None
    assert await auth_.tenant_for(tenant.key) == tenant.id
    lookups = 0
    real = container.control.key_by_hash

    async def counted(digest: str) -> Any:
        nonlocal lookups
        lookups += 1
        return await real(digest)

    monkeypatch.setattr(container.control, "key_by_hash", counted)
    assert auth_.cached(tenant.key) == tenant.id
    app = create_app(container=container)
    for _ in range(3):
        assert (await exchange(app, "/graphql", [*auth(tenant), *JSON], [TRIVIAL])).status == 200
    assert lookups == 0
    import app.services.tenants as tenants_module

    later = tenants_module.time.monotonic() + container.settings.auth_cache_seconds + 1
    monkeypatch.setattr(tenants_module.time, "monotonic", lambda: later)
    assert auth_.cached(tenant.key) is None  # expired: tenant_for asks the database again
    assert (await exchange(app, "/graphql", [*auth(tenant), *JSON], [TRIVIAL])).status == 200
    assert lookups == 1


# ------------------------------------------------------------------- the hot endpoints


async def test_a_restarted_lifespan_is_served_with_its_new_container(settings: Settings) -> None:
    """/graphql and the REST resources answer with the container of the running lifespan
    (they return TenantBound's coroutine rather than being one: a closed container from
    the lifespan before would fail these requests), and GraphiQL's page needs no key."""
    app = create_app(settings)
    for i in range(2):
        # The state a server would copy into each request's scope (GivenState does it here).
        async with app.router.lifespan_context(app) as state:
            assert state is not None  # the app's lifespan yields its state
            served = GivenState(app, state)
            other = await build(settings)  # the same databases, another container
            try:
                _, issued = await tenants.create_tenant(other.control, other.tenants, f"t{i}")
            finally:
                await other.aclose()
            headers = [(b"authorization", f"Bearer {issued.secret}".encode()), *JSON]
            assert (await exchange(served, "/graphql", headers, [TRIVIAL])).status == 200
            assert (await exchange(served, "/memory/events", headers, [EVENT])).status == 201
            page = await exchange(served, "/graphql", [(b"accept", b"text/html")], [], method="GET")
            assert page.status == 200 and page.header(b"content-type")[0].startswith(b"text/html")


def test_new_request_ids_are_32_hex_digits_of_128_random_bits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for n in [0, 1, 0xABC, 2**64, 2**127 + 5, 2**128 - 1]:
        monkeypatch.setattr(request_ids.random, "getrandbits", lambda bits, n=n: n)
        assert request_ids.new_request_id() == f"{n:032x}"
    monkeypatch.undo()
    ids = {request_ids.new_request_id() for _ in range(1000)}
    assert len(ids) == 1000 and all(RANDOM_ID.fullmatch(i) for i in ids)
