"""Integration fixtures: a deployment of each kind, started fresh for each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .deployment import Deployment

KINDS = ["sqlite", "postgres"]


@pytest.fixture(scope="module", params=KINDS, ids=["embedded-sqlite", "postgres-redis"])
def deployment_kind(request: pytest.FixtureRequest, require_service) -> str:
    if request.param == "postgres":
        require_service("postgres", "redis")
    return str(request.param)


@pytest.fixture(scope="module")
def deployment(deployment_kind: str, tmp_path_factory) -> Iterator[Deployment]:
    """One deployment of each kind for the module: each test makes its own plans and
    runs in it, and starting processes over a fresh database is the slow part."""
    running = Deployment(deployment_kind, tmp_path_factory.mktemp(deployment_kind))
    try:
        yield running.start()
    finally:
        running.stop()
        print(running.logs())  # pytest shows it only when the test fails
