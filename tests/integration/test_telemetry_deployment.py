"""A run is one trace across real processes (issue 30): the web process that starts it
and the worker processes that run its steps export to one OTLP/HTTP receiver, as any
deployment whose environment sets ``OTEL_EXPORTER_OTLP_ENDPOINT`` does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fixtures.otlp_receiver import OtlpReceiver

from .deployment import Deployment, wait_for
from .test_deployments import CHAIN

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def traced(deployment_kind: str, tmp_path_factory) -> Iterator[tuple[Deployment, OtlpReceiver]]:
    """A deployment of the kind, its processes exporting to a receiver of its own."""
    receiver = OtlpReceiver().start()
    environment = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "100",  # ms: the batches go out soon after each span
    }
    running = Deployment(
        deployment_kind, tmp_path_factory.mktemp(f"traced-{deployment_kind}"), extra_env=environment
    )
    try:
        yield running.start(workers=2), receiver
    finally:
        running.stop()
        receiver.stop()
        print(running.logs())


def test_the_web_and_the_workers_put_a_run_in_one_trace(traced):
    deployment, receiver = traced
    plan_id, number = deployment.approved_plan("Line count", CHAIN)
    run_id = deployment.start_run(plan_id, number)
    assert deployment.wait_status(run_id, "succeeded")["status"] == "succeeded"

    def of_the_run() -> list:
        spans = [s for s in receiver.received() if s.attributes.get("forge.run.id") == str(run_id)]
        return spans if len(spans) == 7 else []

    spans = wait_for(of_the_run, timeout=30)
    assert {span.trace_id for span in spans} == {spans[0].trace_id}
    (root,) = [s for s in spans if s.name == "invoke_agent Line count"]
    assert root.parent_id == "" and root.service == "forge"
    steps = {s.attributes["forge.step.id"]: s for s in spans if s.name.startswith("step ")}
    assert sorted(steps) == ["acme", "northwind", "total"]
    assert all(step.parent_id == root.span_id for step in steps.values())
    tools = sorted((s.name, s.parent_id) for s in spans if s.name.startswith("execute_tool"))
    assert tools == sorted(
        [
            ("execute_tool echo", steps["acme"].span_id),
            ("execute_tool echo", steps["northwind"].span_id),
            ("execute_tool file_write", steps["total"].span_id),
        ]
    )
