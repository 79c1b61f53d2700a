"""The one approval gate on the web (SPEC section 5), as the four-eyes matrix: an
unapproved, self-approved, forged or hash-mismatched version never reaches a runner,
whichever path asks for it: starting a run, resuming one (the run page's resume form
posts to the same API), a replan written for a run, or a worker picking a step up from
the queue. The CLI's paths are in tests/unit/runtime/test_gate.py and tests/unit/cli.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from audit.models import AuditEvent
from forge.plan import content_hash, from_data
from forge.runners import builtin_runners
from forge.runtime import ToolExecutor
from forge.tools import PolicyEngine
from plans import compilation
from plans import services as plan_services
from plans.gate import approval_signer, gate
from plans.models import Approval, Plan, PlannerProposal, PlanVersion
from runs import engine, execution, worker
from runs.models import Run, RunEvent, StepRun

from .runs_helpers import drain

# Workers commit (and close connections between tasks) as in production.
pytestmark = pytest.mark.django_db(transaction=True)

STEPS = [
    {"id": "inspect", "description": "Collect the contract facts", "tool": "echo",
     "args": {"facts": ["a", "b"]}, "done_when": {"required_keys": ["facts"]}},
    {"id": "score", "description": "Score the supplier risk", "tool": "echo",
     "args": {"risk": 3}, "depends_on": ["inspect"], "done_when": {"checks": ["risk <= `5`"]}},
    {"id": "publish", "description": "Write the risk report", "tool": "file_write",
     "args": {"path": "report.md", "content": "low risk"}, "depends_on": ["score"]},
]  # fmt: skip


def document(risk: int = 3, **fields: Any) -> dict[str, Any]:
    steps = copy.deepcopy(STEPS)
    steps[1]["args"] = {"risk": risk}
    return {"goal": "Prepare the supplier risk report", **fields, "steps": steps}


class CountingRunner:
    """A built-in runner whose every call is counted; its preview (if any) is its own."""

    def __init__(self, inner: Any, calls: list[tuple[str, str]]) -> None:
        self.inner, self.calls = inner, calls

    def run(self, tool: Any, args: Any, context: Any) -> Any:
        self.calls.append((context.run_id, context.step_id))
        return self.inner.run(tool, args, context)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
def runner_calls(monkeypatch: pytest.MonkeyPatch) -> list:
    """Every call that reaches a runner in this test, as (run id, step id)."""
    calls: list[tuple[str, str]] = []
    counting = ToolExecutor(
        compilation.registry(),
        PolicyEngine(compilation.policy()),
        execution.DatabaseRecordStore(),
        {name: CountingRunner(runner, calls) for name, runner in builtin_runners().items()},
        approvals=approval_signer(),
    )
    for module in (execution, worker, engine):
        monkeypatch.setattr(module, "executor", lambda: counting)
    return calls


def _new(plan: Plan | None, user: Any, data: dict[str, Any] | None) -> PlanVersion:
    """Version 1 of a new plan, or the next version of ``plan``."""
    doc = from_data(data or document())
    if plan is None:
        return plan_services.create_plan(user, "Supplier risk", doc)
    return plan_services.create_version(plan, user, doc)


def _approved(author: Any, approver: Any, data: dict[str, Any] | None = None) -> PlanVersion:
    version = _new(None, author, data)
    plan_services.approve(version, approver, "looks right")
    version.refresh_from_db()
    return version


# --- How a version comes to be unfit to run --------------------------------------------
# Each makes a version (of ``plan``, or of a new plan) that must never run.


def unapproved(plan: Plan | None, author: Any, approver: Any, make_user: Any) -> PlanVersion:
    return _new(plan, author, None)


def self_approved(plan: Plan | None, author: Any, approver: Any, make_user: Any) -> PlanVersion:
    # Ada writes and approves her own version, by a row written around the services (they
    # refuse it), even signed with the deployment's key.
    ada = make_user("ada", "author", "approver", "operator")
    version = _new(plan, ada, None)
    digest = content_hash(compilation.stored_document(version))
    signed = gate()._signed(str(version.plan_id), version.number, digest, "ada", "ada",
                            by_policy=False)  # fmt: skip
    Approval.objects.create(version=version, reviewer=ada, decision="approved",
                            content_hash=digest, signature=signed.signature)  # fmt: skip
    PlanVersion.objects.filter(pk=version.pk).update(status="approved")
    return PlanVersion.objects.get(pk=version.pk)


def forged(plan: Plan | None, author: Any, approver: Any, make_user: Any) -> PlanVersion:
    version = _new(plan, author, None)
    Approval.objects.create(version=version, reviewer=approver, decision="approved",
                            content_hash=version.content_hash, signature="0" * 64)  # fmt: skip
    PlanVersion.objects.filter(pk=version.pk).update(status="approved")
    return PlanVersion.objects.get(pk=version.pk)


def tampered(plan: Plan | None, author: Any, approver: Any, make_user: Any) -> PlanVersion:
    version = _new(plan, author, None)
    plan_services.approve(version, approver, "looks right")
    changed = copy.deepcopy(version.document)
    changed["steps"][-1]["args"]["content"] = "forwarded to an outside address"
    PlanVersion.objects.filter(pk=version.pk).update(document=changed)
    return PlanVersion.objects.get(pk=version.pk)


def changes_requested(plan: Plan | None, author: Any, approver: Any, make_user: Any) -> PlanVersion:
    # Approved by one approver, then sent back by another: the latest decision is the
    # status, and a version with changes requested never runs, like a rejected one.
    version = _new(plan, author, None)
    plan_services.approve(version, approver, "looks right")
    second = make_user("grace", "approver")
    plan_services.request_changes(version, second, "the score step needs a contract")
    return PlanVersion.objects.get(pk=version.pk)


UNFIT: list[tuple[Callable[..., PlanVersion], str]] = [
    (unapproved, "not_approved"),
    (changes_requested, "not_approved"),
    (self_approved, "self_approval"),
    (forged, "approval_invalid"),
    (tampered, "content_changed"),
]
IDS = ["unapproved", "changes requested", "self-approved", "forged approval", "hash mismatch"]


def _post(client: Any, path: str, body: dict[str, Any]) -> Any:
    return client.post(f"/api/v1{path}", body, content_type="application/json")


# --- Start ------------------------------------------------------------------------------


@pytest.mark.parametrize(("make", "code"), UNFIT, ids=IDS)
def test_starting_an_unfit_version_is_refused_and_nothing_runs(
    make, code, author, approver, operator, make_user, api_client, runner_calls
):
    version = make(None, author, approver, make_user)

    answer = _post(api_client(operator), "/runs", {"plan_id": version.plan_id, "version": 1})
    drain()

    assert answer.status_code == 409, answer.json()
    assert answer.json()["code"] == code
    assert not Run.objects.exists()
    assert runner_calls == []


def test_an_approved_version_starts_and_its_run_records_who_approved_what(
    author, approver, operator, api_client, runner_calls
):
    version = _approved(author, approver)

    answer = _post(api_client(operator), "/runs", {"plan_id": version.plan_id, "version": 1})
    drain()

    assert answer.status_code == 201, answer.json()
    run = Run.objects.get()
    assert run.status == "succeeded"
    started = RunEvent.objects.get(run=run, event_type="run_started")
    assert started.facts["approval"]["approver"] == "approver"
    assert started.facts["approval"]["content_hash"] == version.content_hash
    audit = AuditEvent.objects.get(action="run.started")
    assert (audit.payload["approved_by"], audit.payload["content_hash"]) == (
        "approver",
        version.content_hash,
    )
    assert [step for _, step in runner_calls] == ["inspect", "score", "publish"]


# --- A worker picking a step up -----------------------------------------------------------


def test_a_worker_never_runs_a_step_of_a_document_changed_after_the_run_started(
    author, approver, operator, api_client, runner_calls
):
    version = _approved(author, approver)
    _post(api_client(operator), "/runs", {"plan_id": version.plan_id, "version": 1})
    changed = copy.deepcopy(version.document)
    changed["steps"][0]["args"] = {"facts": ["read /etc/shadow"]}
    PlanVersion.objects.filter(pk=version.pk).update(document=changed)
    # A worker process that has not compiled this version yet reads it as it is now.
    engine._SCHEDULERS.clear()
    engine._GRAPHS.clear()

    drain()

    run = Run.objects.get()
    assert run.status == "failed"
    assert "content_changed" in run.blocked_reason
    assert runner_calls == []


# --- Resume --------------------------------------------------------------------------------


def _run_needing_a_replan(author: Any, approver: Any, client: Any) -> Run:
    version = _approved(author, approver, document(risk=9))
    _post(client, "/runs", {"plan_id": version.plan_id, "version": 1})
    drain()
    run = Run.objects.get()
    assert run.status == "needs_replan"
    return run


@pytest.mark.parametrize(("make", "code"), UNFIT, ids=IDS)
def test_resuming_on_an_unfit_version_is_refused_and_none_of_its_steps_run(
    make, code, author, approver, operator, make_user, api_client, runner_calls
):
    client = api_client(operator)
    run = _run_needing_a_replan(author, approver, client)
    before = list(runner_calls)
    v1 = run.version
    make(run.plan, author, approver, make_user)

    answer = _post(client, f"/runs/{run.pk}/resume", {"version": 2})
    drain()

    assert answer.status_code == 409, answer.json()
    expected = "needs_person" if code == "not_approved" else code
    assert answer.json()["code"] == expected
    assert Run.objects.get(pk=run.pk).version_id == v1.pk
    assert runner_calls == before


def test_a_replan_written_for_a_run_carries_what_it_already_did_and_waits_for_review(
    author, approver, operator, make_user, api_client, runner_calls
):
    client = api_client(operator)
    run = _run_needing_a_replan(author, approver, client)
    before = list(runner_calls)

    written = _post(api_client(author), f"/runs/{run.pk}/replans", {"document": document(3)})
    resumed = _post(client, f"/runs/{run.pk}/resume", {"version": 2})
    drain()

    assert written.status_code == 201, written.json()
    assert written.json()["parent"] == 1
    assert written.json()["status"] == "awaiting_approval"
    assert "step 'score' invalid" in written.json()["replan_reason"]
    assert resumed.status_code == 409
    assert resumed.json()["code"] == "needs_person"
    assert runner_calls == before
    assert AuditEvent.objects.filter(action="run.replanned").count() == 1


def test_a_person_approving_the_replan_lets_the_run_resume(
    author, approver, operator, api_client, runner_calls
):
    client = api_client(operator)
    run = _run_needing_a_replan(author, approver, client)
    _post(api_client(author), f"/runs/{run.pk}/replans", {"document": document(3)})
    plan_services.approve(PlanVersion.objects.get(plan=run.plan, number=2), approver, "ok")

    resumed = _post(client, f"/runs/{run.pk}/resume", {"version": 2})
    drain()

    assert resumed.status_code == 200, resumed.json()
    assert Run.objects.get(pk=run.pk).status == "succeeded"
    assert [step for _, step in runner_calls] == ["inspect", "score", "score", "publish"]


def test_a_drifted_replan_is_refused_counted_and_the_run_stays_on_its_approved_version(
    author, approver, operator, api_client, runner_calls
):
    client = api_client(operator)
    version = _approved(author, approver, document(9, requires_approval_before=["file_write"]))
    _post(client, "/runs", {"plan_id": version.plan_id, "version": 1})
    drain()
    run = Run.objects.get()
    _post(api_client(author), f"/runs/{run.pk}/replans", {"document": document(3)})

    refused = _post(client, f"/runs/{run.pk}/resume", {"version": 2})

    assert refused.status_code == 409
    assert refused.json()["code"] == "drift_needs_approval"
    assert "stays on v1, the last approved version" in refused.json()["detail"]
    assert Run.objects.get(pk=run.pk).version_id == version.pk
    [audit] = AuditEvent.objects.filter(action="run.resume_refused")
    assert audit.payload["drift"] == ["approval before 'file_write' is no longer required"]
    metrics = api_client(approver).get("/api/v1/metrics").json()
    assert metrics["plan_drift_rate"]["drifted"] == 1


# --- The policy's exception -------------------------------------------------------------------


def test_a_read_only_replan_continues_on_the_policys_approval_which_is_recorded(
    read_only_replans, author, approver, operator, api_client, runner_calls
):
    client = api_client(operator)
    run = _run_needing_a_replan(author, approver, client)
    _post(api_client(author), f"/runs/{run.pk}/replans", {"document": document(3)})

    resumed = _post(client, f"/runs/{run.pk}/resume", {"version": 2})
    drain()

    assert resumed.status_code == 200, resumed.json()
    assert Run.objects.get(pk=run.pk).status == "succeeded"
    approval = Approval.objects.get(version__number=2)
    assert (approval.by_policy, approval.reviewer, approval.decision) == (True, None, "approved")
    assert AuditEvent.objects.filter(action="plan_version.approved", actor="policy").exists()
    resumed_event = RunEvent.objects.get(run=run, event_type="run_resumed")
    assert resumed_event.facts["approval"]["approver"] == "policy"


def test_a_replan_that_changes_a_write_needs_a_person_even_under_that_policy(
    read_only_replans, author, approver, operator, api_client, runner_calls
):
    client = api_client(operator)
    run = _run_needing_a_replan(author, approver, client)
    changed = document(3)
    changed["steps"][2]["args"]["content"] = "high risk after all"
    _post(api_client(author), f"/runs/{run.pk}/replans", {"document": changed})

    refused = _post(client, f"/runs/{run.pk}/resume", {"version": 2})

    assert refused.status_code == 409
    assert refused.json()["code"] == "needs_person"
    assert "whose file_write has a write side effect" in refused.json()["detail"]
    assert not Approval.objects.filter(version__number=2).exists()


# --- Steps: preview, then commit ------------------------------------------------------------


def _waiting_publication(author, approver, client) -> Run:
    version = _approved(author, approver, document(3, requires_approval_before=["file_write"]))
    _post(client, "/runs", {"plan_id": version.plan_id, "version": 1})
    drain()
    run = Run.objects.get()
    assert StepRun.objects.get(run=run, step_id="publish").status == "awaiting_approval"
    return run


def test_a_waiting_write_shows_its_diff_and_the_approval_binds_it(
    author, approver, operator, api_client, runner_calls, settings
):
    run = _waiting_publication(author, approver, api_client(operator))
    report = Path(settings.FORGE_WORKSPACES) / f"run-{run.pk}" / "report.md"

    step = _step(api_client(approver), run, "publish")
    preview = step["preview"]
    stale = _post(api_client(approver), f"/runs/{run.pk}/steps/publish/approve",
                  {"preview_hash": "0" * 64})  # fmt: skip
    fresh = _post(api_client(approver), f"/runs/{run.pk}/steps/publish/approve",
                  {"preview_hash": preview["hash"]})  # fmt: skip
    drain()

    assert preview["kind"] == "file_write"
    assert "+++ b/report.md" in preview["text"] and "+low risk" in preview["text"]
    assert stale.status_code == 409 and stale.json()["code"] == "preview_changed"
    assert fresh.status_code == 200, fresh.json()
    assert report.read_text() == "low risk"
    assert Run.objects.get(pk=run.pk).status == "succeeded"


def test_a_write_whose_file_changed_after_approval_is_refused_and_asked_again(
    author, approver, operator, api_client, runner_calls, settings
):
    run = _waiting_publication(author, approver, api_client(operator))
    report = Path(settings.FORGE_WORKSPACES) / f"run-{run.pk}" / "report.md"
    first = _step(api_client(approver), run, "publish")["preview"]
    _post(api_client(approver), f"/runs/{run.pk}/steps/publish/approve",
          {"preview_hash": first["hash"]})  # fmt: skip
    report.write_text("someone else's report\n")

    drain()

    step = _step(api_client(approver), run, "publish")
    assert step["status"] == "awaiting_approval"
    assert "-someone else's report" in step["preview"]["text"]
    assert report.read_text() == "someone else's report\n"
    assert ("publish" not in [s for _, s in runner_calls]) is True
    again = _post(api_client(approver), f"/runs/{run.pk}/steps/publish/approve",
                  {"preview_hash": step["preview"]["hash"]})  # fmt: skip
    drain()
    assert again.status_code == 200
    assert report.read_text() == "low risk"


def _step(client: Any, run: Run, step_id: str) -> dict[str, Any]:
    steps = client.get(f"/api/v1/runs/{run.pk}").json()["steps"]
    return next(step for step in steps if step["step_id"] == step_id)


# --- What a run did travels with it: artifacts, performed side effects ------------------

COMPILE = "echo compiling; echo missing semicolon >&2; exit 2"
BUILD = {"id": "build", "description": "Build the release bundle", "tool": "shell",
         "args": {"argv": ["sh", "-c", COMPILE]}}  # fmt: skip
MARK = {"id": "mark", "description": "Mark the release as started", "tool": "shell",
        "args": {"argv": ["touch", "started"]}}  # fmt: skip


@pytest.mark.requires("bwrap")
def test_a_failed_step_keeps_its_logs_on_its_event_and_in_the_run(
    author, approver, operator, api_client, runner_calls
):
    version = _approved(author, approver, {"goal": "Build the release", "steps": [BUILD]})
    _post(api_client(operator), "/runs", {"plan_id": version.plan_id, "version": 1})
    drain()

    run = Run.objects.get()
    failed = RunEvent.objects.get(run=run, event_type="step_failed")
    names = [artifact["name"] for artifact in failed.artifacts]
    step = _step(api_client(operator), run, "build")
    record = api_client(operator).get(f"/api/v1/runs/{run.pk}/records").json()[0]
    assert names == ["preview", "stdout", "stderr"]
    assert {artifact["record"] for artifact in failed.artifacts} == {record["id"]}
    assert step["artifacts"] == failed.artifacts
    stderr = next(a for a in record["artifacts"] if a["name"] == "stderr")
    log = api_client(operator).get(f"/api/v1/runs/{run.pk}/artifacts/{stderr['id']}")
    assert log.content == b"missing semicolon\n"


@pytest.mark.requires("bwrap")
def test_a_web_replan_is_warned_of_a_side_effect_the_run_already_performed(
    author, approver, operator, api_client, runner_calls
):
    failing = {"goal": "Build the release", "steps": [
        MARK, {**BUILD, "depends_on": ["mark"]},
    ]}  # fmt: skip
    version = _approved(author, approver, failing)
    _post(api_client(operator), "/runs", {"plan_id": version.plan_id, "version": 1})
    drain()
    run = Run.objects.get()
    assert run.status == "needs_replan"
    # The fix renames the marking step: the same command, so the same side effect again.
    fixed = {"goal": "Build the release", "steps": [
        {**MARK, "id": "mark_again"},
        {**BUILD, "args": {"argv": ["true"]}, "depends_on": ["mark_again"]},
    ]}  # fmt: skip

    written = _post(api_client(author), f"/runs/{run.pk}/replans", {"document": fixed})

    assert written.status_code == 201, written.json()
    mark = next(iter(version.plan.versions.get(number=1).document["steps"]))
    assert written.json()["performed_side_effects"] == [
        {"tool": "shell", "step": "mark", "args_hash": _args_hash(mark["args"])}
    ]
    [warning] = [d for d in written.json()["diagnostics"] if d["code"] == "repeats_side_effect"]
    assert warning["nodes"] == ["mark_again"]
    assert "already performed by step 'mark'" in warning["message"]


def _args_hash(args: dict[str, Any]) -> str:
    import hashlib

    from forge.plan import canonical_json

    return hashlib.sha256(canonical_json(args).encode()).hexdigest()


@pytest.mark.parametrize("decided", ["rejected", "changes requested", "draft"])
def test_the_policy_never_overrules_a_persons_rejection_or_an_unsubmitted_draft(
    decided, read_only_replans, author, approver, operator, api_client, runner_calls
):
    client = api_client(operator)
    run = _run_needing_a_replan(author, approver, client)
    before = list(runner_calls)
    if decided == "rejected":
        _post(api_client(author), f"/runs/{run.pk}/replans", {"document": document(3)})
        plan_services.reject(PlanVersion.objects.get(plan=run.plan, number=2), approver, "no")
    elif decided == "changes requested":
        _post(api_client(author), f"/runs/{run.pk}/replans", {"document": document(3)})
        v2 = PlanVersion.objects.get(plan=run.plan, number=2)
        answer = _post(api_client(approver), f"/versions/{v2.pk}/request-changes",
                       {"comment": "say why the score is 3"})  # fmt: skip
        assert answer.status_code == 200, answer.json()
    else:
        plan_services.create_version(run.plan, author, from_data(document(3)), submit=False)

    refused = _post(client, f"/runs/{run.pk}/resume", {"version": 2})
    drain()

    assert refused.status_code == 409
    assert refused.json()["code"] == "needs_person"
    assert f"version 2 is {decided}" in refused.json()["detail"]
    assert not Approval.objects.filter(version__number=2, by_policy=True).exists()
    assert runner_calls == before


# --- Planner paths: POST /plans/generate and automatic replans (replan: auto) -----------


@pytest.fixture
def scripted_planner(monkeypatch: pytest.MonkeyPatch, settings: Any) -> list:
    """The deployment's planner hands out the documents appended to this list, in order."""
    from forge.planners import ScriptedPlanner
    from plans import planning

    documents: list[dict[str, Any]] = []
    settings.FORGE_PLANNER = "scripted:gate-tests"

    class Script(ScriptedPlanner):
        def plan(self, task: str, observation: Any) -> Any:
            self._documents = [from_data(d) for d in documents]
            return super().plan(task, observation)

    planner = Script([], name="scripted:gate-tests")
    monkeypatch.setattr(planning, "deployment_planner", lambda: planner)
    return documents


