"""Single sign-on in Chromium through a real OpenID Connect provider: django-oauth-toolkit's,
started by the test in its own process on 127.0.0.1 (tests/fixtures/oidc_provider.py)
with an RSA key made at its start. A person clicks "Sign in with SSO", signs in on the
provider's own login page, lands in Forge with the teams and roles the provider's claims
give (the teams beside the name in the user menu, the roles in the name's tooltip), and
approves a plan version as a finance member. With password login off the form is gone;
a provider that cannot be reached is said so on the login page. Screenshots go to
test-artifacts/e2e/<test>/.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from accounts.models import User
from forge.plan import from_data
from plans import services as plan_services
from plans.models import VersionStatus
from tests.fixtures.oidc_provider_process import Provider, running_provider, sso_on

from .conftest import shoot

pytestmark = pytest.mark.django_db(transaction=True)

PEOPLE = {
    "fay": {
        "password": "fay-provider-password",
        "email": "fay@example.com",
        "groups": ["finance", "staff"],
        "forge_roles": ["approver"],
    }
}
PAYMENT = {
    "goal": "Pay the ACME Bearings invoice for Q3",
    "steps": [
        {"id": "draft", "description": "Draft the payment order", "tool": "echo", "args": {}}
    ],
}


@pytest.fixture(scope="module")
def provider(live_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    callback = f"{live_server.url}/accounts/sso/callback/"
    with running_provider(tmp_path_factory.mktemp("op"), callback, PEOPLE) as running:
        yield running


def sign_in_at_provider(page: Any, username: str) -> None:
    page.wait_for_selector("#op-username")
    expect(page).to_have_title("Test provider: sign in")
    page.fill("#op-username", username)
    page.fill("#op-password", PEOPLE[username]["password"])
    page.click("#op-submit")


def test_a_finance_member_signs_in_through_the_provider_and_approves(
    page, people, provider, settings, live_server
):
    sso_on(settings, provider.issuer)
    ada = people.make("ada", "author")
    version = plan_services.create_plan(ada, "Pay ACME", from_data(PAYMENT))

    page.goto("/review/")
    expect(page).to_have_url(re.compile(r".*/accounts/login/\?next=/review/$"))
    shoot(page, "1-forge-login")
    page.click("#sso-login")
    expect(page).to_have_url(re.compile(rf"^{re.escape(provider.url)}/login/"))
    shoot(page, "2-provider-login")
    sign_in_at_provider(page, "fay")

    # Back in Forge, on the page that asked, with the provider's teams and roles.
    page.wait_for_url(f"{live_server.url}/review/")
    name = page.locator("header .user")
    expect(name).to_have_text("fay")
    assert set(name.get_attribute("title").split(", ")) == {"viewer", "approver"}
    expect(page.locator("header .user-teams .team")).to_have_text(["finance", "staff"])
    fay = User.objects.get(username="fay")
    assert fay.team_names() == ("finance", "staff") and fay.roles == ["approver"]

    # She approves the payment plan as a finance member.
    page.wait_for_selector("#review-page[data-state=ready]")
    card = page.locator(f"article[data-key='version-{version.pk}']")
    card.locator("textarea").fill("Invoice checked against the purchase order")
    card.get_by_role("button", name="Approve v1").click()
    expect(card).to_have_count(0)
    shoot(page, "3-approved")
    version.refresh_from_db()
    assert version.status == VersionStatus.APPROVED
    assert [a.reviewer.username for a in version.approvals.all()] == ["fay"]


def test_with_password_login_off_only_sso_is_offered(page, provider, settings):
    sso_on(settings, provider.issuer)
    settings.FORGE_PASSWORD_LOGIN = False

    page.goto("/accounts/login/")

    expect(page.locator("#sso-login")).to_have_text("Sign in with SSO")
    expect(page.locator("input[name=password]")).to_have_count(0)
    page.click("#sso-login")
    sign_in_at_provider(page, "fay")
    expect(page.locator("header .user-teams")).to_have_attribute("data-teams", "finance,staff")


def test_a_provider_that_cannot_be_reached_is_said_so_on_the_login_page(page, settings):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sso_on(settings, f"http://127.0.0.1:{port}/o")

    page.goto("/accounts/login/")
    page.click("#sso-login")

    alert = page.get_by_role("alert")
    expect(alert).to_have_attribute("data-code", "sso_issuer_unreachable")
    expect(alert).to_contain_text("Single sign-on is unavailable")
    expect(alert).to_contain_text(f"http://127.0.0.1:{port}/o/.well-known/openid-configuration")
    expect(page.locator("input[name=password]")).to_have_count(1)  # passwords still work
