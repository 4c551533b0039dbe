"""app.edge.server: writes of one event-loop turn reach the socket as one write, in order,
and uvicorn serving through it answers as uvicorn does (keep-alive, HEAD, Connection:
close, streamed and large bodies)."""

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from app.edge.server import HTTP_PROTOCOL, WritesPerLoopTurn


class FakeTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = self.aborted = False

    def write(self, data: bytes) -> None:
        assert not self.closed
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def abort(self) -> None:
        self.aborted = True

    def get_write_buffer_size(self) -> int:
        return 7

    def get_extra_info(self, name: str) -> str:
        return f"info {name}"


async def turn() -> None:
    await asyncio.sleep(0)


async def test_writes_of_one_turn_are_one_write_in_order() -> None:
    real = FakeTransport()
    t = WritesPerLoopTurn(real, asyncio.get_running_loop())  # type: ignore[arg-type]
    t.write(b"HTTP/1.1 200 OK\r\n\r\n")
    t.writelines([b"he", bytearray(b"ll"), memoryview(b"o")])
    assert real.writes == [] and t.get_write_buffer_size() == 19 + 5 + 7
    await turn()
    assert real.writes == [b"HTTP/1.1 200 OK\r\n\r\nhello"]
    t.write(b"next turn")
    await turn()
    t.write(b"and the next")
    await turn()
    assert real.writes[1:] == [b"next turn", b"and the next"]
    assert t.get_extra_info("peername") == "info peername"  # the rest is the transport's


async def test_close_sends_what_is_held_first_and_abort_drops_it() -> None:
    real = FakeTransport()
    t = WritesPerLoopTurn(real, asyncio.get_running_loop())  # type: ignore[arg-type]
    t.write(b"last words")
    t.close()
    assert real.writes == [b"last words"] and real.closed
    await turn()  # the scheduled flush finds nothing more to send
    assert real.writes == [b"last words"]

    real = FakeTransport()
    t = WritesPerLoopTurn(real, asyncio.get_running_loop())  # type: ignore[arg-type]
    t.write(b"never sent")
    t.abort()
    await turn()
    assert real.writes == [] and real.aborted


async def test_nothing_is_written_to_a_transport_that_closed_meanwhile() -> None:
    real = FakeTransport()
    t = WritesPerLoopTurn(real, asyncio.get_running_loop())  # type: ignore[arg-type]
    t.write(b"too late")
    real.close()  # the peer went away in this same turn
    await turn()  # FakeTransport.write would fail the test
    t.close()
    assert real.writes == []


# ---------------------------------------------------------------------- a real server

BIG = b"x" * (3 * 1024 * 1024)  # past the transport's high-water mark: flow control


async def hello(_: Request) -> Response:
    return PlainTextResponse("hello", headers={"x-extra": "1"})


async def big(_: Request) -> Response:
    return Response(BIG, media_type="application/octet-stream")


async def stream(_: Request) -> Response:
    async def chunks() -> AsyncIterator[bytes]:
        for i in range(3):
            await asyncio.sleep(0.01)
            yield f"chunk {i};".encode()

    return StreamingResponse(chunks(), media_type="text/plain")


async def echo(request: Request) -> Response:
    return Response(await request.body(), media_type="application/octet-stream")


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, uvicorn.Server]]:
    app = Starlette(
        routes=[
            Route("/hello", hello, methods=["GET"]),
            Route("/big", big),
            Route("/stream", stream),
            Route("/echo", echo, methods=["POST"]),
        ]
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config: Any = uvicorn.Config(
        app, host="127.0.0.1", port=port, http=HTTP_PROTOCOL, log_level="warning",
        lifespan="off",
    )  # fmt: skip
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    for _ in range(500):  # server.started has no event to wait on
        if server.started:
            break
        await asyncio.sleep(0.01)  # noqa: ASYNC110
    try:
        yield f"http://127.0.0.1:{port}", server
    finally:
        server.should_exit = True
        await task


async def test_uvicorn_serves_through_it(served: tuple[str, uvicorn.Server]) -> None:
    base_url, server = served
    async with httpx.AsyncClient(base_url=base_url) as c:
        await c.get("/hello")
        [connection] = server.server_state.connections
        assert isinstance(connection.transport, WritesPerLoopTurn)
        for _ in range(3):  # one keep-alive connection, several requests
            r = await c.get("/hello")
            assert r.status_code == 200 and r.text == "hello" and r.headers["x-extra"] == "1"
            assert r.headers["content-length"] == "5" and "date" in r.headers
        r = await c.head("/hello")
        assert r.status_code == 200 and r.content == b"" and r.headers["content-length"] == "5"
        r = await c.get("/hello", headers={"Connection": "close"})
        assert r.text == "hello" and r.headers["connection"] == "close"
        r = await c.get("/big")
        assert r.content == BIG
        r = await c.get("/stream")
        assert r.text == "chunk 0;chunk 1;chunk 2;"
        r = await c.post("/echo", content=BIG)
        assert r.content == BIG
        r = await c.get("/hello", headers={"Expect": "100-continue"})
        assert r.text == "hello"
