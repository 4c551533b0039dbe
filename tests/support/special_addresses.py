"""Every row of the IANA IPv4 and IPv6 Special-Purpose Address Registries with its "Globally
Reachable" column (written out here, apart from app/adapters/address_registry.py, so that
the tests check the guard's table against the registries), and the sample addresses the
webhook tests try: each row at its first, middle and last address where no more specific
row holds them, each refused IPv4 row inside every IPv6 form that carries an IPv4 address,
what lies outside the registries, and public addresses."""

import ipaddress
from dataclasses import dataclass

# iana.org/assignments/iana-ipv4-special-registry, as of 2025-10-09 (None: no value given).
IPV4_REGISTRY: list[tuple[str, str, bool | None]] = [
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
]

# iana.org/assignments/iana-ipv6-special-registry, as of 2025-10-09 (None: N/A or no value).
IPV6_REGISTRY: list[tuple[str, str, bool | None]] = [
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
]

# The rows whose addresses carry an IPv4 address: it decides for them.
CARRYING = {"::ffff:0:0/96", "64:ff9b::/96", "2002::/16", "2001::/32"}

PUBLIC_V4 = ["8.8.8.8", "1.1.1.1"]
PUBLIC_V6 = ["2606:4700::1111", "2001:4860:4860::8888"]

# Outside the special-purpose registries, and never globally reachable unicast addresses.
OUTSIDE = [
    ("IPv4 multicast", "224.0.0.1"),
    ("IPv4 multicast (MCAST-TEST-NET)", "233.252.0.1"),
    ("IPv6 link-local multicast", "ff02::1"),
    ("IPv6 global multicast", "ff0e::1"),
    ("IPv6 site-local (deprecated)", "fec0::1"),
    ("IPv6 unallocated, outside 2000::/3", "4000::1"),
    ("IPv4-compatible (deprecated), carrying a public address", "::8.8.8.8"),
    ("IPv4-translated (SIIT), carrying a public address", "::ffff:0:8.8.8.8"),
]


@dataclass(frozen=True, slots=True)
class Sample:
    label: str  # the row, or how the address was made
    address: str
    allowed: bool


def _most_specific(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    rows = IPV4_REGISTRY if address.version == 4 else IPV6_REGISTRY
    holding = [r[0] for r in rows if address in ipaddress.ip_network(r[0])]
    return max(holding, key=lambda n: ipaddress.ip_network(n).prefixlen, default=None)


def carriers(v4: str) -> list[tuple[str, str]]:
    """The IPv6 forms that carry `v4`: mapped, NAT64, 6to4, and Teredo with it as the
    server (and a public client) and as the client (and a public server)."""
    n, public = int(ipaddress.IPv4Address(v4)), int(ipaddress.IPv4Address(PUBLIC_V4[0]))

    def teredo(server: int, client: int) -> str:
        return str(ipaddress.IPv6Address((0x20010000 << 96) | (server << 64) | client ^ 0xFFFFFFFF))

    return [
        ("mapped", str(ipaddress.IPv6Address((0xFFFF << 32) | n))),
        ("NAT64", str(ipaddress.IPv6Address((0x64FF9B << 96) | n))),
        ("6to4", str(ipaddress.IPv6Address((0x2002 << 112) | (n << 80) | 1))),
        ("Teredo server", teredo(n, public)),
        ("Teredo client", teredo(public, n)),
    ]


def registry_samples() -> list[Sample]:
    """Each registry row at its first, middle and last address (those no more specific row
    holds), refused unless the registry says globally reachable (a row that carries IPv4
    addresses is sampled by carriers(): here at its ends, which carry refused ones)."""
    samples = []
    for cidr, name, reachable in IPV4_REGISTRY + IPV6_REGISTRY:
        net = ipaddress.ip_network(cidr)
        ends = {net.network_address, net.broadcast_address}
        if cidr not in CARRYING:
            ends.add(net[net.num_addresses // 2])
        for address in sorted(ends):
            if _most_specific(address) == cidr:
                allowed = bool(reachable) and cidr not in CARRYING
                samples.append(Sample(f"{cidr} {name}", str(address), allowed))
    return samples


def carried_samples() -> list[Sample]:
    """Every IPv4 row that is not globally reachable, at its first address, inside each
    IPv6 form that carries one: refused; a public address inside each: allowed."""
    samples = [
        Sample(f"{kind} {cidr} {name}", address, False)
        for cidr, name, reachable in IPV4_REGISTRY
        if not reachable
        for kind, address in carriers(str(ipaddress.ip_network(cidr).network_address))
    ]
    public = dict((a, kind) for kind, a in carriers(PUBLIC_V4[0]))  # both Teredo forms are one
    samples += [Sample(f"{kind} {PUBLIC_V4[0]}", a, True) for a, kind in public.items()]
    return samples


def all_samples() -> list[Sample]:
    public = [Sample("public", a, True) for a in PUBLIC_V4 + PUBLIC_V6]
    outside = [Sample(label, a, False) for label, a in OUTSIDE]
    return registry_samples() + carried_samples() + outside + public


def url(address: str) -> str:
    """An http URL with `address` as its host."""
    host = f"[{address}]" if ":" in address else address
    return f"http://{host}/hook"
