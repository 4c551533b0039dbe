"""uvicorn's HTTP protocol with one socket write per response instead of two.

uvicorn writes a response's status line and headers when the app sends
`http.response.start`, then its body when the app sends `http.response.body`: two `send()`
system calls per response, each running the kernel's whole loopback/TCP path. Profiles of
the append benchmark put ~25% of the event loop's samples in those writes. Here the
connection's transport is wrapped so that everything written in one turn of the event loop
goes out in one write at the end of that turn (`loop.call_soon`): a response whose start
and body are sent back to back (every Starlette Response, every answer of the edge) is one
system call. Bytes and their order are unchanged; a write is delayed only to the end of
the current loop turn (a streaming response's later chunks go out as before, each in its
own turn). `jet-memory serve` runs uvicorn with `http=HTTP_PROTOCOL`.
"""

import asyncio
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

HTTP_PROTOCOL = "app.edge.server:HttpProtocol"


class WritesPerLoopTurn:
    """A transport whose writes made in one event-loop turn reach the socket as one.

    Everything but writing and closing is the wrapped transport's (flow control, extra
    info, pausing reads). Closing sends what is held first, as a transport's own close
    sends its buffer before it closes; abort drops it, as abort does. Backpressure
    (pause_writing) starts at the end of the turn that wrote past the high-water mark
    rather than within it: uvicorn's send only checks it between messages anyway.
    """

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._held is None:
            self._held = [bytes(data)]
            self._loop.call_soon(self.flush)
        else:
            self._held.append(bytes(data))

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def flush(self) -> None:
        held, self._held = self._held, None
        # A transport already closing (the peer left, or close() ran) takes no more bytes;
        # uvloop's raises once it is closed, which would surface in a loop callback (or in
        # uvicorn's connection_lost, which closes the transport again).
        if held and not self._transport.is_closing():
            self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    def get_write_buffer_size(self) -> int:
        held = sum(len(d) for d in self._held) if self._held else 0
        return held + self._transport.get_write_buffer_size()

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._held = None
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class HttpProtocol(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
    """uvicorn's own HTTP protocol (httptools when installed, as `--http auto` picks),
    writing through WritesPerLoopTurn."""

    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(WritesPerLoopTurn(transport, self.loop))
