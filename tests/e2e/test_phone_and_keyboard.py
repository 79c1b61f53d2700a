"""The review loop on a phone and from the keyboard (issue 25, item 13).

At 390 px (``phone``: an upright phone) the approval queue, a version page, the inbox, a
run page and the editor fit the width with long names, long step ids, graphs, previews
and tables in them: the page never scrolls sideways (a table or a block of code may
scroll inside its own box), and the nav and each page's primary action are on screen.
At a desk, a reviewer approves a version with Tab and Enter alone, on the version page
and on the queue card, and every control she passes shows a focus ring that stands out.
Times in review threads and in the run page's step drawer read in the site's UTC
format, whatever the browser's time zone. Screenshots go to test-artifacts/e2e/<test>/."""

from __future__ import annotations

import re
from datetime import UTC
from typing import Any

import pytest
from playwright.sync_api import expect

from forge.plan import from_data
from plans import services as plan_services
from plans.models import PlanVersion, VersionStatus
from reviews import threads
from runs import services as run_services
from runs.models import Run, StepRun
from tests.web.runs_helpers import drain

from .conftest import PHONE, browse, shoot

pytestmark = pytest.mark.django_db(transaction=True)

WIDTH = PHONE["viewport"]["width"]
NAME = "Quarterly supplier risk review for the northern European distribution centres"
COLLECT = "collect_supplier_scores_from_the_procurement_warehouse_export_q3"
PUBLISH = "publish_the_quarterly_supplier_review_into_the_board_folder_q3"
PATH = "board/reviews/2025/q3/northern-european-distribution-centres/supplier-risk-review-final.md"
URL = "https://procurement.example.com/exports/suppliers/2025-q3/northern-europe/scores.csv?format=csv&include=all"
PLAN = {
    "goal": f"Publish the quarterly supplier review for {NAME.lower()} to the board folder",
    "risk_level": "medium",
    "requires_approval_before": ["file_write"],
    "budget": {"max_steps": 5, "max_tokens": 1000, "max_cost": 1.0},
    "steps": [
        {
            "id": COLLECT,
            "description": f"Collect the quarter's supplier scores from {URL}",
            "tool": "echo",
            "args": {"source": URL, "scores": {"ACME Bearings": 3.1, "Northwind Steel": 1.2}},
            "estimate": {"tokens": 200, "cost": 0.1},
        },
        {
            "id": PUBLISH,
            "description": "Write the review into the board folder",
            "tool": "file_write",
            "args": {
                "path": PATH,
                "content": "# Q3 supplier review\n" + "scores:" + "x" * 140 + "\n",
            },
            "depends_on": [COLLECT],
            "estimate": {"tokens": 500, "cost": 0.5},
        },
    ],
}
COMMENT = f"Where does {COLLECT} read from? The export at {URL} is the old one."

# How wide the page is, and the boxes that stick out of the screen with nothing around
# them that clips or scrolls them (what makes the page scroll sideways).
OVERFLOW = """(width) => {
  const clipped = (el) => {
    for (let n = el.parentElement; n && n !== document.body; n = n.parentElement) {
      if (getComputedStyle(n).overflowX !== "visible") return true;
    }
    return false;
  };
  const wide = [...document.body.querySelectorAll("*")].filter((el) => {
    const box = el.getBoundingClientRect();
    return box.width && box.right > width + 0.5 && !clipped(el);
  });
  const name = (el) => `${el.tagName.toLowerCase()}#${el.id}.${el.getAttribute("class")}`;
  const right = (el) => Math.round(el.getBoundingClientRect().right);
  return {
    width: document.documentElement.scrollWidth,
    wide: wide.slice(0, 8).map((el) => `${name(el)} (${right(el)}px)`),
  };
}"""

# The focused element: what it is, whether it shows, its outline and what lies behind it.
FOCUSED = """(target) => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const style = getComputedStyle(el);
  const box = el.getBoundingClientRect();
  let behind = "rgb(255, 255, 255)";
  for (let n = el.parentElement; n; n = n.parentElement) {
    const colour = getComputedStyle(n).backgroundColor;
    if (colour !== "rgba(0, 0, 0, 0)" && colour !== "transparent") {
      behind = colour;
      break;
    }
  }
  const words = (el.textContent || el.getAttribute("aria-label") || "").trim().slice(0, 30);
  return {
    name: `${el.tagName.toLowerCase()}#${el.id} "${words}"`,
    target: el.matches(target),
    shown: box.width > 0 && box.height > 0 && style.visibility !== "hidden",
    outline: style.outlineStyle,
    width: parseFloat(style.outlineWidth) || 0,
    colour: style.outlineColor,
    behind,
  };
}"""


