"""The service checks tests rely on, and the Redis channel layer that REDIS_URL selects."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.integration import deployment

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def service_state(require_service, monkeypatch):
    """The conftest's module state, to pretend a service is missing."""
    state = require_service.__globals__
    monkeypatch.setitem(state["SERVICES"], "redis", lambda: "Redis is not reachable at nowhere:1")
    return state


def test_a_missing_service_skips_with_what_is_missing(require_service, service_state, monkeypatch):
    monkeypatch.setitem(service_state, "REQUIRE_SERVICES", False)

    with pytest.raises(pytest.skip.Exception) as skipped:
        require_service("redis")

    assert str(skipped.value) == (
        "Redis is not reachable at nowhere:1; set FORGE_REQUIRE_SERVICES=1 to fail instead"
    )


def test_a_missing_service_fails_when_services_are_required(
    require_service, service_state, monkeypatch
):
    monkeypatch.setitem(service_state, "REQUIRE_SERVICES", True)

    with pytest.raises(pytest.fail.Exception) as failed:
        require_service("redis")

    assert str(failed.value) == "Redis is not reachable at nowhere:1 (FORGE_REQUIRE_SERVICES=1)"


_SKIPPING = """
import pytest

def test_skipped_by_hand():
    pytest.skip("nothing to see")

@pytest.mark.skipif(True, reason="not here")
def test_skipped_by_a_condition():
    pass

def test_passes():
    pass
"""


@pytest.mark.parametrize(("required", "exit_code"), [("1", 1), ("", 0)])
def test_every_skip_fails_when_services_are_required(tmp_path: Path, required, exit_code):
    """``.ci/run`` sets FORGE_REQUIRE_SERVICES=1: then no skip of any kind passes a run."""
    (tmp_path / "test_skipping.py").write_text(_SKIPPING)
    env = {**os.environ, "FORGE_REQUIRE_SERVICES": required}
    # The pytest started here belongs to this run (it inherits FORGE_TEST_RUN): ending,
    # it must leave the run's demo templates to the run, which may still copy them.
    kept = deployment.shared_templates() / "kept-for-the-run"
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text("")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-c", "pyproject.toml",
         "--rootdir", str(REPO), "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert result.returncode == exit_code, result.stdout[-3000:]
    assert kept.exists()
    if required:
        assert "FORGE_REQUIRE_SERVICES=1 fails every skip: Skipped: nothing to see" in result.stdout
        assert "1 failed, 1 passed, 1 error" in result.stdout
    else:
        assert "1 passed, 2 skipped" in result.stdout


@pytest.mark.requires("redis")
@pytest.mark.asyncio
async def test_the_redis_channel_layer_delivers_group_messages():
    from channels_redis.core import RedisChannelLayer

    url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
    layer = RedisChannelLayer(hosts=[url], prefix=f"forge-test-{uuid.uuid4().hex}")
    channel = await layer.new_channel()
    await layer.group_add("forge-test", channel)
    try:
        await layer.group_send("forge-test", {"type": "run.event", "seq": 1})
        assert await layer.receive(channel) == {"type": "run.event", "seq": 1}
    finally:
        await layer.group_discard("forge-test", channel)
        await layer.flush()
