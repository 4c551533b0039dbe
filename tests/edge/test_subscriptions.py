"""The websocket at /graphql held to its bounds, against a real uvicorn: sockets past the
per-key and per-process caps are closed with 1013 and a reason naming the cap (and a slot
freed is taken again), a socket that holds nothing is closed once idle (pings do not keep
it), one holding a subscription is not; malformed messages close it with 4400; and a
client that leaves while an answer is sent to it is no error in the log."""

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import pytest
from uvicorn.protocols.utils import ClientDisconnected

from app.config import Settings
from app.deps import Container
from app.edge.app import create_app
from app.services import events
from app.services.records import EventIn, Scope
from tests.conftest import TenantFixture, make_tenant
from tests.support.graphql_ws import WAIT_SECONDS, graphql_socket, served

# Short, for the idle test; long enough that a socket's first messages arrive within it
# on a loaded machine (no test asserts a time).
IDLE_SECONDS = 2.0
SUBSCRIBE = "subscription($after: ID) { memoryChanged(after: $after) { type objectId } }"


@pytest.fixture
def settings(request: pytest.FixtureRequest, tmp_path: Path, database_url: str | None) -> Settings:
    """conftest's, with small bounds: 2 sockets per key, 3 per process; idle after the
    test's parameter (seconds), else the default."""
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        data_dir=tmp_path / "data",
        database_url=database_url,
        websockets_per_key=2,
        websockets_per_process=3,
        websocket_idle_seconds=getattr(request, "param", 60),
    )


@pytest.fixture
async def base_url(container: Container) -> AsyncIterator[str]:
    async with served(create_app(container=container)) as url:
        yield url


