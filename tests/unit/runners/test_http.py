"""http_request against a real HTTP server on 127.0.0.1: the allow list (redirects
included), the size cap, the timeout and the Idempotency-Key."""

from __future__ import annotations

import time

import pytest

from forge.runners import HttpRunner
from forge.runners.http import idempotency_key


def _url(server, path):
    host, port = server.server_address[:2]
    return f"http://{host}:{port}{path}"


@pytest.fixture
def runner() -> HttpRunner:
    return HttpRunner(["127.0.0.1"])


def test_a_json_response_is_decoded(runner, spec, make_context, http_server):
    outcome = runner.run(
        spec("http_request"), {"method": "GET", "url": _url(http_server, "/json")}, make_context()
    )

    assert outcome.ok
    assert outcome.output["status"] == 200
    assert outcome.output["body"] == {"answer": 42}
    assert outcome.output["headers"]["x-test"] == "yes"
    assert outcome.isolation == "host-allowlist"


def test_a_text_response_is_decoded_with_its_charset(runner, spec, make_context, http_server):
    outcome = runner.run(
        spec("http_request"), {"method": "GET", "url": _url(http_server, "/text")}, make_context()
    )

    assert outcome.output["body"] == "plain wörds"


def test_a_get_carries_no_idempotency_key(runner, spec, make_context, http_server):
    runner.run(
        spec("http_request"), {"method": "GET", "url": _url(http_server, "/json")}, make_context()
    )

    assert "Idempotency-Key" not in http_server.requests[0]["headers"]


def test_a_post_carries_the_same_idempotency_key_on_every_attempt(
    runner, spec, make_context, http_server
):
    args = {"method": "POST", "url": _url(http_server, "/echo"), "body": {"n": 1}}

    first = runner.run(spec("http_request"), args, make_context(attempt=1))
    runner.run(spec("http_request"), args, make_context(attempt=2))
    runner.run(spec("http_request"), args, make_context(step_id="another-step"))

    keys = [request["headers"]["Idempotency-Key"] for request in http_server.requests]
    assert keys[0] == keys[1] == idempotency_key(make_context())
    assert keys[2] != keys[0]
    assert first.output["status"] == 201
    assert first.output["body"] == {"method": "POST", "body": '{"n":1}'}


def test_a_caller_supplied_idempotency_key_is_kept(runner, spec, make_context, http_server):
    args = {
        "method": "PUT",
        "url": _url(http_server, "/echo"),
        "headers": {"idempotency-key": "mine"},
        "body": "raw text",
    }

    runner.run(spec("http_request"), args, make_context())

    request = http_server.requests[0]
    assert request["headers"]["idempotency-key"] == "mine"
    assert request["body"] == "raw text"


def test_a_host_off_the_allow_list_is_refused_before_any_request(spec, make_context, http_server):
    host, port = http_server.server_address[:2]

    outcome = HttpRunner(["example.org"]).run(
        spec("http_request"), {"method": "GET", "url": _url(http_server, "/json")}, make_context()
    )

    assert outcome.error_code == "host_not_allowed"
    assert outcome.error == f"host '127.0.0.1' (port {port}) is not on the allow list"
    assert http_server.requests == []


def test_an_allowed_host_can_be_limited_to_one_port(spec, make_context, http_server):
    port = http_server.server_address[1]
    url = _url(http_server, "/json")

    allowed = HttpRunner([f"127.0.0.1:{port}"]).run(
        spec("http_request"), {"method": "GET", "url": url}, make_context()
    )
    refused = HttpRunner(["127.0.0.1:1"]).run(
        spec("http_request"), {"method": "GET", "url": url}, make_context()
    )

    assert allowed.ok
    assert refused.error_code == "host_not_allowed"


def test_a_redirect_to_the_same_host_is_followed(runner, spec, make_context, http_server):
    outcome = runner.run(
        spec("http_request"),
        {"method": "GET", "url": _url(http_server, "/redirect-here")},
        make_context(),
    )

    assert outcome.output["body"] == {"answer": 42}
    assert [request["path"] for request in http_server.requests] == ["/redirect-here", "/json"]


