"""``forge.client.ForgeClient`` against a hand-written fake of the API: the requests it
sends, the values it reads, the errors it raises, and how it waits for a decision."""

from __future__ import annotations

import math

import httpx
import pytest

from forge.client import Diagnostic, ForgeApiError, ForgeClient

from .fake_api import (
    APPROVAL_REQUIRED,
    BASE,
    DIAGNOSTIC,
    TOKEN,
    FakeApi,
    FakeTime,
    event_json,
    plan_json,
    run_json,
    version_json,
)

DOCUMENT = {"goal": "Summarise the notes", "steps": [{"id": "read", "tool": "file_read"}]}


def client(api: FakeApi, time: FakeTime | None = None, base: str = BASE) -> ForgeClient:
    time = time or FakeTime()
    return ForgeClient(base, TOKEN, transport=api.transport(), sleep=time.sleep, clock=time.clock)


def test_compiling_posts_the_document_with_the_bearer_token_and_reads_every_diagnostic():
    api = FakeApi().on("POST", "/compile", (200, {"ok": False, "diagnostics": [DIAGNOSTIC],
                                                  "graph": None}))  # fmt: skip

    result = client(api).compile(DOCUMENT)

    [request] = api.seen
    assert (request.method, request.path, request.body) == (
        "POST",
        "/api/v1/compile",
        {"document": DOCUMENT},
    )
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert result.ok is False
    assert result.diagnostics == (
        Diagnostic(
            "unknown_tool",
            "error",
            "step 'send' uses tool 'mailer', which is not registered",
            ("send",),
        ),
    )
    assert result.graph is None


def test_a_new_plan_is_submitted_as_version_1_and_answered_with_its_status():
    api = FakeApi().on("POST", "/plans", (201, plan_json()))

    version = client(api).create_plan("Release notes", source="goal: x", format="yaml", note="n")

    assert api.seen[0].body == {
        "name": "Release notes",
        "note": "n",
        "submit": True,
        "source": "goal: x",
        "format": "yaml",
    }
    assert (version.plan_id, version.number, version.status, version.author) == (
        7,
        1,
        "awaiting_approval",
        "agent",
    )
    assert version.waiting and not version.approved
    assert version.diagnostics == (Diagnostic.from_data(APPROVAL_REQUIRED),)
    assert version.diagnostics[0].edges == (("read", "publish"),)
    assert version.decision is None


def test_a_new_version_names_its_parent_and_reason_and_the_latest_is_read_from_the_plan():
    api = (
        FakeApi()
        .on("POST", "/plans/7/versions", (201, version_json(number=2, parent=1)))
        .on("GET", "/plans/7", (200, plan_json("approved")))
    )
    forge = client(api)

    created = forge.create_version(7, DOCUMENT, parent=1, replan_reason="step failed")
    latest = forge.get_version(7)

    assert api.seen[0].body == {
        "note": "",
        "replan_reason": "step failed",
        "submit": True,
        "parent": 1,
        "document": DOCUMENT,
    }
    assert (created.number, created.parent) == (2, 1)
    assert latest.status == "approved"
    assert latest.decision is not None
    assert (latest.decision.reviewer, latest.decision.comment) == ("grace", "looks right")


def test_a_refusal_raises_the_apis_code_status_detail_and_diagnostics():
    body = {"detail": "version 1 has errors", "code": "has_errors", "diagnostics": [DIAGNOSTIC]}
    api = FakeApi().on("POST", "/runs", (409, body))

    with pytest.raises(ForgeApiError) as raised:
        client(api).start_run(7, 1)

    error = raised.value
    assert (error.status, error.code, error.message) == (409, "has_errors", "version 1 has errors")
    assert error.diagnostics == [DIAGNOSTIC]
    assert error.to_data() == {
        "status": 409,
        "code": "has_errors",
        "detail": "version 1 has errors",
        "diagnostics": [DIAGNOSTIC],
    }
    assert isinstance(error, RuntimeError)
    assert api.seen[0].body == {"plan_id": 7, "version": 1}


def test_an_answer_that_is_not_forges_is_an_unexpected_response_quoting_it():
    api = (
        FakeApi()
        .on("GET", "/runs/3", (502, "<html>Bad gateway</html>"))
        .on("GET", "/runs/4", (200, {"id": "not a run"}))
        .on("GET", "/runs/5", (200, "<html>login</html>"))
    )
    forge = client(api)

    with pytest.raises(ForgeApiError) as gateway:
        forge.get_run(3)
    with pytest.raises(ForgeApiError) as shape:
        forge.get_run(4)
    with pytest.raises(ForgeApiError) as html:
        forge.get_run(5)

    assert (gateway.value.code, gateway.value.status) == ("unexpected_response", 502)
    assert "Bad gateway" in gateway.value.message
    assert (shape.value.code, shape.value.status) == ("unexpected_response", 200)
    assert "GET /api/v1/runs/4" in shape.value.message
    assert html.value.code == "unexpected_response"


