"""The address check before each delivery (app/adapters/webhook_sender.py): only globally
reachable addresses by the IANA special-purpose registries (every row, and what an IPv6
address carries) or the operator's networks; no number form of an address; addresses need
no lookup, a name's lookup is kept a few seconds, and the client connects only to the
addresses its resolver checked, so a name that moves between the check and the connection
(DNS rebinding) is never connected to."""

import asyncio
import ipaddress
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from app.adapters import webhook_sender
from app.adapters.webhook_sender import AddressRefused, CheckedResolver, check_address
from tests.support.special_addresses import Sample, all_samples, url
from tests.support.webhook_receiver import Receiver

LOCAL = [ipaddress.ip_network("127.0.0.1/32")]
PUBLIC = "93.184.215.14"


class Resolver:
    """The event loop's getaddrinfo, answering from a table and counting the lookups; a
    host's answer is an address, or a list of them given out one per lookup (the last one
    kept), as a name with a zero TTL that an attacker moves."""

    def __init__(self, answers: dict[str, str | list[str]]) -> None:
        self.answers = answers
        self.calls = 0

    async def __call__(self, host: str, port: Any, **kwargs: Any) -> list[Any]:
        self.calls += 1
        answer = self.answers[host]
        if isinstance(answer, list):
            answer = answer.pop(0) if len(answer) > 1 else answer[0]
        family = socket.AF_INET6 if ":" in answer else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (answer, port or 0))]


@pytest.fixture
async def resolver(monkeypatch: pytest.MonkeyPatch) -> Resolver:
    fake = Resolver({"hooks.example.com": PUBLIC})
    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", fake)
    monkeypatch.setattr(webhook_sender, "_resolved", {})
    return fake


async def test_an_address_is_checked_without_a_lookup(resolver: Resolver) -> None:
    await check_address("http://127.0.0.1:9/hook", LOCAL)
    with pytest.raises(AddressRefused, match=r"10.0.0.7 is in 10.0.0.0/8 \(Private-Use\)"):
        await check_address("http://10.0.0.7/hook", LOCAL)
    with pytest.raises(AddressRefused, match=r"::1 is in ::1/128 \(Loopback Address\)"):
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


@pytest.mark.parametrize("sample", all_samples(), ids=lambda s: f"{s.label} {s.address}")
async def test_every_special_purpose_address_is_judged_as_the_registry_says(
    resolver: Resolver, sample: Sample
) -> None:
    """In the URL, behind a name, and in the delivery client's resolver."""
    resolver.answers["hook.test"] = sample.address
    checked_resolver = CheckedResolver([], seconds=1.0)
    shown = str(ipaddress.ip_address(sample.address))
    if sample.allowed:
        await check_address(url(sample.address), [])
        await check_address("http://hook.test/hook", [])
        [found] = await checked_resolver.resolve("hook.test", 443, socket.AF_UNSPEC)
        assert (found["host"], found["port"]) == (shown, 443)
        return
    with pytest.raises(AddressRefused, match=f"address {shown} "):
        await check_address(url(sample.address), [])
    with pytest.raises(AddressRefused, match=f"'hook.test' resolves to {shown}, which "):
        await check_address("http://hook.test/hook", [])
    with pytest.raises(AddressRefused, match=f"resolves to {shown}"):
        await checked_resolver.resolve("hook.test", 443, socket.AF_UNSPEC)