def test_a_redirect_to_another_host_is_refused(runner, spec, make_context, http_server):
    outcome = runner.run(
        spec("http_request"),
        {"method": "GET", "url": _url(http_server, "/redirect-away")},
        make_context(),
    )

    assert outcome.error_code == "host_not_allowed"
    assert "'localhost'" in outcome.error
    assert [request["path"] for request in http_server.requests] == ["/redirect-away"]


@pytest.mark.parametrize("path", ["/big", "/big-chunked"])
def test_a_response_over_the_cap_is_refused(runner, spec, make_context, http_server, path):
    outcome = runner.run(
        spec("http_request"), {"method": "GET", "url": _url(http_server, path)}, make_context()
    )

    assert outcome.error_code == "response_too_large"
    assert outcome.output is None


def test_a_slow_server_runs_into_the_timeout(runner, spec, make_context, http_server):
    started = time.monotonic()

    outcome = runner.run(
        spec("http_request"),
        {"method": "GET", "url": _url(http_server, "/slow")},
        make_context(timeout_s=0.5),
    )

    assert outcome.error_code == "timeout"
    assert time.monotonic() - started < 2


def test_an_error_status_fails_the_step_but_keeps_the_response(
    runner, spec, make_context, http_server
):
    outcome = runner.run(
        spec("http_request"),
        {"method": "GET", "url": _url(http_server, "/missing")},
        make_context(),
    )

    assert outcome.error_code == "http_status"
    assert outcome.error == "HTTP status 404"
    assert outcome.output["status"] == 404
    assert outcome.output["body"] == {"error": "no such thing"}


def test_a_refused_connection_is_reported(runner, spec, make_context):
    outcome = runner.run(
        spec("http_request"), {"method": "GET", "url": "http://127.0.0.1:1/"}, make_context()
    )

    assert outcome.error_code == "request_failed"


# --- Addresses: the name allowed is resolved once, its address checked, then connected to


def test_an_allowed_name_that_resolves_to_a_loopback_address_is_refused(
    spec, make_context, http_server
):
    port = http_server.server_address[1]

    outcome = HttpRunner(["localhost"]).run(
        spec("http_request"), {"method": "GET", "url": f"http://localhost:{port}/json"},
        make_context(),
    )  # fmt: skip

    assert outcome.error_code == "host_not_allowed"
    assert outcome.error.startswith("host 'localhost' resolves to ")
    assert "a loopback address" in outcome.error
    assert http_server.requests == []


def test_a_name_pointed_at_the_metadata_service_is_refused(spec, make_context, dns):
    dns["api.partner.example"] = ["169.254.169.254"]

    outcome = HttpRunner(["api.partner.example"]).run(
        spec("http_request"),
        {"method": "GET", "url": "http://api.partner.example/latest/meta-data/"},
        make_context(),
    )

    assert outcome.error_code == "host_not_allowed"
    assert outcome.error.startswith(
        "host 'api.partner.example' resolves to 169.254.169.254, a link-local address"
    )


def test_an_internal_address_listed_itself_is_reached_by_its_name(
    spec, make_context, http_server, dns
):
    port = http_server.server_address[1]
    dns["ledger.internal"] = ["127.0.0.1"]

    outcome = HttpRunner(["ledger.internal", "127.0.0.1"]).run(
        spec("http_request"), {"method": "GET", "url": f"http://ledger.internal:{port}/json"},
        make_context(),
    )  # fmt: skip

    assert outcome.ok
    assert http_server.requests[0]["headers"]["Host"] == f"ledger.internal:{port}"
    assert dns.calls == ["ledger.internal"]  # the address connected to is the one checked


def test_a_redirect_to_a_listed_name_that_resolves_inside_is_refused(
    spec, make_context, http_server, dns
):
    dns["localhost"] = ["10.0.0.7"]

    outcome = HttpRunner(["127.0.0.1", "localhost"]).run(
        spec("http_request"),
        {"method": "GET", "url": _url(http_server, "/redirect-away")},
        make_context(),
    )

    assert outcome.error_code == "host_not_allowed"
    assert "'localhost' resolves to 10.0.0.7, a private address" in outcome.error
    assert [request["path"] for request in http_server.requests] == ["/redirect-away"]