def test_a_redirect_is_never_followed_so_the_token_goes_nowhere_else():
    def redirect(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(301, headers={"location": "https://elsewhere.test/api/v1/runs/3"})

    seen: list[str] = []
    forge = ForgeClient(BASE, TOKEN, transport=httpx.MockTransport(redirect))

    with pytest.raises(ForgeApiError) as raised:
        forge.get_run(3)

    assert seen == [f"{BASE}/api/v1/runs/3"]
    assert raised.value.code == "unexpected_response"
    assert "pointing to https://elsewhere.test/api/v1/runs/3" in raised.value.message


def test_no_connection_is_unreachable_and_no_answer_in_time_is_timeout():
    api = (
        FakeApi()
        .on("GET", "/runs/3", httpx.ConnectError("connection refused"))
        .on("GET", "/runs/4", httpx.ReadTimeout("read timed out"))
    )
    forge = client(api)

    with pytest.raises(ForgeApiError) as refused:
        forge.get_run(3)
    with pytest.raises(ForgeApiError) as slow:
        forge.get_run(4)

    assert (refused.value.code, refused.value.status) == ("unreachable", 0)
    assert refused.value.message == (f"GET {BASE}/api/v1/runs/3: ConnectError: connection refused")
    assert (slow.value.code, slow.value.status) == ("timeout", 0)


def test_waiting_polls_with_growing_pauses_until_a_person_decides():
    api = FakeApi().on(
        "GET",
        "/plans/7/versions/1",
        (200, version_json()),
        (200, version_json()),
        (200, version_json("approved")),
    )
    time = FakeTime()

    version = client(api, time).wait_for_decision(7, 1, timeout_s=60)

    assert version.approved
    assert time.sleeps == [0.5, 1.0]
    assert api.paths() == ["GET /api/v1/plans/7/versions/1"] * 3


def test_waiting_gives_up_at_the_deadline_after_a_last_look_there():
    api = FakeApi().on("GET", "/plans/7/versions/1", (200, version_json()))
    time = FakeTime()

    version = client(api, time).wait_for_decision(7, 1, timeout_s=2)

    assert version.waiting
    assert time.sleeps == [0.5, 1.0, 0.5]  # the third pause cut to the deadline
    assert len(api.seen) == 4
    assert time.now == 2


def test_pauses_never_grow_past_five_seconds():
    api = FakeApi().on("GET", "/plans/7/versions/1", (200, version_json()))
    time = FakeTime()

    client(api, time).wait_for_decision(7, 1, timeout_s=30)

    assert time.sleeps == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0, 5.0, 2.5]


@pytest.mark.parametrize("status", ["has_errors", "draft", "rejected"])
def test_waiting_returns_at_once_for_a_version_that_waits_for_no_decision(status):
    api = FakeApi().on("GET", "/plans/7/versions/1", (200, version_json(status)))
    time = FakeTime()

    version = client(api, time).wait_for_decision(7, 1, timeout_s=600)

    assert version.status == status
    assert time.sleeps == []


def test_a_zero_wait_looks_once():
    api = FakeApi().on("GET", "/plans/7/versions/1", (200, version_json()))
    time = FakeTime()

    assert client(api, time).wait_for_decision(7, 1, timeout_s=0).waiting
    assert (len(api.seen), time.sleeps) == (1, [])


@pytest.mark.parametrize("bound", [-1.0, math.inf, math.nan])
def test_a_wait_must_be_bounded(bound):
    api = FakeApi()

    with pytest.raises(ValueError, match="timeout_s must be a finite number of seconds >= 0"):
        client(api).wait_for_decision(7, 1, timeout_s=bound)
    assert api.seen == []


def test_a_run_and_its_events_after_a_seq_are_read_in_order():
    api = (
        FakeApi()
        .on("GET", "/runs/3", (200, run_json("running", last_seq=4)))
        .on("GET", "/runs/3/events", (200, [event_json(3, "step_started", "read"),
                                            event_json(4, "step_succeeded", "read")]))
    )  # fmt: skip
    forge = client(api)

    run = forge.get_run(3)
    events = forge.events(3, after=2, limit=50)

    assert (run.id, run.status, run.last_seq, run.finished) == (3, "running", 4, False)
    assert [(s.step_id, s.status, s.tool) for s in run.steps] == [("read", "ready", "file_read")]
    assert api.seen[1].query == {"after": "2", "limit": "50"}
    assert [(e.seq, e.event_type, e.step_id) for e in events] == [
        (3, "step_started", "read"),
        (4, "step_succeeded", "read"),
    ]
    assert events[0].data["actor"] == "agent"


def test_a_rerun_posts_the_chosen_steps_and_reads_the_new_run():
    api = FakeApi().on("POST", "/runs/3/rerun", (201, {**run_json("running"), "id": 4}))

    run = client(api).rerun_run(3, ("score", "report"))

    assert (run.id, run.status) == (4, "running")
    assert api.seen[0].body == {"steps": ["score", "report"]}


@pytest.mark.parametrize(
    ("base", "path"),
    [
        ("http://forge.test/api/v1/", "/api/v1/runs/3"),
        ("https://example.test/forge", "/forge/api/v1/runs/3"),
    ],
)
def test_the_site_url_may_name_the_api_or_a_path_prefix(base, path):
    seen: list[str] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(200, json=run_json())

    ForgeClient(base, TOKEN, transport=httpx.MockTransport(record)).get_run(3)

    assert seen == [path]


@pytest.mark.parametrize(
    ("base", "token", "message"),
    [
        ("forge.test", TOKEN, "must start with http:// or https://"),
        (BASE, "  ", "an API token is needed"),
        (BASE, "forge_abc def", "no whitespace inside"),
    ],
)
def test_a_bad_url_or_token_is_refused_before_anything_is_sent(base, token, message):
    with pytest.raises(ValueError, match=message):
        ForgeClient(base, token)


def test_a_token_read_with_a_trailing_newline_is_sent_without_it():
    api = FakeApi().on("GET", "/runs/3", (200, run_json()))

    ForgeClient(BASE, TOKEN + "\n", transport=api.transport()).get_run(3)

    assert api.seen[0].headers["authorization"] == f"Bearer {TOKEN}"
