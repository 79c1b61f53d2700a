"""The side-effect-free built-ins: noop, echo, sleep and fail."""

from __future__ import annotations

import time

from forge.runners import BasicRunner


def test_noop_returns_an_empty_object(spec, make_context):
    outcome = BasicRunner().run(spec("noop"), {}, make_context())

    assert outcome.ok
    assert outcome.output == {}
    assert outcome.isolation == "none"


def test_echo_returns_its_arguments_unchanged(spec, make_context):
    args = {"a": 1, "nested": {"list": [1, 2]}}

    outcome = BasicRunner().run(spec("echo"), args, make_context())

    assert outcome.output == args


def test_sleep_waits_and_reports_how_long(spec, make_context):
    started = time.monotonic()

    outcome = BasicRunner().run(spec("sleep"), {"seconds": 0.1}, make_context())

    assert outcome.ok
    assert outcome.output == {"slept": 0.1}
    assert time.monotonic() - started >= 0.1


def test_sleep_longer_than_the_timeout_fails_with_timeout_at_the_timeout(spec, make_context):
    started = time.monotonic()

    outcome = BasicRunner().run(spec("sleep"), {"seconds": 30}, make_context(timeout_s=0.2))

    assert not outcome.ok
    assert outcome.error_code == "timeout"
    assert 0.2 <= time.monotonic() - started < 1


def test_fail_always_fails_with_its_message(spec, make_context):
    outcome = BasicRunner().run(spec("fail"), {"message": "as planned"}, make_context())

    assert not outcome.ok
    assert outcome.error == "as planned"
    assert outcome.error_code == "tool_failed"


def test_the_basic_runner_refuses_a_tool_it_does_not_serve(spec, make_context):
    outcome = BasicRunner().run(spec("shell"), {"argv": ["true"]}, make_context())

    assert outcome.error_code == "unsupported_tool"
