"""POSTing a change to a webhook endpoint: Standard Webhooks signing, and the address check
that keeps deliveries out of the operator's own network (no server-side request forgery).

Nothing here logs; an error's text never carries the secret or the body.
"""

import asyncio
import base64
import hashlib
import hmac
import ipaddress
import secrets
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp

# The HTTP client deliveries go through (the worker's one, shared): services name it by
# this alias and never import the HTTP library themselves. aiohttp rather than httpx (the
# gateway's client): a POST costs it a fraction of httpx's CPU, which bounds how many
# deliveries a second one worker makes (docs/changes.md).
Client = aiohttp.ClientSession


def new_client() -> Client:
    """The worker's delivery client. No cookie jar: the client is shared by every tenant's
    endpoints, and a cookie one endpoint sets must never reach another."""
    return aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar(), trust_env=False)


SECRET_PREFIX = "whsec_"
_SECRET_BYTES = 24
_ERROR_CHARS = 200
_ANSWER_READ_MAX = 64 * 1024

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class AddressRefused(Exception):
    """The URL's host is unknown, or resolves to an address the operator did not allow."""


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


def _public(address: Address) -> bool:
    return not (
        address.is_private or address.is_loopback or address.is_link_local
        or address.is_multicast or address.is_reserved or address.is_unspecified
        or (isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None
            and not _public(address.ipv4_mapped))
    )  # fmt: skip


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


async def check_address(url: str, allowed: Sequence[Network], *, seconds: float = 5.0) -> None:
    """Resolve the URL's host; refuse it when any of its addresses is loopback, link-local,
    private or otherwise not public, unless that address is in an `allowed` network."""
    host = urlsplit(url).hostname
    if not host:
        raise AddressRefused("the URL has no host")
    for address in await _addresses(host, seconds):
        if _public(address) or any(address in net for net in allowed):
            continue
        raise AddressRefused(
            f"host {host!r} resolves to {address}, a loopback, link-local or private address "
            "(the operator may allow networks with JET_WEBHOOK_ALLOWED_NETWORKS)"
        )


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
        # Checked again at each delivery: a name registered as public may resolve elsewhere now.
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
