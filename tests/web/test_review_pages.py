"""The review pages (reviews.views, reviews.queue): who is offered what in the approval
queue, what each item says (diff against the last approved version, risk, scopes, pauses,
budget estimate, drift; a step's exact arguments and bound hash), the topbar's count, and
a run's replan story (lineage, failure, reset and kept sets, diff and drift)."""

from __future__ import annotations

import json
import re

import pytest

from forge.plan import from_data
from plans import services as plan_services
from reviews import queue as review
from reviews.budget import budget_rows
from reviews.replan_story import replan_story
from runs import services
from runs.models import Run, RunEvent
from runs.previews import preview_view

from .runs_helpers import approved_version, drain

pytestmark = pytest.mark.django_db(transaction=True)

GOAL = "Publish the quarterly supplier review"
STEPS = [
    {
        "id": "collect",
        "description": "Collect the scores",
        "tool": "echo",
        "args": {"n": 1},
        "estimate": {"tokens": 100, "cost": 0.25},
    },
    {
        "id": "publish",
        "description": "Write the review <img src=x onerror=alert(1)>",
        "tool": "file_write",
        "args": {"path": "review.md", "content": "<script>alert(1)</script>"},
        "depends_on": ["collect"],
    },
]
GUARDED = {
    "goal": GOAL,
    "risk_level": "medium",
    "requires_approval_before": ["file_write"],
    "budget": {"max_steps": 4, "max_tokens": 150, "max_cost": 1.0},
}


@pytest.fixture(autouse=True)
def workspaces(settings, tmp_path):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")


def page_data(response, element_id):
    match = re.search(
        rf'<script id="{element_id}" type="application/json">(.*?)</script>',
        response.content.decode(),
        re.DOTALL,
    )
    assert match, f"no #{element_id} on the page"
    return json.loads(match.group(1))


def item_keys(response):
    return re.findall(
        r'<article class="review-item card" id="([a-z0-9-]+)"', response.content.decode()
    )


def document(steps=STEPS, **fields):
    return from_data({**GUARDED, **fields, "steps": steps})


def waiting_run(author, approver, operator):
    """A run of an approved, guarded version whose `publish` waits for approval."""
    version = approved_version(author, approver, STEPS, **GUARDED)
    run = services.start_run(version, operator)
    drain()
    run.refresh_from_db()
    assert run.status == "awaiting_approval"
    return run


# --- Who sees the queue ------------------------------------------------------------------


def test_the_queue_is_for_approvers(viewer, author, operator, client):
    for user in (viewer, author, operator):
        client.force_login(user)
        assert client.get("/review/").status_code == 403


def test_the_topbar_shows_the_review_link_with_a_count_only_to_approvers(
    author, approver, operator, viewer, client
):
    waiting_run(author, approver, operator)
    plan_services.create_version(Run.objects.get().plan, author, document(), note="again")

    client.force_login(approver)
    body = client.get("/plans/").content.decode()
    client.force_login(viewer)
    other = client.get("/plans/").content.decode()

    assert re.search(
        r'id="review-link"[^>]*>Review <span class="nav-count" id="review-count"', body
    )
    assert re.search(r'id="review-count"[^>]*>2</span>', body)
    assert 'id="review-link"' not in other


def test_the_queue_offers_only_submitted_compiling_versions_by_someone_else(
    make_user, author, approver, client
):
    other = make_user("other", "author", "approver")
    mine = plan_services.create_plan(approver, "Mine", document())
    draft = plan_services.create_plan(author, "Draft", document(), submit=False)
    broken = plan_services.create_plan(author, "Broken", document([{"id": "a", "tool": "nope"}]))
    decided = plan_services.create_plan(author, "Decided", document())
    plan_services.approve(decided, other)
    offered = plan_services.create_plan(author, "Offered", document())
    client.force_login(approver)

    response = client.get("/review/")

    assert response.status_code == 200
    assert item_keys(response) == [f"version-{offered.pk}"]
    assert (mine.status, draft.status, broken.status) == (
        "awaiting_approval",
        "draft",
        "has_errors",
    )
    assert b"1 version you wrote waits for another approver." in response.content


