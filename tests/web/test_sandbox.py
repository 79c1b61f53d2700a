"""The shell sandbox in the web app: FORGE_SANDBOX and FORGE_STEP_DISK_BYTES, the system
check that warns about them (forge.W001, forge.W002), the worker that applies them and
records each shell step's isolation, and the run page's warning about rlimits-only steps.
"""

from __future__ import annotations

import io
import runpy
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.checks import Warning as CheckWarning
from django.core.management import call_command

from runs import execution, services
from runs.checks import sandbox_check
from runs.models import ExecutionRecord

from .runs_helpers import approved_version, drain

SETTINGS_FILE = Path(django_settings.BASE_DIR) / "forge_web" / "settings.py"
SHELL_STEPS = [
    {
        "id": "build",
        "description": "Build the release bundle",
        "tool": "shell",
        "args": {"argv": ["sh", "-c", "echo built > bundle.txt"]},
    },
    {"id": "ship", "description": "Ship the bundle", "tool": "noop", "depends_on": ["build"]},
]


@pytest.fixture
def no_bwrap_on_path(tmp_path, monkeypatch):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


@pytest.fixture
def fresh_executor():
    """The worker's executor is built once per process: rebuild it around each test."""
    execution.executor.cache_clear()
    yield
    execution.executor.cache_clear()


# --- Settings ---------------------------------------------------------------------------


def test_the_sandbox_settings_default_to_bubblewrap_and_one_gib(monkeypatch):
    monkeypatch.delenv("FORGE_SANDBOX", raising=False)
    monkeypatch.delenv("FORGE_STEP_DISK_BYTES", raising=False)

    values = runpy.run_path(str(SETTINGS_FILE))

    assert (values["FORGE_SANDBOX"], values["FORGE_STEP_DISK_BYTES"]) == ("bwrap", 1 << 30)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("FORGE_SANDBOX", "auto", "FORGE_SANDBOX must be one of bwrap, rlimits, not 'auto'"),
        ("FORGE_STEP_DISK_BYTES", "0", "FORGE_STEP_DISK_BYTES must be at least 1, not 0"),
    ],
)
def test_a_bad_sandbox_setting_stops_the_process_at_start_up(monkeypatch, name, value, message):
    from django.core.exceptions import ImproperlyConfigured

    monkeypatch.setenv(name, value)

    with pytest.raises(ImproperlyConfigured, match=message):
        runpy.run_path(str(SETTINGS_FILE))


# --- System check -----------------------------------------------------------------------


def test_the_check_warns_when_bubblewrap_is_required_but_missing(settings, no_bwrap_on_path):
    settings.FORGE_SANDBOX = "bwrap"

    assert sandbox_check() == [
        CheckWarning(
            "FORGE_SANDBOX=bwrap but bubblewrap (bwrap) is not on PATH: every shell step "
            "will fail with sandbox_unavailable.",
            hint="Install bubblewrap (the 'bubblewrap' package), or accept weaker isolation "
            "with FORGE_SANDBOX=rlimits.",
            id="forge.W001",
        )
    ]


def test_the_check_warns_that_rlimits_is_weaker_isolation(settings):
    settings.FORGE_SANDBOX = "rlimits"

    assert [message.id for message in sandbox_check()] == ["forge.W002"]


def test_the_check_is_quiet_with_a_working_bubblewrap(settings, require_service):
    require_service("bwrap")
    settings.FORGE_SANDBOX = "bwrap"

    assert sandbox_check() == []


@pytest.mark.django_db  # the model checks ask the database what it supports (JSON fields)
def test_manage_py_check_runs_the_sandbox_check(settings, no_bwrap_on_path):
    settings.FORGE_SANDBOX = "bwrap"
    errors = io.StringIO()

    call_command("check", stdout=io.StringIO(), stderr=errors)

    assert "?: (forge.W001) FORGE_SANDBOX=bwrap but bubblewrap (bwrap) is not on PATH" in (
        errors.getvalue()
    )


# --- The worker and the run page --------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_without_bubblewrap_the_worker_fails_the_shell_step_closed(
    settings, tmp_path, author, approver, operator, no_bwrap_on_path, fresh_executor
):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")
    settings.FORGE_SANDBOX = "bwrap"
    run = services.start_run(approved_version(author, approver, SHELL_STEPS), operator)

    drain()

    record = ExecutionRecord.objects.get(run=run, step_id="build")
    assert (record.status, record.error_code, record.isolation) == (
        "failed",
        "sandbox_unavailable",
        "none",
    )
    run.refresh_from_db()
    assert run.status == "needs_replan"
    assert not (tmp_path / "workspaces" / f"run-{run.pk}" / "bundle.txt").exists()


@pytest.mark.django_db(transaction=True)
def test_a_run_with_rlimits_only_shell_steps_is_recorded_and_the_run_page_warns(
    settings, tmp_path, author, approver, operator, client, fresh_executor
):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")
    settings.FORGE_SANDBOX = "rlimits"
    run = services.start_run(approved_version(author, approver, SHELL_STEPS), operator)
    drain()
    client.force_login(operator)

    response = client.get(f"/runs/{run.pk}/")

    record = ExecutionRecord.objects.get(run=run, step_id="build")
    assert (record.status, record.isolation) == ("succeeded", "rlimits-only")
    assert record.notes == [
        "sandbox mode rlimits (an explicit opt-in): resource limits and an unprivileged user "
        "only; no bubblewrap, so the command could read the host's files and reach the network"
    ]
    assert (
        '<p class="attention" data-kind="error" id="isolation-warning" role="alert">'
        "<strong>Weaker isolation:</strong> 1 shell step of this run ran with resource limits "
        "only (FORGE_SANDBOX=rlimits), without bubblewrap, and could read the host's files "
        "and reach the network: build.</p>"
    ) in response.content.decode()


@pytest.mark.django_db(transaction=True)
def test_a_run_page_without_rlimits_only_steps_has_no_isolation_warning(
    settings, tmp_path, author, approver, operator, client
):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")
    steps = [{"id": "inspect", "description": "Collect contract facts", "tool": "echo"}]
    run = services.start_run(approved_version(author, approver, steps), operator)
    drain()
    ExecutionRecord.objects.filter(run=run).update(isolation="bubblewrap")
    client.force_login(operator)

    response = client.get(f"/runs/{run.pk}/")

    assert response.status_code == 200
    assert b"isolation-warning" not in response.content