def _generated(client: Any) -> PlanVersion:
    """Ask for a plan and let a worker answer: the planner's version 1, its asker's draft."""
    answer = _post(client, "/plans/generate", {"goal": "Prepare the supplier risk report"})
    assert answer.status_code == 202, answer.json()
    drain()
    version = PlannerProposal.objects.get(pk=answer.json()["id"]).version
    assert version is not None and version.status == "draft"
    return version


@pytest.mark.parametrize(("make", "code"), UNFIT, ids=IDS)
def test_a_generated_version_is_held_to_the_same_gate(
    make, code, scripted_planner, author, approver, operator, make_user, api_client, runner_calls
):
    scripted_planner.append(document())
    generated = _generated(api_client(author))
    assert (generated.author, generated.planner) == (author, "scripted:gate-tests")
    # The planner's first version, made unfit the same ways as a person's next version.
    version = make(generated.plan, author, approver, make_user)

    answer = _post(api_client(operator), "/runs", {"plan_id": version.plan_id,
                                                   "version": version.number})  # fmt: skip
    drain()

    assert answer.status_code == 409, answer.json()
    assert answer.json()["code"] == code
    assert runner_calls == []


def test_the_person_who_asked_for_a_plan_cannot_approve_the_planners_version(
    scripted_planner, make_user, approver, operator, api_client, runner_calls
):
    ada = make_user("ada", "author", "approver", "operator")
    scripted_planner.append(document())
    version = _generated(api_client(ada))
    path = f"/plans/{version.plan_id}/versions/1"
    run = {"plan_id": version.plan_id, "version": 1}

    # Her draft: nobody can approve it, nothing of it runs, until she submits it.
    draft_approved = _post(api_client(approver), f"{path}/approve", {})
    draft_started = _post(api_client(operator), "/runs", run)
    submitted = _post(api_client(ada), f"/versions/{version.pk}/submit", {})
    own = _post(api_client(ada), f"{path}/approve", {})
    refused = _post(api_client(ada), "/runs", run)
    approved = _post(api_client(approver), f"{path}/approve", {})
    started = _post(api_client(operator), "/runs", run)
    drain()

    assert (draft_approved.status_code, draft_approved.json()["code"]) == (409, "not_submitted")
    assert (draft_started.status_code, draft_started.json()["code"]) == (409, "not_approved")
    assert submitted.status_code == 200
    assert own.status_code == 403
    assert (refused.status_code, refused.json()["code"]) == (409, "not_approved")
    assert approved.status_code == 200 and started.status_code == 201
    assert [step for _, step in runner_calls] == ["inspect", "score", "publish"]