def test_a_version_is_compared_with_the_last_version_a_person_decided_on(author, approver, client):
    v1 = plan_services.create_plan(author, "Board", document())
    plan_services.approve(v1, approver)
    v2 = plan_services.create_version(v1.plan, author, document(), note="unapproved")
    plan_services.reject(v2, approver, "no")
    changed = [dict(STEPS[0], args={"n": 2}), STEPS[1]]
    changed.append({"id": "tell", "tool": "echo", "args": {}, "depends_on": ["publish"]})
    v3 = plan_services.create_version(
        v1.plan, author, document(changed, requires_approval_before=[]), note="v3"
    )
    client.force_login(approver)

    response = client.get("/review/")
    graph = page_data(response, "review-data")["graphs"][f"version-{v3.pk}"]

    assert item_keys(response) == [f"version-{v3.pk}"]
    assert graph["baseline"] == 2  # rejected: the last version an approver saw
    assert graph["diff"]["added_steps"] == ["tell"]
    assert [c["id"] for c in graph["diff"]["changed_steps"]] == ["collect"]
    assert graph["from"]["steps"][0]["args"] == {"n": 1}
    body = response.content.decode()
    assert "Changes since v2 <span" in body and "(rejected)" in body
    assert "args.n: 1 → 2" in body
    # Drift is from the last approved version, v1.
    assert "Drift from v1" in body
    assert "Approval before &#x27;file_write&#x27; is no longer required" in body


def test_a_first_version_says_so(author, approver, client):
    version = plan_services.create_plan(author, "New", document())
    client.force_login(approver)

    response = client.get("/review/")

    assert b"First version to review" in response.content
    graph = page_data(response, "review-data")["graphs"][f"version-{version.pk}"]
    assert (graph["baseline"], graph["from"], graph["diff"]) == (None, None, None)


def test_a_version_item_holds_risk_scopes_pauses_and_the_budget_estimate(author, approver):
    version = plan_services.create_plan(author, "Board", document())

    queue = review.queue_for(approver)

    [item] = queue.versions
    assert item["key"] == f"version-{version.pk}"
    assert item["risk_level"] == "medium"
    assert item["scopes"] == ["file_write"]
    assert item["pauses"] == [
        {"step": "publish", "reasons": ["plan requires approval before scope 'file_write'"]}
    ]
    assert item["budget"] == [
        {"name": "steps", "label": "Steps", "estimate": 2, "limit": 4, "over": False, "share": 50},
        {"name": "tokens", "label": "Tokens", "estimate": 100, "limit": 150, "over": False,
         "share": 67},
        {"name": "cost", "label": "Cost", "estimate": 0.25, "limit": 1.0, "over": False,
         "share": 25},
        {"name": "estimated", "value": 1, "of": 2},
    ]  # fmt: skip


def test_an_estimate_over_the_budget_is_flagged():
    rows = budget_rows(
        from_data(
            {
                "goal": "g",
                "budget": {"max_tokens": 100},
                "steps": [
                    {"id": "a", "tool": "noop", "estimate": {"tokens": 80}},
                    {"id": "b", "tool": "noop", "estimate": {"tokens": 30}},
                ],
            }
        )
    )

    assert [
        (row["name"], row.get("estimate"), row.get("limit"), row.get("over")) for row in rows
    ] == [
        ("steps", 2, None, False),
        ("tokens", 110, 100, True),
        ("cost", 0.0, None, False),
        ("estimated", None, None, None),
    ]


