"""A scripted OpenAI-compatible gateway: a real HTTP/1.1 server on 127.0.0.1 for tests.

Each request gets the next scripted Reply, or `auto(request)` once the script is spent.
It keeps every request, with the exact bytes received, so tests can inspect what left us.
`python -m tests.support.gateway_stub --port P --latency S` serves compaction summaries
after a fixed latency in a process of its own (bench/compaction.py).
"""

import argparse
import asyncio
import contextlib
import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Reply:
    status: int = 200
    body: object = b""  # bytes as is, anything else as JSON
    headers: dict[str, str] = field(default_factory=dict)
    stall: bool = False  # never answer; wait until the client gives up
    delay: float = 0.0  # seconds before answering
    trickle: float = 0.0  # seconds between the body's bytes, sent one at a time
    length: bool = True  # send Content-Length; False: the body ends when the connection does


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    raw: bytes  # the request body exactly as it arrived
    json: dict[str, object]

    @property
    def messages(self) -> list[dict[str, str]]:
        messages = self.json["messages"]
        assert isinstance(messages, list)
        return messages

    @property
    def prompt(self) -> str:
        """The user message of a chat-completions request."""
        return self.messages[-1]["content"]


def ok(
    text: str = "Acme: Q1 2024\n\n- Renewal approved.",
    *,
    prompt_tokens: int = 42,
    completion_tokens: int = 7,
    finish_reason: str = "stop",
    **extra: object,
) -> Reply:
    body: dict[str, object] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "upstream-name",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    body.update(extra)
    return Reply(body=body)


_FIELD = re.compile(r"^(Scope|Period|Events): (.*)$", re.MULTILINE)


def summary_of(request: Received) -> Reply:
    """A good answer to a compaction request: a title naming scope and period, a body."""
    fields = dict(_FIELD.findall(request.prompt))
    return ok(
        f"{fields['Scope']}: {fields['Period']}\n\n- {fields['Events']} events, summarised.",
        prompt_tokens=100,
        completion_tokens=20,
    )


class Sleeps:
    """The gateway's sleep between retries, recorded instead of waited."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


class FakeGateway:
    """A minimal HTTP/1.1 responder: one request per connection, replies from `script`."""

    def __init__(
        self, auto: Callable[[Received], Reply] | None = None, *, keep: bool = True
    ) -> None:
        self.script: list[Reply] = []
        self.auto = auto
        self.keep = keep  # False: a long-running stub does not keep every request
        self.received: list[Received] = []
        self.port = 0
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self, port: int = 0) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    def _reply(self, request: Received) -> Reply:
        if self.script:
            return self.script.pop(0)
        return self.auto(request) if self.auto else Reply(status=599)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            request_line, *header_lines = head.strip().split("\r\n")
            method, path, _ = request_line.split(" ", 2)
            headers = {}
            for line in header_lines:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            request = Received(method, path, headers, body, json.loads(body or b"{}"))
            if self.keep:
                self.received.append(request)
            reply = self._reply(request)
            if reply.stall:
                await reader.read()  # returns at EOF, when the client times out and hangs up
                return
            if reply.delay:
                await asyncio.sleep(reply.delay)
            payload = (
                reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            )
            lines = [f"HTTP/1.1 {reply.status} X"]
            if reply.length:
                lines.append(f"Content-Length: {len(payload)}")
            lines += ["Connection: close", "Content-Type: application/json"]
            lines += [f"{k}: {v}" for k, v in reply.headers.items()]
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
            if not reply.trickle:
                writer.write(payload)
            for i in range(len(payload) if reply.trickle else 0):
                writer.write(payload[i : i + 1])
                await writer.drain()
                await asyncio.sleep(reply.trickle)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
            self._handlers.discard(task)


async def serve_summaries(port: int, latency: float) -> None:
    """Answer every compaction request with `summary_of` after `latency` seconds, forever."""
    gateway = FakeGateway(lambda r: dataclasses.replace(summary_of(r), delay=latency), keep=False)
    await gateway.start(port)
    try:
        await asyncio.Event().wait()
    finally:
        await gateway.stop()


def main() -> None:
    p = argparse.ArgumentParser(description="A gateway stub answering compaction requests.")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--latency", type=float, default=0.2, help="seconds before each answer")
    args = p.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_summaries(args.port, args.latency))


if __name__ == "__main__":
    main()
