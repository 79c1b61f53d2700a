"""Plan fixtures for web tests (users and clients come from tests/conftest.py).

``plan_document(**changes)`` is a plain-data plan that compiles cleanly with the built-in
tools and the default policy (two steps, ``read`` -> ``publish``); ``make_plan(user)``
imports one through ``plans.services`` and returns its version 1; ``approved_version`` is
a version by ``author`` approved by ``approver``.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from plans.schemas import EXAMPLE_DOCUMENT

# The API's own OpenAPI example: a plan that compiles with the built-in tools.
GOOD_DOCUMENT: dict[str, Any] = EXAMPLE_DOCUMENT


# The PostgreSQL pass of ``make test`` runs these again, with the tests marked
# ``postgres``: the ones whose code speaks to each database in its own way (row locks and
# SKIP LOCKED, advisory locks, pipelined statements, JSON lookups, aggregates over time,
# migrations of data, outages of the server). The rest of tests/web is the same Django ORM
# on either database, and its SQLite pass is enough.
POSTGRES_PASS = frozenset(
    {
        "test_api_auth",
        "test_approval_rules",
        "test_audit",
        "test_audit_anchors",
        "test_audit_redaction",
        "test_audit_verify",
        "test_auto_replans",
        "test_budgets_and_recovery",
        "test_data_between_steps",
        "test_database_outages",
        "test_forge_user",
        "test_gate",
        "test_metrics",
        "test_plans_flow",
        "test_plans_services",
        "test_prometheus",
        "test_replan_rules",
        "test_reruns",
        "test_review_threads",
        "test_rules_changes",
        "test_run_stream",
        "test_runs_api",
        "test_seed_load",
        "test_step_rules",
        "test_supersede_migrations",
        "test_superseded_versions",
        "test_webhook_secret_migration",
        "test_webhooks",
        "test_worker_outages",
        "test_worker_path",
        "test_worker_slots",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.module is not None and item.module.__name__.rpartition(".")[2] in POSTGRES_PASS:
            item.add_marker(pytest.mark.postgres_pass)


@pytest.fixture
def plan_document() -> Callable[..., dict[str, Any]]:
    def make(**changes: Any) -> dict[str, Any]:
        return {**copy.deepcopy(GOOD_DOCUMENT), **changes}

    return make


@pytest.fixture
def make_plan(db: None, plan_document: Callable[..., dict[str, Any]]) -> Callable[..., Any]:
    from forge.plan import from_data
    from plans import services

    def make(user: Any, name: str = "release notes", document: Any = None, **options: Any) -> Any:
        data = plan_document() if document is None else document
        return services.create_plan(user, name, from_data(data), **options)

    return make


@pytest.fixture
def approved_version(make_plan: Callable[..., Any], author: Any, approver: Any) -> Any:
    from plans import services

    version = make_plan(author)
    services.approve(version, approver, "looks right")
    return version


@pytest.fixture(autouse=True)
def _fresh_run_caches() -> None:
    """Each process caches compiled graphs by version id and schedulers by run id; SQLite
    hands the same ids out again after a test's transaction rolls back, so a test must
    not meet the previous test's entries."""
    from runs import engine

    engine._SCHEDULERS.clear()
    engine._GRAPHS.clear()


@pytest.fixture(autouse=True)
def _workspaces(settings: Any, tmp_path: Any) -> None:
    """Runs' workspaces in the test's own directory, never the checkout's."""
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")


_caches = itertools.count()


@pytest.fixture
def own_cache(settings: Any) -> None:
    """A fresh cache, for tests that count requests (accounts.throttling): the counts of
    earlier tests (and their reused user ids) stay out."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"own-cache-{next(_caches)}",
        }
    }


@pytest.fixture
def read_only_replans(settings: Any, tmp_path: Any) -> Any:
    """A deployment policy that lets read-only replans continue on its own approval."""
    from runs import execution

    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "allow: {compute: ['*'], file_write: ['*'], file_read: ['*']}\n"
        "auto_approve_replans: read_only\n"
    )
    settings.FORGE_POLICY = str(policy)
    # The worker's executor keeps the policy it was built with, once per process.
    cached = execution.executor
    cached.cache_clear()
    yield
    cached.cache_clear()


@pytest.fixture
def approval_rules(settings: Any, tmp_path: Any) -> Callable[[str], Any]:
    """Put a ``forge.rules/v1`` text in force as the deployment's FORGE_APPROVAL_RULES."""
    from plans.rules import file_rules

    def use(text: str) -> Any:
        path = tmp_path / f"rules-{len(list(tmp_path.glob('rules-*')))}.yaml"
        path.write_text(text)
        settings.FORGE_APPROVAL_RULES = str(path)
        file_rules.cache_clear()
        return path

    yield use
    file_rules.cache_clear()