def test_the_card_shows_the_compiler_s_figures_so_costs_that_sum_to_the_limit_are_not_over(
    author, approver
):
    # 0.1 + 0.2 is 0.30000000000000004 in floats: the compiler rounds the sum, and so must
    # the card, or it says "over budget" where the compiler warns of nothing.
    steps = [
        {"id": "a", "description": "Fetch the orders", "tool": "echo", "args": {"n": 1},
         "estimate": {"cost": 0.1}},
        {"id": "b", "description": "Score the orders", "tool": "echo", "args": {"n": 2},
         "depends_on": ["a"], "estimate": {"cost": 0.2}},
    ]  # fmt: skip
    version = plan_services.create_plan(
        author, "Costs", from_data({"goal": "g", "budget": {"max_cost": 0.3}, "steps": steps})
    )
    assert "budget_exceeded_statically" not in {d["code"] for d in version.diagnostics}

    [item] = review.queue_for(approver).versions

    [cost] = [row for row in item["budget"] if row["name"] == "cost"]
    assert (cost["estimate"], cost["limit"], cost["over"]) == (0.3, 0.3, False)


def test_the_queue_shows_a_waiting_step_with_its_exact_arguments_and_hash(
    author, approver, operator, client
):
    run = waiting_run(author, approver, operator)
    client.force_login(approver)

    response = client.get("/review/")
    [item] = review.queue_for(approver).steps

    assert item_keys(response) == [f"step-{run.pk}-publish"]
    assert item["tool"] == "file_write"
    assert json.loads(item["args"]) == {"path": "review.md", "content": "<script>alert(1)</script>"}
    assert item["reasons"] == ["plan requires approval before scope 'file_write'"]
    assert (item["scope"], item["side_effect"]) == ("file_write", "write")
    assert item["args_hash"] == run.steps.get(step_id="publish", plan_version=1).args_hash
    assert item["hash_matches"] is True
    body = response.content.decode()
    assert "= SHA-256 of the arguments shown" in body
    assert "<script>alert(1)</script>" not in body
    assert "<img src=x" not in body


def test_the_queue_shows_what_a_waiting_step_will_do_and_its_approval_binds_that_preview(
    author, approver, operator, client
):
    run = waiting_run(author, approver, operator)
    preview = RunEvent.objects.get(run=run, event_type="step_awaiting_approval").facts["preview"]
    client.force_login(approver)

    body = client.get("/review/").content.decode()
    [item] = review.queue_for(approver).steps

    assert item["preview"]["summary"] == "write review.md (+1 -0)"
    assert [(line["kind"], line["text"]) for line in item["preview"]["lines"]] == [
        ("meta", "--- /dev/null"),
        ("meta", "+++ b/review.md"),
        ("hunk", "@@ -0,0 +1 @@"),
        ("add", "+<script>alert(1)</script>"),
        ("meta", "\\ No newline at end of file"),
    ]
    assert (
        f'<section class="preview-card" data-kind="file_write" data-hash="{preview["hash"]}">'
        in body
    )
    assert '<span class="line line-add">+&lt;script&gt;alert(1)&lt;/script&gt;</span>' in body
    assert '<span class="line line-hunk">@@ -0,0 +1 @@</span>' in body
    assert f'data-preview-hash="{preview["hash"]}"' in body
    assert "Approving binds exactly this preview" in body
    assert f'title="{preview["hash"]}">{preview["hash"][:12]}…</code>' in body


def test_a_step_whose_call_cannot_be_previewed_is_shown_as_a_warning(
    author, approver, operator, client
):
    steps = [dict(STEPS[1], args={"path": "../outside.md", "content": "x"}, depends_on=[])]
    version = approved_version(author, approver, steps, **GUARDED)
    services.start_run(version, operator)
    drain()
    client.force_login(approver)

    body = client.get("/review/").content.decode()
    [item] = review.queue_for(approver).steps

    assert (item["preview"]["kind"], item["preview"]["warning"]) == ("error", True)
    assert '<section class="preview-card warning" data-kind="error"' in body
    assert "This call could not be previewed, so nobody can see what it will do." in body
    assert "resolves outside the run&#x27;s workspace" in body


def test_an_agent_steps_preview_reads_as_what_it_may_call():
    text = "agent step sum: Sum the orders\nmay call:\n- file_search (scope file_read, ...)"
    shown = preview_view(
        {"kind": "agent", "summary": "agent step that may call file_search", "text": text,
         "hash": "ab" * 32}
    )  # fmt: skip

    assert shown is not None
    assert (shown["label"], shown["short_hash"], shown["warning"]) == (
        "Agent step: what it may call",
        "ab" * 6,
        False,
    )
    assert {line["kind"] for line in shown["lines"]} == {"text"}
    assert preview_view(None) is None


