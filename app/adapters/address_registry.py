"""Whether an IP address is globally reachable, by the IANA IPv4 and IPv6 Special-Purpose
Address Registries, with the IPv4 address inside an IPv6 one (mapped, NAT64, 6to4, Teredo)
unwrapped and judged too. The operator's allow-list is not this module's business.

Our own table rather than `ipaddress`'s `is_global`: Python 3.11's predates updates of the
registries, differs from them on 15 rows and looks inside mapped addresses only
(docs/security.md).
"""

import functools
import ipaddress
from dataclasses import dataclass

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, slots=True)
class Block:
    """One row of a registry: `reachable` is its "Globally Reachable" column, None where the
    registry gives no value (N/A for the tunnels; a deprecated block)."""

    network: Network
    name: str
    reachable: bool | None


def _rows(*rows: tuple[str, str, bool | None]) -> tuple[Block, ...]:
    return tuple(Block(ipaddress.ip_network(n), name, r) for n, name, r in rows)


# iana.org/assignments/iana-ipv4-special-registry, as of 2025-10-09.
IPV4_SPECIAL = _rows(
    ("0.0.0.0/8", '"This network"', False),
    ("0.0.0.0/32", '"This host on this network"', False),
    ("10.0.0.0/8", "Private-Use", False),
    ("100.64.0.0/10", "Shared Address Space", False),
    ("127.0.0.0/8", "Loopback", False),
    ("169.254.0.0/16", "Link Local", False),
    ("172.16.0.0/12", "Private-Use", False),
    ("192.0.0.0/24", "IETF Protocol Assignments", False),
    ("192.0.0.0/29", "IPv4 Service Continuity Prefix", False),
    ("192.0.0.8/32", "IPv4 dummy address", False),
    ("192.0.0.9/32", "Port Control Protocol Anycast", True),
    ("192.0.0.10/32", "Traversal Using Relays around NAT Anycast", True),
    ("192.0.0.170/32", "NAT64/DNS64 Discovery", False),
    ("192.0.0.171/32", "NAT64/DNS64 Discovery", False),
    ("192.0.2.0/24", "Documentation (TEST-NET-1)", False),
    ("192.31.196.0/24", "AS112-v4", True),
    ("192.52.193.0/24", "AMT", True),
    ("192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", None),
    ("192.88.99.2/32", "6a44-relay anycast address", False),
    ("192.168.0.0/16", "Private-Use", False),
    ("192.175.48.0/24", "Direct Delegation AS112 Service", True),
    ("198.18.0.0/15", "Benchmarking", False),
    ("198.51.100.0/24", "Documentation (TEST-NET-2)", False),
    ("203.0.113.0/24", "Documentation (TEST-NET-3)", False),
    ("240.0.0.0/4", "Reserved", False),
    ("255.255.255.255/32", "Limited Broadcast", False),
)

# iana.org/assignments/iana-ipv6-special-registry, as of 2025-10-09.
IPV6_SPECIAL = _rows(
    ("::1/128", "Loopback Address", False),
    ("::/128", "Unspecified Address", False),
    ("::ffff:0:0/96", "IPv4-mapped Address", False),
    ("64:ff9b::/96", "IPv4-IPv6 Translat.", True),
    ("64:ff9b:1::/48", "IPv4-IPv6 Translat.", False),
    ("100::/64", "Discard-Only Address Block", False),
    ("100:0:0:1::/64", "Dummy IPv6 Prefix", False),
    ("2001::/23", "IETF Protocol Assignments", False),
    ("2001::/32", "TEREDO", None),
    ("2001:1::1/128", "Port Control Protocol Anycast", True),
    ("2001:1::2/128", "Traversal Using Relays around NAT Anycast", True),
    ("2001:1::3/128", "DNS-SD Service Registration Protocol Anycast", True),
    ("2001:2::/48", "Benchmarking", False),
    ("2001:3::/32", "AMT", True),
    ("2001:4:112::/48", "AS112-v6", True),
    ("2001:10::/28", "Deprecated (previously ORCHID)", None),
    ("2001:20::/28", "ORCHIDv2", True),
    ("2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix", True),
    ("2001:db8::/32", "Documentation", False),
    ("2002::/16", "6to4", None),
    ("2620:4f:8000::/48", "Direct Delegation AS112 Service", True),
    ("3fff::/20", "Documentation", False),
    ("5f00::/16", "Segment Routing (SRv6) SIDs", False),
    ("fc00::/7", "Unique-Local", False),
    ("fe80::/10", "Link-Local Unicast", False),
)

# Outside the special-purpose registries: IPv4 multicast (its own registry) is no unicast
# destination, and IPv6 outside 2000::/3 is unallocated, multicast or site-local (fec0::/10).
IPV4_MULTICAST = ipaddress.IPv4Network("224.0.0.0/4")
IPV6_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")

_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def special_block(address: Address) -> Block | None:
    """The most specific registry row holding `address` (its more specific rows, such as
    192.0.0.9/32 in 192.0.0.0/24, override the wider one), or None."""
    table = IPV4_SPECIAL if address.version == 4 else IPV6_SPECIAL
    holding = [b for b in table if address in b.network]
    return max(holding, key=lambda b: b.network.prefixlen, default=None)


def wrapped(address: Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries, and so reaches: mapped, NAT64
    (64:ff9b::/96), 6to4 and Teredo (its server and its client)."""
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    if address in _MAPPED or address in _NAT64:
        return [ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)]
    if address.sixtofour is not None:
        return [address.sixtofour]
    if address.teredo is not None:
        return list(address.teredo)
    return []


# A worker judges the same few addresses again at every delivery.
@functools.lru_cache(maxsize=4096)
def not_global(address: Address) -> str | None:
    """None when `address` is globally reachable; otherwise why not, as a clause naming the
    registry row ("is in 100.64.0.0/10 (Shared Address Space), not globally reachable")."""
    for inner in wrapped(address):
        why = not_global(inner)
        if why is not None:
            return f"carries {inner}, which {why}"
    if address.version == 4 and address in IPV4_MULTICAST:
        return f"is in {IPV4_MULTICAST} (Multicast), not globally reachable"
    block = special_block(address)
    if block is None:
        if address.version == 6 and address not in IPV6_GLOBAL_UNICAST:
            return f"is outside {IPV6_GLOBAL_UNICAST} (Global Unicast), not globally reachable"
        return None
    # What a mapped address or a tunnel carries decides for it (judged above): a mapped
    # address is its IPv4 address on the wire, and the tunnels' rows give no value.
    if block.reachable or address in _MAPPED or (block.reachable is None and wrapped(address)):
        return None
    return f"is in {block.network} ({block.name}), not globally reachable"
