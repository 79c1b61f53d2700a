"""Where Forge may connect when a plan or an admin names the host: resolve the name once,
refuse internal addresses, and hand back the addresses to connect to.

An allow list of host names is not enough: a listed name can resolve to ``127.0.0.1``
(``localhost``, or any name whose DNS an attacker controls, at any moment), to the
cloud metadata service at ``169.254.169.254``, or to a private network. So every address
a name resolves to must be public, unless the allow list names that address itself (an
IP, with ``:port`` for one port, ``[v6]:port`` for IPv6) or its network (CIDR,
``10.0.0.0/8``). The caller then connects to exactly the addresses returned, never
looking the name up again, so the answer checked is the answer used
(``forge.guarded_http`` does this for httpx).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass

from forge.errors import ForgeError

__all__ = ["AddressAllowList", "AddressNotAllowed", "refusal", "resolve"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_PRIVATE = tuple(
    ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")
)
_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT (RFC 6598)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # an IPv4 address in its last 32 bits


class AddressNotAllowed(ForgeError, ValueError):
    """A host that resolves to an address Forge does not connect to."""

    code = "host_not_allowed"


def refusal(address: IPAddress) -> str | None:
    """What kind of internal address ``address`` is ("a loopback address"), or None for a
    public one. An IPv4 address inside IPv6 (mapped, NAT64) is judged as itself."""
    ip = _embedded_ipv4(address) or address
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if any(ip in network for network in _PRIVATE):
        return "a private address"
    if ip in _SHARED:
        return "a carrier-grade NAT address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_reserved:
        return "a reserved address"
    if isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local:
        return "a site-local address"
    if not ip.is_global:
        return "a special-purpose address"
    return None


@dataclass(frozen=True)
class AddressAllowList:
    """The entries of a host allow list that name addresses: IPs for any port, IPs with
    one port, and networks. Names in the list are the host check's business, not this."""

    addresses: frozenset[tuple[IPAddress, int | None]] = frozenset()
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AddressAllowList:
        """Read ``entries`` (``10.0.0.5``, ``10.0.0.5:8080``, ``::1``, ``[::1]:8080``,
        ``10.0.0.0/8``; names are skipped). Raises ``ValueError`` for an entry that is
        meant as an address or network but is not a valid one."""
        addresses: set[tuple[IPAddress, int | None]] = set()
        networks: list[IPNetwork] = []
        for raw in entries:
            entry = raw.strip().lower()
            try:
                if "/" in entry:
                    networks.append(ipaddress.ip_network(entry, strict=False))
                elif (found := _address_and_port(entry)) is not None:
                    addresses.add(found)
            except ValueError as exc:
                raise ValueError(f"{raw!r} on the allow list is not an address: {exc}") from None
        return cls(frozenset(addresses), tuple(networks))

    def allows(self, address: IPAddress, port: int) -> bool:
        embedded = _embedded_ipv4(address)
        forms = (address,) if embedded is None else (address, embedded)
        return any(
            (ip, None) in self.addresses
            or (ip, port) in self.addresses
            or any(ip in network for network in self.networks if network.version == ip.version)
            for ip in forms
        )


def resolve(host: str, port: int, allowed: AddressAllowList) -> tuple[str, ...]:
    """Every address ``host`` resolves to, once each in the resolver's order, to connect
    to instead of the name. Raises ``AddressNotAllowed`` naming the first one that is
    internal (``refusal``) and not allowed, even if others are public; the resolver's
    ``OSError`` (``socket.gaierror``) when the name does not resolve."""
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    if not found:
        raise socket.gaierror(f"{host!r} resolves to no address")
    addresses = tuple(dict.fromkeys(str(info[4][0]).split("%")[0] for info in found))
    for text in addresses:
        address = ipaddress.ip_address(text)
        why = refusal(address)
        if why is not None and not allowed.allows(address, port):
            named = f"host {host!r} resolves to {text},"
            if _same_address(host, address):
                named = f"{text} is"
            raise AddressNotAllowed(
                f"{named} {why}: Forge connects only to public addresses unless the address "
                "itself is on the allow list"
            )
    return addresses


def _address_and_port(entry: str) -> tuple[IPAddress, int | None] | None:
    """``entry`` as an address and its port (None: any), or None for a host name."""
    if entry.startswith("["):
        inside, _, rest = entry[1:].partition("]")
        if rest and not rest.startswith(":"):
            raise ValueError(f"{rest!r} after the brackets is not ':port'")
        return ipaddress.IPv6Address(inside), int(rest[1:]) if rest else None
    # One colon: host:port; more: an IPv6 address, which takes a port only in brackets.
    host, colon, port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
    if ":" not in host and not all(part.isdigit() for part in host.split(".")):
        return None
    return ipaddress.ip_address(host), int(port) if colon else None


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _same_address(host: str, address: IPAddress) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")) == address
    except ValueError:
        return False