@pytest.fixture(autouse=True)
def workspaces(settings, tmp_path):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")


def shoot_page(page, name):
    page.screenshot(path=str(page.artifacts / f"{name}.png"), full_page=True)


def assert_fits(page, name):
    report = page.evaluate(OVERFLOW, WIDTH)
    shoot(page, name)
    shoot_page(page, f"{name}-whole")
    assert report["width"] <= WIDTH, (
        f"{name}: the page is {report['width']}px wide: {report['wide']}"
    )


def assert_on_screen(locator):
    """Visible, and (scrolled to) within the screen's width: nothing to scroll sideways for."""
    expect(locator).to_be_visible()
    locator.scroll_into_view_if_needed()
    box = locator.bounding_box()
    assert box is not None
    assert box["x"] >= 0 and box["x"] + box["width"] <= WIDTH + 0.5, (locator, box)


def assert_nav_on_screen(page):
    links = page.locator("header.topbar a, header.topbar button")
    assert links.count() >= 8  # Forge, the sections, API docs, API tokens, Log out
    for index in range(links.count()):
        assert_on_screen(links.nth(index))


def story(people):
    """A version waiting for grace, with a thread; a run waiting for her on a step; a
    rejected version in ada's inbox. Names, ids, paths and URLs are long."""
    ada = people.make("ada", "author", "operator")
    grace = people.make("grace", "approver", "operator")
    ben = people.make("ben", "approver")
    waiting = plan_services.create_plan(ada, NAME, from_data(PLAN))
    threads.open_thread(waiting, grace, COMMENT, step_id=COLLECT)
    approved = plan_services.create_plan(ada, f"{NAME} (approved)", from_data(PLAN))
    plan_services.approve(approved, ben, "ok")
    run = run_services.start_run(approved, ada)
    drain()
    assert Run.objects.get(pk=run.pk).status == "awaiting_approval"
    rejected = plan_services.create_plan(ada, f"{NAME} (first try)", from_data(PLAN))
    plan_services.reject(rejected, grace, COMMENT)
    draft = plan_services.create_plan(ada, f"{NAME} (draft)", from_data(PLAN), submit=False)
    return {"ada": ada, "grace": grace, "waiting": waiting, "run": run, "draft": draft}


def test_the_review_pages_fit_a_phone_with_the_nav_and_their_actions_on_screen(phone, people):
    world = story(people)
    waiting, run = world["waiting"], world["run"]
    people.login(phone, world["grace"])

    # The approval queue: a version's card with its graph open, a waiting step's preview.
    phone.goto("/review/")
    phone.wait_for_selector("#review-page[data-state=ready]")
    card = phone.locator(f"article[data-key='version-{waiting.pk}']")
    card.locator("[data-action=toggle-graph]").click()
    expect(card.locator(".mini-graph")).to_be_visible()
    expect(card.locator(".step-table")).to_have_attribute("data-state", "ready")
    assert_fits(phone, "1-queue")
    assert_nav_on_screen(phone)
    assert_on_screen(card.locator("button[data-decision=approve]"))
    step_card = phone.locator("article[data-kind=step]")
    assert_on_screen(step_card.locator(".preview-card, .preview-slot").first)
    assert_on_screen(step_card.locator("button[data-decision=approve]"))

    # The version page: graph, steps, threads, and the review form.
    phone.goto(f"/plans/{waiting.plan_id}/versions/1/")
    phone.wait_for_selector("#step-table[data-state=ready]")
    phone.wait_for_selector("#threads-list[data-state=ready]")
    phone.evaluate("window.forge.graph.ready.then(() => true)")
    assert_fits(phone, "2-version")
    assert_nav_on_screen(phone)
    assert_on_screen(phone.locator("#run-button"))
    assert_on_screen(phone.locator("#review-comment"))
    assert_on_screen(phone.locator("#approve-button"))

    # The run page: a step waits for grace; its drawer holds the Approve button.
    phone.goto(f"/runs/{run.pk}/")
    phone.wait_for_selector("#run-page[data-state=ready]")
    assert_fits(phone, "3-run")
    assert_nav_on_screen(phone)
    assert_on_screen(phone.locator("#cancel-button"))
    review = phone.locator("#people-list button", has_text="Review the preview")
    assert_on_screen(review)
    review.click()
    drawer = phone.locator("#step-drawer")
    expect(drawer).to_be_visible()
    assert_fits(phone, "4-run-drawer")
    assert_on_screen(drawer.get_by_role("button", name=re.compile("^Approve")))
    drawer.locator("[data-close]").click()

    # Ada's inbox and her editor.
    people.logout(phone)
    people.login(phone, world["ada"])
    phone.goto("/inbox/")
    expect(phone.locator(".inbox-item").first).to_be_visible()
    assert_fits(phone, "5-inbox")
    assert_nav_on_screen(phone)
    assert_on_screen(phone.locator("#mark-all-read"))
    assert_on_screen(phone.locator(".inbox-comment").first)

    phone.goto(f"/plans/{waiting.plan_id}/edit/")
    phone.wait_for_selector("#editor[data-state=ready]")
    assert_fits(phone, "6-editor")
    assert_nav_on_screen(phone)
    for action in (
        "#save-button",
        "#run-button",
        "#approve-button",
        ".toolbar [data-action=add-step]",
    ):
        assert_on_screen(phone.locator(action))
    assert_on_screen(phone.locator("#review-threads-summary"))

    # A draft of hers: Submit for review is on screen too.
    phone.goto(f"/plans/{world['draft'].plan_id}/edit/")
    phone.wait_for_selector("#editor[data-state=ready]")
    assert_fits(phone, "7-editor-draft")
    assert_on_screen(phone.locator("#submit-review-button"))
    assert_on_screen(phone.locator("#save-button"))