def _auto_run(author: Any, approver: Any, operator: Any, client: Any) -> Run:
    version = _approved(author, approver, document(risk=9, replan="auto"))
    _post(client, "/runs", {"plan_id": version.plan_id, "version": 1})
    drain()
    return Run.objects.get()


def test_an_automatic_replan_made_for_the_runs_starter_needs_another_person(
    scripted_planner, author, approver, make_user, api_client, runner_calls
):
    ada = make_user("ada", "operator", "approver")
    scripted_planner.append(document(3, replan="auto"))
    run = _auto_run(author, approver, ada, api_client(ada))
    before = list(runner_calls)
    v2 = PlanVersion.objects.get(plan=run.plan, number=2)
    assert (v2.author, v2.status, run.status) == (ada, "awaiting_approval", "needs_replan")

    own = _post(api_client(ada), f"/plans/{run.plan_id}/versions/2/approve", {})
    resumed = _post(api_client(ada), f"/runs/{run.pk}/resume", {"version": 2})
    drain()

    assert own.status_code == 403
    assert (resumed.status_code, resumed.json()["code"]) == (409, "needs_person")
    assert runner_calls == before
    _post(api_client(approver), f"/plans/{run.plan_id}/versions/2/approve", {})
    drain()
    assert Run.objects.get(pk=run.pk).status == "succeeded"
    assert [step for _, step in runner_calls[len(before) :]] == ["score", "publish"]


