"""Pages that load no stylesheet of their own (the inbox, the approval rules, webhooks,
teams) draw headings, buttons, links that act as buttons, and form fields as every other
page does: the site's stylesheet holds them, not the plan pages'."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .conftest import shoot

pytestmark = pytest.mark.django_db(transaction=True)

WHITE = "rgb(255, 255, 255)"


def _style(locator, prop: str) -> str:
    return locator.evaluate(f"(e) => getComputedStyle(e).getPropertyValue('{prop}')")


def test_buttons_and_fields_look_the_same_on_pages_without_a_stylesheet_of_their_own(page, people):
    people.login(page, people.make("root", "admin"))
    page.goto("/plans/")
    heading = _style(page.locator("h1").first, "font-size")

    page.goto("/inbox/")
    link, button = page.get_by_role("link", name="Unread only"), page.locator("#mark-all-read")
    for control in (link, button):
        assert _style(control, "background-color") == WHITE
        assert _style(control, "border-top-style") == "solid"
    assert _style(link, "text-decoration-line") == "none"
    assert _style(page.locator("h1"), "font-size") == heading
    shoot(page, "inbox")

    page.goto("/plans/rules/")
    rules = page.locator("#rules-text")
    expect(rules).to_be_visible()
    assert rules.bounding_box()["width"] > 600
    assert "mono" in _style(rules, "font-family")
    assert _style(page.locator("#in-force code"), "background-color") == "rgba(0, 0, 0, 0)"
    shoot(page, "rules")

    for path, field in (
        ("/inbox/webhooks/", "input[name=url]"),
        ("/accounts/teams/", "#team-name"),
    ):
        page.goto(path)
        box = page.locator(field).bounding_box()
        assert box and box["width"] > 200, (path, box)
        assert _style(page.locator(field), "border-top-color") == "rgb(200, 205, 214)"
    # The teams table's column heads as on the plan and run lists.
    assert _style(page.locator("#teams thead th").first, "text-transform") == "uppercase"


def test_an_error_message_is_drawn_as_an_error_on_every_page(page, people):
    # The webhooks page refuses a host not on FORGE_WEBHOOK_ALLOWED_HOSTS (none is here);
    # the message's colours were in the audit page's stylesheet alone, so it showed red
    # words on the green of a success.
    people.login(page, people.make("root", "admin"))
    page.goto("/inbox/webhooks/")
    page.fill("input[name=url]", "https://hooks.example.com/forge")
    page.get_by_role("button", name="Save webhook").click()

    message = page.locator(".message.error")
    expect(message).to_contain_text("webhook_host_not_allowed")
    assert _style(message, "background-color") == "rgb(254, 243, 242)"
    assert _style(message, "color") == "rgb(180, 35, 24)"
    expect(page.locator("input[name=url]")).to_have_value("https://hooks.example.com/forge")
    shoot(page, "error-message")
