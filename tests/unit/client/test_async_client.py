"""``AsyncForgeClient`` sends what ``ForgeClient`` sends and reads what it reads; its wait
sleeps without a thread and tells each look that found the version still waiting."""

from __future__ import annotations

import anyio
import httpx
import pytest

from forge.client import AsyncForgeClient, ForgeApiError, ForgeClient, Polled

from .fake_api import BASE, TOKEN, FakeApi, FakeTime, plan_json, run_json, version_json


def test_both_clients_send_the_same_requests_for_the_same_calls():
    def script() -> FakeApi:
        return (
            FakeApi()
            .on("POST", "/plans", (201, plan_json()))
            .on("POST", "/runs", (201, run_json()))
            .on("GET", "/runs/3/events", (200, []))
            .on("POST", "/runs/3/rerun", (201, run_json()))
        )

    blocking, asynchronous = script(), script()
    with ForgeClient(BASE, TOKEN, transport=blocking.transport()) as forge:
        forge.create_plan("Release notes", {"goal": "g", "steps": []})
        forge.start_run(7, 1)
        forge.events(3, after=5)
        forge.rerun_run(3, ["score"])

    async def same() -> None:
        async with AsyncForgeClient(BASE, TOKEN, transport=asynchronous.transport()) as forge:
            await forge.create_plan("Release notes", {"goal": "g", "steps": []})
            await forge.start_run(7, 1)
            await forge.events(3, after=5)
            await forge.rerun_run(3, ["score"])

    anyio.run(same)

    def requests(api: FakeApi) -> list[tuple[str, str, object, dict[str, str]]]:
        return [(s.method, s.path, s.body, s.query) for s in api.seen]

    assert requests(asynchronous) == requests(blocking)
    assert [s.headers["authorization"] for s in asynchronous.seen] == [f"Bearer {TOKEN}"] * 4


def test_the_async_wait_reports_each_look_that_found_the_version_waiting():
    api = FakeApi().on(
        "GET",
        "/plans/7/versions/1",
        (200, version_json()),
        (200, version_json()),
        (200, version_json("rejected")),
    )
    time = FakeTime()
    polled: list[Polled] = []

    async def record(look: Polled) -> None:
        polled.append(look)

    async def wait() -> str:
        forge = AsyncForgeClient(
            BASE, TOKEN, transport=api.transport(), sleep=time.async_sleep, clock=time.clock
        )
        async with forge:
            version = await forge.wait_for_decision(7, 1, timeout_s=90, on_poll=record)
        return version.status

    assert anyio.run(wait) == "rejected"
    assert time.sleeps == [0.5, 1.0]
    assert [(p.waited_s, p.timeout_s, p.version.status) for p in polled] == [
        (0.0, 90.0, "awaiting_approval"),
        (0.5, 90.0, "awaiting_approval"),
    ]


def test_the_async_client_raises_the_same_errors():
    api = FakeApi().on("POST", "/runs", (409, {"detail": "not approved", "code": "not_approved"}))

    async def start() -> None:
        async with AsyncForgeClient(BASE, TOKEN, transport=api.transport()) as forge:
            await forge.start_run(7, 1)

    with pytest.raises(ForgeApiError) as raised:
        anyio.run(start)

    assert (raised.value.status, raised.value.code) == (409, "not_approved")


def test_the_async_client_says_when_forge_cannot_be_reached():
    async def unreachable(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    async def read() -> None:
        transport = httpx.MockTransport(unreachable)
        async with AsyncForgeClient(BASE, TOKEN, transport=transport) as forge:
            await forge.get_run(3)

    with pytest.raises(ForgeApiError) as raised:
        anyio.run(read)

    assert raised.value.code == "unreachable"
