"""Two planners' evaluations, uploaded by ``forge eval --report-to`` with an author's API
token, compared side by side by a viewer in the browser."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from forge.cli import main

from .conftest import shoot

pytestmark = pytest.mark.django_db(transaction=True)

EVAL = Path(__file__).resolve().parents[2] / "examples" / "eval"


def test_a_viewer_compares_two_planners_side_by_side(
    page, people, live_server, token_for, monkeypatch, capsys
):
    author = people.make("ada", "author")
    monkeypatch.setenv("FORGE_API_TOKEN", token_for(author))
    suite = str(EVAL / "seed-003.yaml")
    for answers, code in (("seed-003.answers.yaml", 0), ("seed-003.weak-answers.yaml", 1)):
        argv = ["eval", suite, "--planner", f"scripted:{EVAL / answers}"]
        assert main([*argv, "--report-to", live_server.url]) == code
        assert "report stored: /evaluations/" in capsys.readouterr().err
    # a viewer's token may read reports but not store them: exit 5, nothing stored
    monkeypatch.setenv("FORGE_API_TOKEN", token_for(people.make("vic", "viewer")))
    argv = ["eval", suite, "--planner", f"scripted:{EVAL / 'seed-003.answers.yaml'}"]
    assert main([*argv, "--case", "normal-completion", "--report-to", live_server.url]) == 5
    assert "[permission_denied]" in capsys.readouterr().err

    people.login(page, people.make("val", "viewer"))
    page.get_by_role("link", name="Evaluations").click()
    expect(page.locator("table.evaluations tbody tr")).to_have_count(2)
    expect(page.locator("table.evaluations tbody tr").first).to_contain_text("2/5")
    shoot(page, "1-list")

    page.get_by_role("button", name="Compare").click()  # A: the older, B: the newer report
    expect(page.locator("h1")).to_have_text("Compare evaluations")
    expect(page.locator(".side-a")).to_contain_text("scripted:seed-003.answers.yaml")
    expect(page.locator(".side-b")).to_contain_text("scripted:seed-003.weak-answers.yaml")
    totals = page.locator("table.totals")
    expect(totals.locator('[data-measure="success_rate"] td')).to_have_text(["100%", "40%"])
    expect(page.locator("table.case")).to_have_count(5)
    drift = page.locator('table.case[data-case="replan-after-check"] [data-measure="replan"]')
    expect(drift.locator("td.better")).to_have_text("pass 1.00")
    expect(drift.locator("td.worse")).to_contain_text("fail 0.20")
    expect(drift.locator("td.worse .problems")).to_contain_text("dropped constraints")
    same = page.locator('table.case[data-case="normal-completion"] [data-measure="success"] td')
    expect(same).to_have_text(["pass 1.00", "pass 1.00"])
    assert same.first.get_attribute("class") == ""
    shoot(page, "2-compare")

    page.locator(".side-b a").first.click()
    expect(page.locator("h1")).to_contain_text("seed-003")
    failed = page.locator('tr[data-case="tool-failure"] td[data-metric="replan"]')
    expect(failed).to_have_attribute("data-passed", "fail")
    expect(failed.locator(".problems li").first).to_have_text(
        "version 2: the failed call failed again (fetch)"
    )
    shoot(page, "3-report")
