"""Inputs a database would choke on are refused by the API's schemas (422), never a 500."""

from __future__ import annotations

import gc
import json

import pytest

from forge_web.pagination import MAX_PAGE
from forge_web.warmup import warm_up

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "path", ["/api/v1/plans", "/api/v1/audit", "/api/v1/tokens", "/api/v1/tools"]
)
def test_a_page_number_past_the_bound_is_a_422(api_client, viewer, path):
    client = api_client(viewer)

    assert client.get(f"{path}?page={MAX_PAGE}").status_code == 200
    assert client.get(f"{path}?page={MAX_PAGE + 1}").status_code == 422


@pytest.mark.parametrize("field", ["actor", "action", "object_type", "object_id"])
def test_an_audit_filter_with_a_nul_character_is_a_422(api_client, viewer, field):
    for path in ("/api/v1/audit", "/api/v1/audit/export"):
        response = api_client(viewer).get(f"{path}?{field}=a%00b")

        assert response.status_code == 422
        assert response.json()["code"] == "validation_error"


@pytest.mark.parametrize(
    "moment", ["0971-10-21T07:25:07+20:54", "9999-12-30T23:59:59-20:00", "2025-01-01T12:00:00"]
)
def test_audit_times_with_any_utc_offset_python_reads_are_compared_in_utc(
    api_client, viewer, moment
):
    query = moment.replace("+", "%2B")

    response = api_client(viewer).get(f"/api/v1/audit?since={query}&until={query}")

    assert response.status_code == 200
    assert response.json() == {"items": [], "count": 0}


@pytest.mark.parametrize("moment", ["0001-01-01T00:00:00%2B20:00", "9999-12-31T23:59:59-20:00"])
def test_a_time_that_leaves_the_calendar_in_utc_is_a_422(api_client, viewer, moment):
    response = api_client(viewer).get(f"/api/v1/audit?since={moment}")

    assert response.status_code == 422


@pytest.mark.parametrize("name", ["a\x00b", "a\ud800b"])
def test_a_token_name_no_database_can_store_is_a_422(api_client, author, name):
    body = json.dumps({"name": name})  # JSON escapes both, as a client would send them

    response = api_client(author).post("/api/v1/tokens", body, content_type="application/json")

    assert response.status_code == 422


def test_warming_up_loads_the_routers_and_freezes_the_start_up_heap():
    warm_up()

    assert gc.get_freeze_count() > 10_000
