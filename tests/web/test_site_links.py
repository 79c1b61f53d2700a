"""Issue 12, problem 10: the API docs are linked from the nav and the tokens page and
answer at the URLs people type; the site has a favicon."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parents[2] / "static"

pytestmark = pytest.mark.django_db


def test_the_nav_links_the_api_docs(viewer, client):
    client.force_login(viewer)

    page = client.get("/plans/").content.decode()

    nav = re.search(r'<nav class="nav">(.*?)</nav>', page, re.DOTALL)
    assert nav and 'href="/api/v1/docs"' in nav.group(1)


def test_the_tokens_page_links_the_api_docs(viewer, client):
    client.force_login(viewer)

    page = client.get("/accounts/tokens/").content.decode()

    assert 'href="/api/v1/docs"' in page
    assert 'href="/api/v1/openapi.json"' in page


@pytest.mark.parametrize("path", ["/api/v1/docs/", "/docs", "/docs/", "/api/docs", "/api/"])
def test_the_obvious_docs_urls_lead_to_the_api_docs(anonymous_client, path):
    response = anonymous_client.get(path)

    assert response.status_code == 301
    assert response["Location"] == "/api/v1/docs"


def test_a_real_api_path_with_a_slash_too_many_is_still_a_json_404(anonymous_client):
    response = anonymous_client.get("/api/v1/no/such/thing/")

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_favicon_ico_leads_to_the_icon_file(anonymous_client):
    response = anonymous_client.get("/favicon.ico")

    assert response.status_code == 301
    assert response["Location"] == "/static/forge/favicon.ico"
    icon = (STATIC / "forge" / "favicon.ico").read_bytes()
    assert icon[:4] == b"\x00\x00\x01\x00"  # an ICO header
    assert int.from_bytes(icon[4:6], "little") >= 1  # at least one image


def test_pages_name_the_favicon(anonymous_client):
    page = anonymous_client.get("/accounts/login/").content.decode()

    assert '<link rel="icon" href="/static/forge/favicon.svg" type="image/svg+xml">' in page
    assert (STATIC / "forge" / "favicon.svg").read_text().startswith("<svg")