def test_steps_are_offered_to_approvers_who_did_not_write_the_version_while_the_run_lives(
    make_user, approver, operator
):
    ada = make_user("ada", "author", "approver")
    run = waiting_run(ada, approver, operator)
    cancelled = waiting_run(ada, approver, operator)
    services.cancel_run(cancelled, operator)

    offered = review.queue_for(approver)
    own = review.queue_for(ada)

    assert [item["run"]["id"] for item in offered.steps] == [run.pk]
    assert (own.steps, own.own_steps) == ([], 1)


def test_the_waiting_count_matches_the_queue(make_user, author, approver, operator):
    waiting_run(author, approver, operator)
    plan_services.create_plan(author, "Another", document())
    checker = make_user("checker", "approver")

    queue = review.queue_for(checker)

    assert review.waiting_count(checker) == len(queue.versions) + len(queue.steps) == 2


def test_the_queue_costs_the_same_queries_for_one_item_or_many(author, approver, operator, client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(approver)
    waiting_run(author, approver, operator)
    plan_services.create_plan(author, "Plan 0", document())

    def queries():
        with CaptureQueriesContext(connection) as captured:
            response = client.get("/review/")
        return len(item_keys(response)), len(captured)

    items_few, queries_few = queries()
    for n in range(1, 6):
        plan_services.create_plan(author, f"Plan {n}", document())
    waiting_run(author, approver, operator)
    items_many, queries_many = queries()

    assert (items_few, items_many) == (2, 8)  # 6 versions, 2 steps
    assert queries_many == queries_few


# --- The replan view -------------------------------------------------------------------


REPLAN_STEPS = [
    {"id": "fetch", "tool": "echo", "args": {"orders": 48}},
    {
        "id": "score",
        "tool": "echo",
        "args": {"risk": 14.6},
        "depends_on": ["fetch"],
        "done_when": {"required_keys": ["risk"], "checks": ["risk <= `10`"]},
    },
    {"id": "report", "tool": "echo", "args": {"ok": True}, "depends_on": ["score"]},
]


def replanned(author, approver, operator):
    v1 = approved_version(author, approver, REPLAN_STEPS, goal=GOAL)
    run = services.start_run(v1, operator)
    drain()
    fixed = [REPLAN_STEPS[0], dict(REPLAN_STEPS[1], args={"risk": 9.0}), REPLAN_STEPS[2]]
    v2 = plan_services.create_version(
        v1.plan,
        author,
        from_data({"goal": GOAL, "steps": fixed, "max_replans": 4}),
        planner="scripted:fixer",
        replan_reason="score over 10",
        note="cap the score",
    )
    plan_services.approve(v2, approver, "fine")
    services.resume_run(run, v2, operator)
    drain()
    run.refresh_from_db()
    assert run.status == "succeeded"
    return run


def test_the_replan_story_names_the_failure_the_sets_the_resume_and_the_drift(
    author, approver, operator
):
    run = replanned(author, approver, operator)

    story = replan_story(run)

    assert [v["number"] for v in story["versions"]] == [1, 2]
    assert story["versions"][1]["planner"] == "scripted:fixer"
    assert story["versions"][1]["replan_reason"] == "score over 10"
    [replan] = story["replans"]
    assert (replan["index"], replan["from"], replan["to"]) == (1, 1, 2)
    assert replan["failure"]["step"] == "score"
    assert replan["failure"]["status"] == "invalid"
    assert replan["failure"]["error"] == "check 1 failed: risk <= `10` with risk = 14.6"
    assert replan["failure"]["verdict"]["checks"] == ["risk <= `10`"]
    assert replan["reset"] == ["report", "score"]
    assert replan["candidates"] == ["fetch"]
    assert replan["resume"]["actor"] == "operator"
    assert replan["resume"]["preserved"] == ["fetch"]
    assert replan["resume"]["reset"] == ["score", "report"]
    assert json.loads(replan["outputs"]["fetch"]["text"]) == {"orders": 48}
    assert [c["id"] for c in replan["diff"]["changed_steps"]] == ["score"]
    assert replan["drift"] == ["max_replans raised from 3 to 4"]
    assert story["pending"] is False


def test_the_replan_page_renders_the_lineage_and_hands_the_documents_over(
    author, approver, operator, viewer, client
):
    run = replanned(author, approver, operator)
    client.force_login(viewer)

    response = client.get(f"/runs/{run.pk}/replans/")

    assert response.status_code == 200
    data = page_data(response, "replan-data")
    assert sorted(data["documents"]) == ["1", "2"]
    assert data["selected"] == 1
    assert data["statuses"]["1"]["score"] == "invalid"
    assert data["statuses"]["2"]["score"] == "succeeded"
    body = response.content.decode()
    assert body.count('class="lineage-version') == 2
    assert "score broke its contract" in body
    assert "resumed by operator on v2" in body
    assert "Max_replans raised from 3 to 4" in body
    assert f'href="/runs/{run.pk}/"' in body


def test_the_run_page_links_to_its_replans(author, approver, operator, client):
    run = replanned(author, approver, operator)
    client.force_login(operator)

    body = client.get(f"/runs/{run.pk}/").content.decode()

    link = f'id="replans-link" href="/runs/{run.pk}/replans/">Replans (1)</a>'
    assert link in body


def test_a_run_without_replans_says_so(author, approver, operator, client):
    version = approved_version(author, approver, REPLAN_STEPS[:1])
    run = services.start_run(version, operator)
    drain()
    client.force_login(operator)

    response = client.get(f"/runs/{run.pk}/replans/")

    assert response.status_code == 200
    assert b'id="no-replans"' in response.content
    assert b"replan/main.js" not in response.content
    assert page_data(response, "replan-data")["replans"] == []


def test_a_waiting_replan_lists_the_newer_versions(author, approver, operator, client):
    v1 = approved_version(author, approver, REPLAN_STEPS)
    run = services.start_run(v1, operator)
    drain()
    plan_services.create_version(v1.plan, author, from_data({"goal": "g", "steps": REPLAN_STEPS}))
    client.force_login(operator)

    response = client.get(f"/runs/{run.pk}/replans/?replan=7")
    story = replan_story(Run.objects.get(pk=run.pk))

    assert story["pending"] is True
    assert [v["number"] for v in story["newer"]] == [2]
    assert page_data(response, "replan-data")["selected"] == 1  # out of range: the latest
    assert b"1 newer version saved" in response.content


def test_the_queue_links_a_version_to_the_run_waiting_for_a_replan(
    author, approver, operator, client
):
    v1 = approved_version(author, approver, REPLAN_STEPS)
    run = services.start_run(v1, operator)
    drain()
    plan_services.create_version(v1.plan, author, from_data({"goal": "g", "steps": REPLAN_STEPS}))
    client.force_login(approver)

    body = client.get("/review/").content.decode()

    assert f'<a href="/runs/{run.pk}/replans/">See the replan</a>' in body


def test_a_kept_step_may_be_named_like_a_dict_method(author, approver, operator, client):
    steps = [
        {"id": "items", "tool": "echo", "args": {"count": 3}},
        {"id": "check", "tool": "fail", "args": {"message": "no"}, "depends_on": ["items"]},
    ]
    version = approved_version(author, approver, steps)
    run = services.start_run(version, operator)
    drain()
    client.force_login(operator)

    body = client.get(f"/runs/{run.pk}/replans/").content.decode()

    kept = re.search(r'<li data-kept="items">.*?</li>', body, re.DOTALL)
    assert kept and "&quot;count&quot;: 3" in kept.group(0)


def test_an_unknown_run_has_no_replan_page(operator, client):
    client.force_login(operator)

    assert client.get("/runs/999/replans/").status_code == 404
    assert client.get(f"/runs/{2**63}/replans/").status_code == 404


def test_the_replan_page_needs_a_role(stranger, client):
    client.force_login(stranger)

    assert client.get("/runs/1/replans/").status_code == 403