async def test_one_refused_address_of_a_name_refuses_it(
    resolver: Resolver, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def two(host: str, port: Any, **kwargs: Any) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, 0)) for a in (PUBLIC, "100.64.0.1")]

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", two)
    with pytest.raises(AddressRefused, match=r"100.64.0.1, which is in 100.64.0.0/10"):
        await check_address("http://two.test/", [])


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://2130706433/", "'2130706433' ends in a number"),
        ("http://0x7f.1/", "'0x7f.1' ends in a number"),
        ("http://0x7f000001/", "ends in a number"),
        ("http://127.1/", "'127.1' ends in a number"),
        ("http://0177.0.0.1/", "ends in a number"),
        ("http://017700000001/", "ends in a number"),
        ("http://0x08.0x08.0x08.0x08/", "ends in a number"),  # 8.8.8.8, but not written as one
        ("http://hooks.example.0x10/", "ends in a number"),
        ("http://ex%61mple.com/", "neither an IP address nor a host name"),
        ("http://a..b/", "neither an IP address nor a host name"),
        ("http://-a.example/", "neither an IP address nor a host name"),
        ("http://h[x]@/hook", "the URL is not valid"),
        ("http://user@/hook", "the URL is not valid"),
        # Full-width digits are the address 10.0.0.1 to the client's URL parser.
        ("http://\uff11\uff10.\uff10.\uff10.\uff11/", "address 10.0.0.1 is in 10.0.0.0/8"),
    ],
)
async def test_numbers_and_odd_hosts_are_refused_without_a_lookup(
    resolver: Resolver, url: str, message: str
) -> None:
    with pytest.raises(AddressRefused, match=message):
        await check_address(url, LOCAL)
    assert resolver.calls == 0


async def test_the_operators_networks_are_allowed(resolver: Resolver) -> None:
    shared = [ipaddress.ip_network("100.64.0.0/10"), ipaddress.ip_network("fd00::/8")]
    await check_address("http://100.100.100.200/latest/meta-data/", shared)
    await check_address("http://[::ffff:100.100.100.200]/", shared)  # mapped: its IPv4 address
    await check_address("http://[fd12::1]/", shared)
    resolver.answers["inside.test"] = "100.64.0.9"
    await check_address("http://inside.test/", shared)
    [found] = await CheckedResolver(shared, seconds=1.0).resolve("inside.test", 80)
    assert found["host"] == "100.64.0.9"
    # A tunnel carrying an allowed IPv4 address is not that address.
    with pytest.raises(AddressRefused, match="carries 100.100.100.200"):
        await check_address("http://[2002:6464:64c8::]/", shared)
    with pytest.raises(AddressRefused, match="10.0.0.0/8"):
        await check_address("http://10.0.0.1/", shared)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with Receiver(secret=webhook_sender.new_secret()) as rx:
        yield rx


async def _post(rx: Receiver, url: str, allowed: list[Any]) -> webhook_sender.Outcome:
    async with webhook_sender.new_client(allowed, seconds=5.0) as http:
        return await webhook_sender.post(
            http,
            url,
            secret=rx.secret,
            message_id="msg_1",
            body=b"{}",
            allowed=allowed,
            seconds=5.0,
        )


async def test_a_name_that_moves_after_the_check_is_not_connected_to(
    resolver: Resolver, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check sees a public address, the connection's lookup the receiver's 127.0.0.1:
    the client connects only to what its resolver checked, so nothing is sent."""
    monkeypatch.setattr(webhook_sender, "RESOLVED_SECONDS", 0.0)  # a zero TTL
    resolver.answers["rebind.test"] = [PUBLIC, "127.0.0.1"]
    port = receiver.url.split(":")[2].split("/")[0]
    outcome = await _post(receiver, f"http://rebind.test:{port}/hook", [])
    assert not outcome.delivered and outcome.status is None
    assert outcome.error is not None and "resolves to 127.0.0.1, which is in" in outcome.error
    assert receiver.received == [] and resolver.calls == 2


async def test_a_name_in_an_allowed_network_is_delivered_to(
    resolver: Resolver, receiver: Receiver
) -> None:
    resolver.answers["local.test"] = "127.0.0.1"
    port = receiver.url.split(":")[2].split("/")[0]
    outcome = await _post(receiver, f"http://local.test:{port}/hook", LOCAL)
    assert outcome.delivered, outcome.error
    assert [r.message_id for r in receiver.received] == ["msg_1"]
