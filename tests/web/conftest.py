"""Plan fixtures for web tests (users and clients come from tests/conftest.py).

``plan_document(**changes)`` is a plain-data plan that compiles cleanly with the built-in
tools and the default policy (two steps, ``read`` -> ``publish``); ``make_plan(user)``
imports one through ``plans.services`` and returns its version 1; ``approved_version`` is
a version by ``author`` approved by ``approver``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from plans.schemas import EXAMPLE_DOCUMENT

# The API's own OpenAPI example: a plan that compiles with the built-in tools.
GOOD_DOCUMENT: dict[str, Any] = EXAMPLE_DOCUMENT


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
