"""The hosts ``http_request`` may reach: one rule (``HostAllowList.refusal``) that the
runner applies to each request and redirect, its preview to the call, and the compiler
to a URL written in the plan (issue 25, item 3)."""

from __future__ import annotations

import pytest

from forge.tools import CallRefusal, HostAllowList


def test_a_listed_host_is_allowed_on_any_port_and_scheme_of_http():
    hosts = HostAllowList.of(["API.example.com "])

    assert hosts.url_refusal("https://api.example.com/orders") is None
    assert hosts.url_refusal("http://api.example.com:8080/") is None
    assert hosts.refusal("https", "API.EXAMPLE.COM", None) is None


def test_a_host_with_a_port_is_allowed_on_that_port_only():
    hosts = HostAllowList.of(["api.example.com:8443", "plain.example:80"])

    assert hosts.url_refusal("https://api.example.com:8443/x") is None
    assert hosts.url_refusal("http://plain.example/x") is None  # 80 is http's own port
    refused = hosts.url_refusal("https://api.example.com/x")
    assert refused == CallRefusal(
        "host_not_allowed",
        "host 'api.example.com' (port 443) is not on the allow list",
        "add api.example.com (any port) or api.example.com:443 to FORGE_HTTP_ALLOWED_HOSTS "
        "(the forge command: --allow-host api.example.com), or call a host on the list",
    )


def test_a_host_off_the_list_is_refused_with_the_setting_to_change():
    refused = HostAllowList.of([]).url_refusal("https://evil.example/collect")

    assert refused is not None
    assert refused.code == "host_not_allowed"
    assert refused.reason == "host 'evil.example' (port 443) is not on the allow list"
    assert "FORGE_HTTP_ALLOWED_HOSTS" in refused.hint
    assert "--allow-host evil.example" in refused.hint
    assert refused.to_data() == {
        "code": "host_not_allowed",
        "reason": refused.reason,
        "hint": refused.hint,
    }


def test_only_http_and_https_are_reachable():
    refused = HostAllowList.of(["files.example"]).refusal("ftp", "files.example", 21)

    assert refused is not None
    assert refused.reason == "scheme 'ftp' is not allowed, only http and https"


@pytest.mark.parametrize("url", ["https://", "not a url", "https://host:99999999/"])
def test_a_url_whose_host_cannot_be_read_is_left_to_the_runner(url):
    # The runner refuses it as invalid_args; the allow list has nothing to say.
    assert HostAllowList.of([]).url_refusal(url) is None


def test_a_call_is_judged_by_its_url_argument_only_when_it_is_text():
    hosts = HostAllowList.of(["ok.example"])

    assert hosts.call_refusal({"method": "GET", "url": "https://ok.example/"}) is None
    assert hosts.call_refusal({"method": "GET", "url": None}) is None  # not known yet
    refused = hosts.call_refusal({"method": "POST", "url": "https://no.example/"})
    assert refused is not None and refused.code == "host_not_allowed"


def test_an_international_host_is_compared_in_its_ascii_form():
    hosts = HostAllowList.of(["xn--bcher-kva.example"])

    assert hosts.url_refusal("https://bücher.example/") is None