@pytest.mark.parametrize("unfit", ["self-approved", "forged approval", "hash mismatch"])
def test_an_automatic_resume_refuses_an_unfit_replan_and_nothing_of_it_runs(
    unfit, scripted_planner, read_only_replans, author, approver, make_user, api_client,
    runner_calls,
):  # fmt: skip
    ada = make_user("ada", "operator", "approver")
    # A replan that writes: the policy may not approve it, so it waits for a person.
    changed = document(3, replan="auto")
    changed["steps"][2]["args"]["content"] = "changed report"
    scripted_planner.append(changed)
    run = _auto_run(author, approver, ada, api_client(ada))
    before = list(runner_calls)
    v2 = PlanVersion.objects.get(plan=run.plan, number=2)
    digest = content_hash(compilation.stored_document(v2))
    if unfit == "self-approved":
        signed = gate()._signed(str(v2.plan_id), 2, digest, "ada", "ada", by_policy=False)
        Approval.objects.create(version=v2, reviewer=ada, decision="approved",
                                content_hash=digest, signature=signed.signature)  # fmt: skip
    elif unfit == "forged approval":
        Approval.objects.create(version=v2, reviewer=approver, decision="approved",
                                content_hash=digest, signature="0" * 64)  # fmt: skip
    else:
        plan_services.approve(v2, approver, "ok")
        tampered = copy.deepcopy(v2.document)
        tampered["steps"][2]["args"]["content"] = "forwarded to an outside address"
        PlanVersion.objects.filter(pk=v2.pk).update(document=tampered)
        engine._GRAPHS.clear()
    PlanVersion.objects.filter(pk=v2.pk).update(status="approved")

    from runs import replanning

    replanning.resume_after_approval(v2.pk, "approver")
    drain()

    run.refresh_from_db()
    assert (run.status, run.version.number) == ("needs_replan", 1)
    assert runner_calls == before
