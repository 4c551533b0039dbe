"""POSTing a change to a webhook endpoint: Standard Webhooks signing, and the address check
that keeps deliveries out of the operator's own network (no server-side request forgery).

Nothing here logs; an error's text never carries the secret or the body.
"""

import asyncio
import base64
import hashlib
import hmac
import ipaddress
import re
import secrets
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from app.adapters import address_registry

# The HTTP client deliveries go through (the worker's one, shared): services name it by
# this alias and never import the HTTP library themselves. aiohttp rather than httpx (the
# gateway's client): a POST costs it a fraction of httpx's CPU, which bounds how many
# deliveries a second one worker makes (docs/changes.md).
Client = aiohttp.ClientSession

Network = address_registry.Network
Address = address_registry.Address


def new_client(allowed: Sequence[Network] = (), *, seconds: float = 5.0) -> Client:
    """The worker's delivery client, `allowed` being the operator's networks as for
    check_address. No cookie jar: the client is shared by every tenant's endpoints, and a
    cookie one endpoint sets must never reach another. Its resolver hands the connection only
    the addresses it checked, so a name cannot pass a check at one address and be connected
    to at another (DNS rebinding); aiohttp's own lookup cache is off, the resolver keeps
    one (RESOLVED_SECONDS)."""
    connector = aiohttp.TCPConnector(
        resolver=CheckedResolver(allowed, seconds=seconds), use_dns_cache=False
    )
    return aiohttp.ClientSession(
        connector=connector, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False
    )


SECRET_PREFIX = "whsec_"
_SECRET_BYTES = 24
_ERROR_CHARS = 200
_ANSWER_READ_MAX = 64 * 1024


class AddressRefused(Exception):
    """The URL's host is unknown, no normal host, or resolves to an address that is neither
    globally reachable nor in a network the operator allowed."""


def new_secret() -> str:
    """A fresh signing secret in the Standard Webhooks form (whsec_ + base64 key)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(_SECRET_BYTES)).decode()


def sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The webhook-signature value: v1, then base64 HMAC-SHA256 of id.timestamp.body
    under the secret's key (stdlib hmac: the whole scheme is these lines)."""
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def _refusal(address: Address, allowed: Sequence[Network]) -> str | None:
    """Why a delivery may not reach `address`, or None: an address in an allowed network
    passes (a mapped one by its IPv4 address too), any other must be globally reachable."""
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    if any(a in net for net in allowed for a in (address, mapped) if a is not None):
        return None
    return address_registry.not_global(address)


def _check(address: Address, allowed: Sequence[Network], *, name: str | None = None) -> None:
    why = _refusal(address, allowed)
    if why is None:
        return
    which = f"address {address}" if name is None else f"host {name!r} resolves to {address}, which"
    raise AddressRefused(
        f"{which} {why} (the operator may allow networks with JET_WEBHOOK_ALLOWED_NETWORKS)"
    )