# --- The keyboard ---------------------------------------------------------------------


def rgba(colour: str) -> tuple[float, float, float, float]:
    numbers = [float(n) for n in re.findall(r"[\d.]+", colour)]
    return (numbers[0], numbers[1], numbers[2], numbers[3] if len(numbers) > 3 else 1.0)


def luminance(red: float, green: float, blue: float) -> float:
    def channel(value: float) -> float:
        value /= 255
        return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(red) + 0.7152 * channel(green) + 0.0722 * channel(blue)


def contrast(colour: str, behind: str) -> float:
    """WCAG's contrast ratio of ``colour`` (drawn over ``behind``, if see-through)."""
    *back, _ = rgba(behind)
    *front, alpha = rgba(colour)
    seen = [alpha * f + (1 - alpha) * b for f, b in zip(front, back, strict=True)]
    light, dark = sorted((luminance(*seen), luminance(*back)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def ring_problem(focused: dict[str, Any]) -> str | None:
    """Why the focused control's ring does not stand out (WCAG 2.2: 2px, 3:1), or None."""
    if not focused["shown"]:
        return f"{focused['name']} has focus but cannot be seen"
    if focused["outline"] == "none" or focused["width"] < 2:
        return f"{focused['name']} shows no focus ring ({focused['outline']} {focused['width']}px)"
    if contrast(focused["colour"], focused["behind"]) < 3:
        return f"{focused['name']}'s ring {focused['colour']} is faint on {focused['behind']}"
    return None


def tab_to(page: Any, target: str, limit: int = 120) -> list[str]:
    """Press Tab until the element ``target`` (a CSS selector) has focus; every control on the way
    shows a ring that stands out, and none comes round twice (a trap). Returns the way."""
    way: list[str] = []
    problems: list[str] = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        focused = page.evaluate(FOCUSED, target)
        assert focused is not None, f"Tab left the page after {way}"
        assert focused["name"] not in way[-1:], f"focus is stuck on {focused['name']}"
        problem = ring_problem(focused)
        if problem:
            problems.append(problem)
        way.append(focused["name"])
        if focused["target"]:
            assert problems == [], problems
            return way
    raise AssertionError(f"Tab never reached {target}: {way}")


def skip_to_content(page: Any) -> None:
    page.keyboard.press("Tab")
    skip = page.locator("a.skip-link")
    expect(skip).to_be_focused()
    expect(skip).to_be_visible()
    assert ring_problem(page.evaluate(FOCUSED, "a")) is None
    shoot(page, "0-skip-link")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*#main$"))


def test_a_reviewer_approves_a_version_with_tab_and_enter_alone(page, people):
    ada = people.make("ada", "author")
    grace = people.make("grace", "approver")
    version = plan_services.create_plan(ada, NAME, from_data(PLAN))
    threads.open_thread(version, grace, COMMENT, step_id=COLLECT)
    people.login(page, grace)
    page.goto(f"/plans/{version.plan_id}/versions/1/")
    page.wait_for_selector("#step-table[data-state=ready]")
    page.wait_for_selector("#threads-list[data-state=ready]")
    page.evaluate("window.forge.graph.ready.then(() => true)")

    skip_to_content(page)
    tab_to(page, "#review-comment")
    page.keyboard.type("Checked the source and the path: fine.")
    shoot(page, "2-comment-focused")
    tab_to(page, "#approve-button")
    shoot(page, "3-approve-focused")
    page.keyboard.press("Enter")

    expect(page.locator("#status-badge")).to_have_text("Approved")
    version.refresh_from_db()
    assert version.status == VersionStatus.APPROVED
    approval = version.approvals.get()
    assert (approval.reviewer, approval.comment) == (
        grace,
        "Checked the source and the path: fine.",
    )
    shoot(page, "4-approved")


def test_a_reviewer_approves_from_the_queue_card_with_tab_and_enter_alone(page, people):
    ada = people.make("ada", "author")
    grace = people.make("grace", "approver")
    version = plan_services.create_plan(ada, NAME, from_data(PLAN))
    people.login(page, grace)
    page.goto("/review/")
    page.wait_for_selector("#review-page[data-state=ready]")
    card = page.locator(f"article[data-key='version-{version.pk}']")
    expect(card.locator(".step-table")).to_have_attribute("data-state", "ready")

    skip_to_content(page)
    tab_to(page, f"#version-{version.pk}-comment")
    page.keyboard.type("Read every step.")
    tab_to(page, f"#version-{version.pk} button[data-decision=approve]")
    shoot(page, "1-approve-focused")
    page.keyboard.press("Enter")

    expect(card).to_have_count(0)
    assert PlanVersion.objects.get(pk=version.pk).status == VersionStatus.APPROVED
    shoot(page, "2-approved")


# --- Times ------------------------------------------------------------------------------

SITE_MINUTES = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d$")  # |date:"Y-m-d H:i"
SITE_SECONDS = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")  # |date:"Y-m-d H:i:s"


def test_times_in_threads_and_the_step_drawer_read_in_the_sites_utc_format(
    browser, live_server, transactional_db, request, people
):
    world = story(people)
    waiting, run = world["waiting"], world["run"]
    comment = waiting.review_threads.get().comments.get()
    expected = comment.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M")
    # Far from UTC: a time shown in the browser's own zone would be half a day off.
    with browse(
        browser,
        live_server,
        request,
        viewport={"width": 1440, "height": 900},
        timezone_id="Pacific/Auckland",
    ) as page:
        people.login(page, world["grace"])
        page.goto(f"/plans/{waiting.plan_id}/versions/1/")
        page.wait_for_selector("#threads-list[data-state=ready]")
        saved = page.locator("aside dl.meta time")
        assert SITE_MINUTES.match(saved.inner_text())
        shown = page.locator(f"#threads-list .thread[data-step='{COLLECT}'] .comment time")
        expect(shown).to_have_text(expected)
        expect(shown).to_have_attribute("datetime", re.compile(r"^\d{4}-"))
        shoot(page, "1-version-thread")

        # The author reads the same time in her editor's step panel.
        people.logout(page)
        people.login(page, world["ada"])
        page.goto(f"/plans/{waiting.plan_id}/edit/")
        page.wait_for_selector("#editor[data-state=ready]")
        page.evaluate("window.forge.editor.settled()")
        page.evaluate(f"() => {{ window.forge.editor.cy.getElementById('{COLLECT}').select(); }}")
        expect(
            page.locator(f"#inspector .thread[data-step='{COLLECT}'] .comment time")
        ).to_have_text(expected)
        shoot(page, "2-editor-thread")

        # The run page's step drawer: a step's start, to the second, as the run's own time.
        step = StepRun.objects.get(run=run, step_id=COLLECT)
        started = step.started_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
        page.goto(f"/runs/{run.pk}/")
        page.wait_for_selector("#run-page[data-state=ready]")
        page.locator(f"#timeline [data-step='{COLLECT}']").click()
        started_cell = page.locator("#drawer-body dt", has_text="Started").locator(
            "xpath=following-sibling::dd[1]"
        )
        expect(started_cell).to_have_text(started)
        assert SITE_SECONDS.match(page.locator(".run-sub time").inner_text())
        shoot(page, "3-run-drawer")
