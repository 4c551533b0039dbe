"""The address check before each delivery (app/adapters/webhook_sender.py): addresses need
no lookup, a name's lookup is kept a few seconds, and a name that moves to a refused
address is refused once that time is up."""

import asyncio
import ipaddress
import socket
from typing import Any

import pytest

from app.adapters import webhook_sender
from app.adapters.webhook_sender import AddressRefused, check_address

LOCAL = [ipaddress.ip_network("127.0.0.1/32")]


class Resolver:
    """The event loop's getaddrinfo, answering from a table and counting the lookups."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.calls = 0

    async def __call__(self, host: str, port: Any, **kwargs: Any) -> list[Any]:
        self.calls += 1
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (self.answers[host], 0))]


@pytest.fixture
async def resolver(monkeypatch: pytest.MonkeyPatch) -> Resolver:
    fake = Resolver({"hooks.example.com": "93.184.215.14"})
    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", fake)
    monkeypatch.setattr(webhook_sender, "_resolved", {})
    return fake


async def test_an_address_is_checked_without_a_lookup(resolver: Resolver) -> None:
    await check_address("http://127.0.0.1:9/hook", LOCAL)
    with pytest.raises(AddressRefused, match="loopback, link-local or private"):
        await check_address("http://10.0.0.7/hook", LOCAL)
    with pytest.raises(AddressRefused, match="loopback, link-local or private"):
        await check_address("http://[::1]/hook", LOCAL)
    assert resolver.calls == 0


async def test_a_name_is_looked_up_again_once_its_time_is_up(resolver: Resolver) -> None:
    for _ in range(5):
        await check_address("https://hooks.example.com/in", [])
    assert resolver.calls == 1
    resolver.answers["hooks.example.com"] = "10.0.0.7"  # the name now points inside
    await check_address("https://hooks.example.com/in", [])  # still the kept answer
    _, found = webhook_sender._resolved["hooks.example.com"]
    webhook_sender._resolved["hooks.example.com"] = (0.0, found)  # its time is up
    with pytest.raises(AddressRefused, match="resolves to 10.0.0.7"):
        await check_address("https://hooks.example.com/in", [])
    assert resolver.calls == 2
