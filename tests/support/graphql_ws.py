"""An app under a real uvicorn in the test's event loop, and a small graphql-transport-ws
client over the `websockets` package (the wire as gql, urql or graphql-ws speak it)."""

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
import websockets
from starlette.types import ASGIApp
from websockets.asyncio.client import ClientConnection

# Long enough for a loaded machine; a test waits this long only when something is wrong.
WAIT_SECONDS = 30


@contextlib.asynccontextmanager
async def served(app: ASGIApp) -> AsyncIterator[str]:
    """`app` (its lifespan too) under uvicorn on 127.0.0.1 and a free port: its base URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    for _ in range(WAIT_SECONDS * 100):  # server.started has no event to wait on
        if server.started or task.done():
            break
        await asyncio.sleep(0.01)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


class GraphQLSocket:
    """One graphql-transport-ws connection: `start` an operation, read its messages."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self._ids = 0

    async def send(self, message: object) -> None:
        await self.ws.send(json.dumps(message))

    async def receive(self) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(await asyncio.wait_for(self.ws.recv(), WAIT_SECONDS))
        return message

    async def init(self, key: str) -> dict[str, Any]:
        """connection_init with `key`: the server's answer (connection_ack when accepted)."""
        await self.send({"type": "connection_init", "payload": {"authorization": f"Bearer {key}"}})
        return await self.receive()

    async def start(self, query: str, variables: dict[str, Any] | None = None) -> str:
        """Send a subscribe message for `query`: its operation id."""
        self._ids += 1
        op_id = str(self._ids)
        payload = {"query": query, "variables": variables or {}}
        await self.send({"id": op_id, "type": "subscribe", "payload": payload})
        return op_id

    async def execute(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """A query or mutation: its `next` message's payload, or {"error": <payload>} for an
        `error` message. Checks the operation then completes."""
        op_id = await self.start(query, variables)
        first = await self.receive()
        assert first["id"] == op_id, first
        if first["type"] == "error":
            return {"error": first["payload"]}
        assert first["type"] == "next", first
        assert await self.receive() == {"id": op_id, "type": "complete"}
        payload: dict[str, Any] = first["payload"]
        return payload

    async def closed(self) -> tuple[int, str]:
        """Wait for the server to close the socket: (code, reason)."""
        with contextlib.suppress(websockets.ConnectionClosed):
            while True:
                message = await asyncio.wait_for(self.ws.recv(), WAIT_SECONDS)
                assert json.loads(message)["type"] in ("pong", "next", "complete"), message
        frame = self.ws.protocol.close_rcvd
        assert frame is not None, "closed without a close frame"
        return frame.code, frame.reason


@contextlib.asynccontextmanager
async def graphql_socket(base_url: str, key: str | None = None) -> AsyncIterator[GraphQLSocket]:
    """A websocket to base_url's /graphql; with `key`, connection_init done and acked."""
    url = base_url.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(url, subprotocols=["graphql-transport-ws"]) as ws:  # type: ignore[list-item]
        client = GraphQLSocket(ws)
        if key is not None:
            assert await client.init(key) == {"type": "connection_ack"}
        yield client
