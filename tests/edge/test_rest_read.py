"""How the REST edge reads a request body (app.edge.rest.parsing.read_body): whole, however the
server splits it into messages, kept for a later `request.body()`, and a client that left first is
Starlette's ClientDisconnect."""

import pytest
from starlette.requests import ClientDisconnect, Request
from starlette.types import Message

from app.edge.rest.parsing import read_body


def request_of(*messages: Message) -> Request:
    queue = list(messages)

    async def receive() -> Message:
        return queue.pop(0)

    return Request({"type": "http", "method": "POST", "headers": []}, receive)


async def test_a_body_in_several_messages_is_read_whole_and_kept() -> None:
    request = request_of(
        {"type": "http.request", "body": b'{"kind":', "more_body": True},
        {"type": "http.request", "body": b"", "more_body": True},
        {"type": "http.request", "body": b'"x"}', "more_body": False},
    )
    assert await read_body(request) == b'{"kind":"x"}'
    assert await request.body() == b'{"kind":"x"}'


async def test_an_empty_body_is_empty() -> None:
    assert await read_body(request_of({"type": "http.request"})) == b""


async def test_a_client_that_left_before_the_end_is_a_client_disconnect() -> None:
    request = request_of(
        {"type": "http.request", "body": b"{", "more_body": True}, {"type": "http.disconnect"}
    )
    with pytest.raises(ClientDisconnect):
        await read_body(request)