_LABEL = re.compile(r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?", re.IGNORECASE)
_NUMBER = re.compile(r"0x[0-9a-f]*|[0-9]+", re.IGNORECASE)


def _address_or_name(host: str) -> Address | str:
    """An IP address, or a host name of DNS labels. A name whose last label is a number is
    refused: getaddrinfo would read 2130706433, 0x7f.1 or 127.1 as IPv4 addresses, and here
    an IPv4 address is a dotted quad."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    labels = host.removesuffix(".").split(".")
    if len(host) > 254 or not all(_LABEL.fullmatch(label) for label in labels):
        raise AddressRefused(f"host {host!r} is neither an IP address nor a host name")
    if _NUMBER.fullmatch(labels[-1]):
        raise AddressRefused(
            f"host {host!r} ends in a number but is no dotted-quad IPv4 address "
            "(an address is written as a dotted quad, or as an IPv6 address in brackets)"
        )
    return host


# A host's addresses are looked up again at most this often by one process: a lookup goes
# through a thread of the event loop's executor, which at hundreds of deliveries a second
# cost the worker more than the POSTs (docs/changes.md). A name that moves to a refused
# address is refused within this many seconds.
RESOLVED_SECONDS = 5.0
_RESOLVED_MAX = 1024
# host -> (monotonic time it expires, its addresses). A dict rather than a caching library
# for one bounded map with an expiry.
_resolved: dict[str, tuple[float, list[Address]]] = {}


async def _addresses(host: str, seconds: float) -> list[Address]:
    try:
        return [ipaddress.ip_address(host)]  # an address already: nothing to look up
    except ValueError:
        pass
    now = time.monotonic()
    known = _resolved.get(host)
    if known is not None and known[0] > now:
        return known[1]
    try:
        infos = await asyncio.wait_for(
            asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM), seconds
        )
    except (OSError, TimeoutError) as exc:
        raise AddressRefused(f"host {host!r} does not resolve") from exc
    found = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
    if len(_resolved) >= _RESOLVED_MAX:
        _resolved.clear()
    _resolved[host] = (now + RESOLVED_SECONDS, found)
    return found


async def _checked(name: str, allowed: Sequence[Network], seconds: float) -> list[Address]:
    found = await _addresses(name, seconds)
    for address in found:
        _check(address, allowed, name=name)
    return found


async def check_address(url: str, allowed: Sequence[Network], *, seconds: float = 5.0) -> None:
    """Refuse the URL (AddressRefused) unless its host, read as the delivery client reads it,
    is a normal host whose every address is globally reachable (the IANA special-purpose
    registries; what an IPv6 address carries judged too) or in an `allowed` network."""
    try:
        host = URL(url).raw_host
    except (ValueError, IndexError):  # yarl's IndexError: an empty host after a user@
        raise AddressRefused("the URL is not valid") from None
    if not host:
        raise AddressRefused("the URL has no host")
    found = _address_or_name(host)
    if isinstance(found, str):
        await _checked(found, allowed, seconds)
    else:
        _check(found, allowed)


_FAMILY = {4: socket.AF_INET, 6: socket.AF_INET6}


class CheckedResolver(AbstractResolver):
    """The delivery client's resolver: a name's addresses as check_address finds them (the
    same lookups, kept as long), refused unless every one passes; what it returns is what
    the connection is made to. aiohttp never asks it about an address in the URL."""

    def __init__(self, allowed: Sequence[Network], *, seconds: float) -> None:
        self._allowed = list(allowed)
        self._seconds = seconds

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = _address_or_name(host)
        if isinstance(found, str):
            addresses = await _checked(found, self._allowed, self._seconds)
        else:
            _check(found, self._allowed)
            addresses = [found]
        flags = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV
        results = [
            ResolveResult(
                hostname=host,
                host=str(a),
                port=port,
                family=_FAMILY[a.version],
                proto=0,
                flags=flags,
            )
            for a in addresses
            if family in (socket.AF_UNSPEC, _FAMILY[a.version])
        ]
        if not results:
            raise OSError(f"host {host!r} has no address of family {family.name}")
        return results

    async def close(self) -> None:
        return None


@dataclass(frozen=True, slots=True)
class Outcome:
    """One attempt: a 2xx is delivered; anything else (or an error) is retried."""

    delivered: bool
    status: int | None
    error: str | None
    latency_ms: int


async def post(
    client: Client,
    url: str,
    *,
    secret: str,
    message_id: str,
    body: bytes,
    allowed: Sequence[Network],
    seconds: float,
) -> Outcome:
    """POST one signed delivery; the answer's body is never kept (it could be any size)."""
    started = time.perf_counter()
    timestamp = int(time.time())
    headers = {
        "content-type": "application/json",
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(secret, message_id, timestamp, body),
    }
    status: int | None = None
    error: str | None = None
    try:
        # Checked again at each delivery: a name registered as public may resolve elsewhere
        # now. An address in the URL is checked here only; a name's addresses are checked
        # again by the client's resolver, which hands the connection nothing else.
        await check_address(url, allowed, seconds=seconds)
        timeout = aiohttp.ClientTimeout(total=seconds)
        async with client.post(
            url, data=body, headers=headers, allow_redirects=False, timeout=timeout
        ) as response:
            status = response.status
            # Read to its end, when short, so the connection is kept for the next delivery
            # (one left mid-answer is closed); a longer answer is dropped unread.
            read = 0
            while read <= _ANSWER_READ_MAX and (chunk := await response.content.readany()):
                read += len(chunk)
    except AddressRefused as exc:
        error = str(exc)
    except (aiohttp.ClientError, TimeoutError) as exc:
        error = f"{type(exc).__name__}: {exc}"[:_ERROR_CHARS]
    latency = int((time.perf_counter() - started) * 1000)
    if error is None and status is not None and not 200 <= status < 300:
        error = f"HTTP {status}"
    return Outcome(status is not None and error is None, status, error, latency)


def networks(values: Sequence[str]) -> list[Network]:
    """Parse CIDRs (an address alone is one host); ValueError names the bad one."""
    return [ipaddress.ip_network(v.strip(), strict=False) for v in values if v.strip()]
