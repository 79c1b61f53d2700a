"""The outbound guard: a name is resolved once and every address it resolves to must be
public, unless the allow list names that address (or its network) itself."""

from __future__ import annotations

import pytest

from forge.netguard import AddressAllowList, AddressNotAllowed, resolve

NOTHING_LISTED = AddressAllowList.parse([])


def test_a_public_address_is_returned_to_connect_to(dns):
    dns["hooks.example.com"] = ["93.184.216.34"]

    assert resolve("hooks.example.com", 443, NOTHING_LISTED) == ("93.184.216.34",)
    assert dns.calls == ["hooks.example.com"]


def test_localhost_is_refused_as_a_loopback_address():
    with pytest.raises(AddressNotAllowed) as refused:
        resolve("localhost", 80, NOTHING_LISTED)

    assert refused.value.code == "host_not_allowed"
    assert "'localhost' resolves to " in refused.value.message
    assert "a loopback address" in refused.value.message


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "a loopback address"),
        ("::1", "a loopback address"),
        ("169.254.169.254", "a link-local address"),  # the cloud metadata service
        ("fe80::1", "a link-local address"),
        ("10.1.2.3", "a private address"),
        ("172.16.0.9", "a private address"),
        ("192.168.1.1", "a private address"),
        ("fd00:ec2::254", "a private address"),  # a ULA (AWS's IPv6 metadata address)
        ("100.64.0.1", "a carrier-grade NAT address"),
        ("0.0.0.0", "an unspecified address"),
        ("::", "an unspecified address"),
        ("224.0.0.1", "a multicast address"),
        ("ff02::1", "a multicast address"),
        ("240.0.0.1", "a reserved address"),
        ("192.0.2.7", "a special-purpose address"),  # documentation range
        ("::ffff:127.0.0.1", "a loopback address"),  # IPv4-mapped IPv6
        ("::ffff:169.254.169.254", "a link-local address"),
        ("64:ff9b::a00:1", "a private address"),  # NAT64 of 10.0.0.1
    ],
)
def test_an_attackers_name_resolving_inside_is_refused(dns, address, why):
    dns["evil.example.com"] = [address]

    with pytest.raises(AddressNotAllowed) as refused:
        resolve("evil.example.com", 80, NOTHING_LISTED)

    assert refused.value.message.startswith(f"host 'evil.example.com' resolves to {address}, {why}")


def test_one_internal_address_among_public_ones_is_enough_to_refuse(dns):
    dns["mixed.example.com"] = ["93.184.216.34", "10.0.0.5"]

    with pytest.raises(AddressNotAllowed, match="10.0.0.5, a private address"):
        resolve("mixed.example.com", 80, NOTHING_LISTED)


def test_an_internal_address_listed_itself_is_allowed(dns):
    dns["billing.internal"] = ["10.0.0.5"]

    assert resolve("billing.internal", 80, AddressAllowList.parse(["10.0.0.5"])) == ("10.0.0.5",)
    assert resolve("billing.internal", 80, AddressAllowList.parse(["10.0.0.0/8"])) == ("10.0.0.5",)
    with pytest.raises(AddressNotAllowed):
        resolve("billing.internal", 80, AddressAllowList.parse(["10.0.0.6", "10.1.0.0/16"]))


def test_a_listed_address_with_a_port_allows_that_port_only():
    allowed = AddressAllowList.parse(["127.0.0.1:8080", "[::1]:8081", "billing.internal"])

    assert resolve("127.0.0.1", 8080, allowed) == ("127.0.0.1",)
    assert resolve("::1", 8081, allowed) == ("::1",)
    with pytest.raises(AddressNotAllowed, match="127.0.0.1 is a loopback address"):
        resolve("127.0.0.1", 8081, allowed)


def test_an_ip_literal_host_is_not_looked_up_in_dns_and_is_named_once(dns):
    with pytest.raises(AddressNotAllowed) as refused:
        resolve("169.254.169.254", 80, NOTHING_LISTED)

    assert refused.value.message.startswith("169.254.169.254 is a link-local address")
    assert dns.calls == []


def test_a_name_that_does_not_resolve_raises_the_resolvers_error(dns):
    dns["nowhere.example.com"] = []

    with pytest.raises(OSError):
        resolve("nowhere.example.com", 80, NOTHING_LISTED)


@pytest.mark.parametrize("entry", ["10.0.0.0/33", "[::1]:port", "300.1.1.1/8"])
def test_a_malformed_address_entry_is_refused(entry):
    with pytest.raises(ValueError, match="allow list"):
        AddressAllowList.parse([entry])
