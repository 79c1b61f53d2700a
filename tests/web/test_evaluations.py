"""Evaluation reports on the web: POST /api/v1/evaluations stores what ``forge eval``
reports (authors and operators only), GET lists and reads them (every role), and the
pages show one report and compare two side by side."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from audit.models import AuditEvent
from evaluations.compare import compare, duration
from evaluations.models import Evaluation
from forge.evaluation import SuiteReport, evaluate, planner_from_spec, read_suite

pytestmark = pytest.mark.django_db

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "eval"


@cache
def _report(answers: str) -> dict[str, Any]:
    suite = read_suite(EXAMPLES / "seed-003.yaml")
    planner = planner_from_spec(f"scripted:{EXAMPLES / answers}", suite)
    return evaluate(suite, planner.name, planner.factory).to_data()


def good_report() -> dict[str, Any]:
    return copy.deepcopy(_report("seed-003.answers.yaml"))


def weak_report() -> dict[str, Any]:
    return copy.deepcopy(_report("seed-003.weak-answers.yaml"))


def post(client: Any, body: Any) -> Any:
    return client.post("/api/v1/evaluations", json.dumps(body), content_type="application/json")


@pytest.mark.parametrize("role", ["author", "operator"])
def test_an_author_or_an_operator_uploads_a_report(role, make_user, api_client):
    user = make_user(f"the-{role}", role)

    response = post(api_client(user), good_report())

    assert response.status_code == 201, response.content
    body = response.json()
    stored = Evaluation.objects.get(pk=body["id"])
    assert (body["suite"], body["planner"], body["uploaded_by"]) == (
        "seed-003", "scripted:seed-003.answers.yaml", f"the-{role}",
    )  # fmt: skip
    assert (body["cases"], body["succeeded"], body["success_rate"]) == (5, 5, 1.0)
    assert body["url"] == f"/evaluations/{stored.pk}/"
    assert stored.report["cases"][0]["id"] == "normal-completion"
    event = AuditEvent.objects.get(action="evaluation.upload")
    assert (event.actor, event.object_id, event.payload["succeeded"]) == (
        f"the-{role}", str(stored.pk), 5,
    )  # fmt: skip


@pytest.mark.parametrize("role", ["viewer", "approver"])
def test_a_viewer_or_an_approver_may_not_upload(role, make_user, api_client):
    response = post(api_client(make_user(f"the-{role}", role)), good_report())

    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    assert not Evaluation.objects.exists()


def test_an_anonymous_upload_is_refused(anonymous_client):
    response = post(anonymous_client, good_report())

    assert response.status_code == 401
    assert not Evaluation.objects.exists()


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda r: r.update(schema="forge.eval-report/v0"), "report.schema"),
        (lambda r: r["cases"][0]["scores"].pop(), "report.cases[0].scores"),
        (lambda r: r["cases"][1]["scores"][0].update(value=3), "report.cases[1].scores[0].value"),
        (lambda r: r.pop("planner"), "report"),
        (lambda r: r["cases"].append(copy.deepcopy(r["cases"][0])), "report.cases"),
    ],
)
def test_a_report_that_is_not_one_is_refused_naming_the_place(change, where, author, api_client):
    report = good_report()
    change(report)

    response = post(api_client(author), report)

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_report"
    assert response.json()["detail"].startswith(where)
    assert not Evaluation.objects.exists()


def test_the_summary_is_computed_again_never_taken_from_the_upload(author, api_client):
    report = good_report()
    report["summary"]["succeeded"] = 0
    report["cases"][0]["scores"][3].update(passed=False, value=0.0)  # success failed

    body = post(api_client(author), report).json()

    assert body["succeeded"] == 4
    assert Evaluation.objects.get().report["summary"]["succeeded"] == 4


def test_every_role_lists_and_reads_reports(author, viewer, api_client):
    first = post(api_client(author), good_report()).json()
    second = post(api_client(author), weak_report()).json()
    client = api_client(viewer)

    listed = client.get("/api/v1/evaluations").json()
    detail = client.get(f"/api/v1/evaluations/{first['id']}").json()

    assert [item["id"] for item in listed["items"]] == [second["id"], first["id"]]
    assert "report" not in listed["items"][0]
    assert listed["items"][0]["succeeded"] == 2
    assert detail["report"]["suite"] == "seed-003"
    assert [c["id"] for c in detail["report"]["cases"]][-1] == "permission-refusal"
    assert client.get("/api/v1/evaluations/999999").status_code == 404


def test_a_user_without_a_role_reads_nothing(stranger, author, api_client):
    post(api_client(author), good_report())

    response = api_client(stranger).get("/api/v1/evaluations")

    assert response.status_code == 403


def test_the_compare_page_shows_two_reports_side_by_side_per_case_and_metric(
    author, viewer, session_client
):
    good = Evaluation.objects.get(pk=_store(author, good_report()))
    weak = Evaluation.objects.get(pk=_store(author, weak_report()))

    page = session_client(viewer).get(f"/evaluations/compare/?a={good.pk}&b={weak.pk}")

    assert page.status_code == 200
    html = page.content.decode()
    for case in ("normal-completion", "tool-failure", "replan-after-check",
                 "requirement-change", "permission-refusal"):  # fmt: skip
        assert f'data-case="{case}"' in html
    # the success row of tool-failure: A passed, B failed, A is better
    row = _row(html, "tool-failure", "success")
    assert 'class="better" data-passed="pass"' in row
    assert 'class="worse" data-passed="fail"' in row
    assert "the run ended needs_replan, not succeeded" in row
    totals = _row(html, None, "success_rate")
    assert ">100%<" in totals and ">40%<" in totals
    assert "scripted:seed-003.weak-answers.yaml" in html


def test_the_compare_page_without_two_reports_asks_for_them(viewer, session_client):
    page = session_client(viewer).get("/evaluations/compare/?a=x")

    assert page.status_code == 400
    assert "Choose two reports." in page.content.decode()


def test_the_pages_need_a_role_and_the_nav_links_to_them(author, stranger, session_client):
    pk = _store(author, good_report())

    assert session_client(stranger).get("/evaluations/").status_code == 403
    assert session_client(stranger).get(f"/evaluations/{pk}/").status_code == 403
    listing = session_client(author).get("/evaluations/").content.decode()
    assert 'href="/evaluations/"' in listing and 'aria-current="page">Evaluations' in listing
    assert f'data-evaluation="{pk}"' in listing
    detail = session_client(author).get(f"/evaluations/{pk}/").content.decode()
    assert 'data-case="tool-failure"' in detail and 'data-passed="fail"' not in detail


def _store(user: Any, report: dict[str, Any]) -> int:
    from evaluations import services

    return services.store_report(user, report).pk


def _row(html: str, case: str | None, measure: str) -> str:
    start = (
        html.index(f'data-case="{case}"') if case else html.index('class="table compare totals"')
    )
    start = html.index(f'data-measure="{measure}"', start)
    return html[start : html.index("</tr>", start)]


def test_a_difference_past_the_digits_shown_is_nobodys_win():
    def timed(ms: list[float]) -> SuiteReport:
        data = good_report()
        for case, latency in zip(data["cases"], ms, strict=True):
            case["latency_ms"] = latency
        return SuiteReport.from_data(data)

    # 4.2 ms against 3.8 ms both read 4 ms; 10 ms against 20 ms do not.
    comparison = compare(timed([4.2, 10, 1, 1, 1]), timed([3.8, 20, 1, 1, 1]))

    seconds = {row.id: next(p for p in row.pairs if p.key == "seconds") for row in comparison.cases}
    assert (seconds["normal-completion"].a, seconds["normal-completion"].b) == ("4 ms", "4 ms")
    assert seconds["normal-completion"].better == ""
    assert seconds["tool-failure"].better == "a"
    assert (comparison.a_wins, comparison.b_wins) == (1, 0)


def test_a_wall_clock_time_reads_in_milliseconds_under_a_second():
    assert [duration(s) for s in (0.0042, 0.25, 1.5, 62.0)] == [
        "4 ms",
        "250 ms",
        "1.50 s",
        "62.00 s",
    ]
