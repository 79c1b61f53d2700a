"""Schemathesis over the whole API's OpenAPI schema: no input makes the server answer 5xx.

Each operation gets a bounded number of generated requests (``MAX_EXAMPLES``, a fixed
seed, no example database, so a run is repeatable), sent through the real WSGI
application with an admin's bearer token, so that every operation is reached past
authentication. A plan with two versions exists first, so that generated ids of 1 and 2
reach real rows. The one check is ``not_a_server_error``: the schema's other checks judge
documentation details, which the tests of each endpoint assert exactly instead.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from forge.plan import from_data
from plans import services
from tests.examples import examples

MAX_EXAMPLES = examples(20)
SEED = 20_261_130

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture
def wsgi_app():
    """The real WSGI application, minus the one thing Django's own test client removes too:
    closing the database connection after each request, which inside a test's
    transaction (autocommit off) would drop the connection, and the test data with it."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield get_wsgi_application()
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def bearer(token_for, make_user, make_plan, author):
    version = make_plan(author)
    services.create_version(version.plan, author, from_data(version.document))
    return {"Authorization": f"Bearer {token_for(make_user('fuzzer', 'admin'))}"}


# A deployment without FORGE_PLANNER answers POST /plans/generate with 503
# planner_not_configured: the service is unavailable there, as HTTP says, not broken.
UNCONFIGURED = {"planner_not_configured"}


def _unconfigured(response) -> bool:
    if response.status_code != 503:
        return False
    try:
        return response.json().get("code") in UNCONFIGURED
    except ValueError:
        return False


def fuzz(strategy, headers):
    """Send up to ``MAX_EXAMPLES`` requests drawn from ``strategy``; raise on a 5xx."""

    @given(case=strategy)
    @seed(SEED)
    @settings(
        max_examples=MAX_EXAMPLES,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: report the first failure
        suppress_health_check=list(HealthCheck),
    )
    def run(case):
        response = case.call(headers=headers)
        if _unconfigured(response):
            return
        case.validate_response(response, checks=[not_a_server_error])

    run()


# One test over every operation rather than schemathesis's pytest integration, whose
# lazy (fixture-based) loader does not work with pytest 9; failures are collected so that
# one run names every operation that fails.
def test_no_generated_request_makes_the_server_fail(wsgi_app, bearer):
    schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", wsgi_app)
    failures = []
    operations = [result.ok() for result in schema.get_all_operations()]
    for operation in operations:
        strategies = {
            "valid": operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
            "invalid": operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
        }
        if examples := schema.get_strategies_from_examples(operation):
            strategies["schema examples"] = st.one_of(examples)
        for kind, strategy in strategies.items():
            try:
                fuzz(strategy, bearer)
            except (Exception, BaseExceptionGroup) as exc:  # a 5xx, or a request not sent
                failures.append(f"{operation.label} ({kind}): {exc}")

    assert len(operations) >= 15
    assert failures == []
