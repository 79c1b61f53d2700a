"""Safety: whatever a plan says is shown as text on every page, never run, and every page is
served with a strict Content-Security-Policy and holds no inline script or handler."""

from __future__ import annotations

import copy
import json

import pytest
from playwright.sync_api import expect

from forge.plan import from_data
from plans import services

from .conftest import shoot
from .graph import click_node, text_value, wait_ready

pytestmark = pytest.mark.django_db(transaction=True)

IMG = "<img src=x onerror=alert(1)>"
SVG = "<svg onload=alert(2)>"
SCRIPT = "<script>alert(3)</script>"

DOCUMENT = {
    "goal": f"Report {SCRIPT}",
    "deliverable": "publish",
    "steps": [
        {
            "id": "xss",
            "description": IMG,
            "depends_on": [],
            "tool": "echo",
            "args": {"note": SVG},
            "done_when": {"description": SVG, "required_keys": ["note"]},
        },
        {
            "id": "publish",
            "description": "Publish the report file",
            "depends_on": ["xss"],
            "tools_allowed": [IMG],
        },
    ],
}

# Every script is a file from our origin or a JSON data block; no element has an on*
# attribute; no element came from plan text.
DOM_AUDIT = """() => ({
  scripts: [...document.scripts].filter(s => !s.src && s.type !== 'application/json').length,
  handlers: [...document.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name))
    .filter(n => n.startsWith('on')),
  injected: document.querySelectorAll('img[src=x], svg[onload], script:not([src]):not([type])')
    .length,
})"""


def _assert_safe(page, response) -> None:
    policy = response.headers.get("content-security-policy", "")
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy, policy
    assert "style-src 'self'" in policy and "object-src 'none'" in policy, policy
    assert page.evaluate(DOM_AUDIT) == {"scripts": 0, "handlers": [], "injected": 0}


def test_plan_text_is_shown_as_text_and_pages_carry_a_strict_csp(page, people):
    ada = people.make("ada", "author", "approver")
    grace = people.make("grace", "approver")
    version = services.create_plan(ada, f"Plan {SCRIPT}", from_data(DOCUMENT), note=IMG)
    changed = copy.deepcopy(DOCUMENT)
    changed["steps"][0]["description"] = f"{IMG} again"
    v2 = services.create_version(version.plan, ada, from_data(changed), note=SVG)
    services.reject(v2, grace, comment=IMG)
    plan = version.plan
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    people.login(page, ada)

    response = page.goto("/plans/")
    expect(page.locator("table.plans")).to_contain_text(f"Plan {SCRIPT}")
    _assert_safe(page, response)

    response = page.goto(f"/plans/{plan.pk}/edit/")
    wait_ready(page)
    _assert_safe(page, response)
    assert SCRIPT in page.locator("#plan-name").inner_text()
    expect(page.locator("#problems li[data-code=unknown_tool]")).to_contain_text(IMG)
    label = page.evaluate("window.forge.editor.cy.getElementById('xss').data('label')")
    assert "<img src=x onerror" in label  # drawn on the canvas as text
    click_node(page, "xss")
    expect(page.locator("[data-field=description]")).to_have_value(f"{IMG} again")
    expect(page.locator("[data-field='done_when.description']")).to_have_value(SVG)
    args = page.locator(".args-form textarea[name=args-json]").input_value()
    assert json.loads(args) == {"note": SVG}
    page.get_by_role("button", name="YAML", exact=True).click()
    assert IMG in text_value(page)
    page.get_by_role("button", name="Graph", exact=True).click()
    _assert_safe(page, response)
    shoot(page, "editor")

    response = page.goto(f"/plans/{plan.pk}/versions/")
    expect(page.locator("table.versions")).to_contain_text(SVG)
    _assert_safe(page, response)

    response = page.goto(f"/plans/{plan.pk}/versions/2/")
    page.wait_for_selector("#graph canvas")
    expect(page.locator(".approvals")).to_contain_text(IMG)
    expect(page.locator(".meta")).to_contain_text(SCRIPT)
    _assert_safe(page, response)
    shoot(page, "version")

    response = page.goto(f"/plans/{plan.pk}/diff/?from=1&to=2")
    page.wait_for_selector("#diff-changes li")
    expect(page.locator("#diff-changes")).to_contain_text(f"{IMG} again")
    _assert_safe(page, response)
    shoot(page, "diff")

    response = page.goto("/plans/new/")
    page.wait_for_selector("#new-plan[data-ready]")
    page.fill("#plan-source", f"goal: '{IMG}'\nsteps:\n  - id: a\n    tool: '{SVG}'\n")
    expect(page.locator("#problems li[data-code=unknown_tool]")).to_contain_text(SVG)
    _assert_safe(page, response)

    assert dialogs == []