@pytest.fixture
def no_errors(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """After the test: no ERROR record and no traceback in the log."""
    caplog.set_level(logging.INFO)
    yield caplog
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    assert not [r for r in caplog.records if r.exc_info], caplog.text


async def test_sockets_past_the_per_key_cap_are_closed_with_1013(
    base_url: str, container: Container, tenant: TenantFixture, no_errors: Any
) -> None:
    other = await make_tenant(container, "globex")
    async with contextlib.AsyncExitStack() as held:
        for _ in range(2):
            await held.enter_async_context(graphql_socket(base_url, tenant.key))
        async with graphql_socket(base_url) as third:
            await third.send(
                {"type": "connection_init", "payload": {"authorization": f"Bearer {tenant.key}"}}
            )
            code, reason = await third.closed()
        assert (code, reason) == (1013, "an API key holds at most 2 open websockets per server")
        # Another key has its own share.
        async with graphql_socket(base_url, other.key) as theirs:
            assert await theirs.execute("{ __typename }") == {"data": {"__typename": "Query"}}
        # A socket of the key that closes frees its slot.
        await held.aclose()
    async with graphql_socket(base_url, tenant.key) as again:
        assert await again.execute("{ __typename }") == {"data": {"__typename": "Query"}}


async def test_sockets_past_the_per_process_cap_are_closed_as_they_open(
    base_url: str, container: Container, tenant: TenantFixture, no_errors: Any
) -> None:
    other = await make_tenant(container, "globex")
    async with (
        graphql_socket(base_url, tenant.key),
        graphql_socket(base_url, other.key),
        graphql_socket(base_url) as silent,  # no connection_init yet: counted all the same
        graphql_socket(base_url) as fourth,
    ):
        code, reason = await fourth.closed()
        assert (code, reason) == (1013, "this server holds at most 3 open websockets; retry later")
        assert await silent.init(tenant.key) == {"type": "connection_ack"}
    async with graphql_socket(base_url, tenant.key) as again:
        assert await again.execute("{ __typename }") == {"data": {"__typename": "Query"}}


@pytest.mark.parametrize("settings", [IDLE_SECONDS], indirect=True)
async def test_a_socket_that_holds_nothing_is_closed_once_idle(
    base_url: str, tenant: TenantFixture, no_errors: Any
) -> None:
    async with graphql_socket(base_url, tenant.key) as subscribed:
        await subscribed.start(SUBSCRIBE)
        async with graphql_socket(base_url, tenant.key) as idle:
            # Pings answered are not activity: the socket holds nothing and is closed.
            for _ in range(3):
                await idle.send({"type": "ping"})
                assert await idle.receive() == {"type": "pong"}
            code, reason = await idle.closed()
        assert (code, reason) == (1000, f"idle for {IDLE_SECONDS:g} s")
        # The idle time has passed for the subscribed socket too: it is still open.
        await subscribed.send({"type": "ping"})
        assert await subscribed.receive() == {"type": "pong"}
    # A socket that never sends connection_init is closed by the same rule.
    async with graphql_socket(base_url) as silent:
        assert (await silent.closed())[0] == 1000


@pytest.mark.parametrize(
    "message",
    [
        5,
        [],
        "text",
        {"id": 1, "type": "subscribe", "payload": {"query": "{ a }"}},
        {"id": "1", "type": "subscribe", "payload": "{ a }"},
        {"id": "1", "type": "subscribe"},
    ],
)
async def test_a_malformed_message_closes_the_socket_with_4400(
    base_url: str, tenant: TenantFixture, message: object, no_errors: Any
) -> None:
    async with graphql_socket(base_url, tenant.key) as socket:
        await socket.send(message)
        assert (await socket.closed())[0] == 4400


class LeavingClient:
    """The ASGI side of a graphql-transport-ws client that sends `messages` and leaves while
    the server sends it its first `next`: that send fails as uvicorn's does once the peer
    has gone, and only then does the server read the disconnect."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.incoming.put_nowait({"type": "websocket.connect"})
        for message in messages:
            self.incoming.put_nowait({"type": "websocket.receive", "text": json.dumps(message)})
        self.sent: list[MutableMapping[str, Any]] = []

    async def receive(self) -> dict[str, Any]:
        return await self.incoming.get()

    async def send(self, message: MutableMapping[str, Any]) -> None:
        if message["type"] == "websocket.send" and '"next"' in message.get("text", ""):
            self.incoming.put_nowait({"type": "websocket.disconnect", "code": 1006})
            raise ClientDisconnected
        self.sent.append(message)


@pytest.mark.parametrize("kind", ["query", "subscription"])
async def test_a_client_that_leaves_while_an_answer_is_sent_is_no_error(
    container: Container, tenant: TenantFixture, kind: str, no_errors: pytest.LogCaptureFixture
) -> None:
    async with container.tenants.lease(tenant.id) as db:
        event = EventIn(scope=Scope.ENTITY, scope_ref="ent_acme", kind="note", body="hello")
        await events.append_event(db, event)
    query, variables = ("{ __typename }", {}) if kind == "query" else (SUBSCRIBE, {"after": "0"})
    client = LeavingClient(
        [
            {"type": "connection_init", "payload": {"authorization": f"Bearer {tenant.key}"}},
            {"id": "1", "type": "subscribe", "payload": {"query": query, "variables": variables}},
        ]
    )
    scope = {
        "type": "websocket",
        "path": "/graphql",
        "raw_path": b"/graphql",
        "root_path": "",
        "scheme": "ws",
        "query_string": b"",
        "headers": [],
        "client": ("127.0.0.1", 5555),
        "server": ("127.0.0.1", 80),
        "subprotocols": ["graphql-transport-ws"],
        "asgi": {"version": "3.0"},
        "state": {},
    }
    app = create_app(container=container)
    await asyncio.wait_for(app(scope, client.receive, client.send), WAIT_SECONDS)
    assert [m["type"] for m in client.sent][:2] == ["websocket.accept", "websocket.send"]
    assert "websocket closed by the client while an answer was being sent to it" in (no_errors.text)
