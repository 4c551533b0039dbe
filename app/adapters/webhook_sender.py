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

import httpx

# The HTTP client deliveries go through (the worker's one, shared): services name it by
# this alias and never import the HTTP library themselves.
Client = httpx.AsyncClient

SECRET_PREFIX = "whsec_"
_SECRET_BYTES = 24
_ERROR_CHARS = 200

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


async def check_address(url: str, allowed: Sequence[Network], *, seconds: float = 5.0) -> None:
    """Resolve the URL's host; refuse it when any of its addresses is loopback, link-local,
    private or otherwise not public, unless that address is in an `allowed` network."""
    host = urlsplit(url).hostname
    if not host:
        raise AddressRefused("the URL has no host")
    try:
        infos = await asyncio.wait_for(
            asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM), seconds
        )
    except (OSError, TimeoutError) as exc:
        raise AddressRefused(f"host {host!r} does not resolve") from exc
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
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
    client: httpx.AsyncClient,
    url: str,
    *,
    secret: str,
    message_id: str,
    body: bytes,
    allowed: Sequence[Network],
    seconds: float,
) -> Outcome:
    """POST one signed delivery; the answer's body is never read (it could be any size)."""
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
        request = client.build_request("POST", url, content=body, headers=headers,
                                       timeout=seconds)  # fmt: skip
        response = await client.send(request, stream=True, follow_redirects=False)
        await response.aclose()
        status = response.status_code
    except AddressRefused as exc:
        error = str(exc)
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"[:_ERROR_CHARS]
    latency = int((time.perf_counter() - started) * 1000)
    delivered = status is not None and 200 <= status < 300
    if status is not None and not delivered:
        error = f"HTTP {status}"
    return Outcome(delivered, status, error, latency)


def networks(values: Sequence[str]) -> list[Network]:
    """Parse CIDRs (an address alone is one host); ValueError names the bad one."""
    return [ipaddress.ip_network(v.strip(), strict=False) for v in values if v.strip()]
