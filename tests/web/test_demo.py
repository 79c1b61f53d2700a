"""The demo out of the box (issue 25, item 12): ``forge_demo`` makes the demo's users with
their roles and its approved plans, keeps what a person changed when it runs again, and
says which planner "New plan from a goal" asks; ``make run`` sets the demo's planner
script unless ``FORGE_PLANNER`` is set, and prints one line per step."""

from __future__ import annotations

import os
import shutil
import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from accounts.models import User
from accounts.services import save_user
from plans.models import Plan

REPO = Path(__file__).resolve().parents[2]
DEMO_PLANNER = f"scripted:{REPO / 'examples' / 'demo' / 'planner.yaml'}"


def demo() -> str:
    out = StringIO()
    call_command("forge_demo", stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_the_demo_makes_four_logins_with_their_roles_and_three_approved_plans(settings):
    settings.FORGE_PLANNER = ""

    said = demo()

    roles = {user.username: sorted(user.roles) for user in User.objects.all()}
    assert roles == {
        "ada": ["author", "operator"],
        "grace": ["approver", "operator"],
        "barbara": ["approver", "author"],
        "alan": ["auditor"],
    }
    assert all(User.objects.get(username=name).check_password("forge-demo-2026") for name in roles)
    plans = Plan.objects.select_related("latest_version")
    assert {plan.latest_version.status for plan in plans} == {"approved"}
    assert plans.count() == 3
    for name in roles:
        assert f"\n  {name} " in said
    assert "no planner (set FORGE_PLANNER" in said


@pytest.mark.django_db
def test_running_it_again_keeps_a_changed_password_and_changed_roles(settings):
    settings.FORGE_PLANNER = ""
    demo()
    save_user("ada", actor="admin", password="ada-chose-this-1", roles=["author"])

    said = demo()

    ada = User.objects.get(username="ada")
    assert ada.check_password("ada-chose-this-1") and ada.roles == ["author"]
    assert Plan.objects.count() == 3
    assert "all there already" in said and "0 added" in said


@pytest.mark.django_db
def test_it_says_which_goals_the_demo_planner_knows(settings):
    settings.FORGE_PLANNER = DEMO_PLANNER

    said = demo()

    assert f"a planner script, no model or key ({DEMO_PLANNER})" in said
    assert "  - Draft the release notes for version 2.5 from the changelog" in said


# --- make run -------------------------------------------------------------------------


@pytest.fixture
def fake_venv(tmp_path: Path) -> Path:
    """A .venv whose python records how it was called instead of running Forge."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    python = bin_ / "python"
    python.write_text(
        '#!/bin/sh\necho "$FORGE_PLANNER | $*" >> "$(dirname "$0")/calls"\n'
        'echo "noise from $2 that make run keeps quiet"\n'
    )
    python.chmod(0o755)
    (tmp_path / "stamp").touch()
    return tmp_path


def make_run(venv: Path, **env: str) -> subprocess.CompletedProcess[str]:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    environment = {k: v for k, v in os.environ.items() if k != "FORGE_PLANNER"}
    environment.update(FORGE_SYSTEM_PACKAGES="skip", **env)
    return subprocess.run(
        [make, "--no-print-directory", "run", f"BIN={venv / 'bin'}", f"STAMP={venv / 'stamp'}"],
        cwd=REPO, env=environment, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def calls(venv: Path) -> list[str]:
    return (venv / "bin" / "calls").read_text().splitlines()


def test_make_run_sets_the_demo_planner_unless_one_is_set(fake_venv):
    done = make_run(fake_venv)

    assert done.returncode == 0, done.stderr
    commands = [call.split(" | ")[1].split()[:2] for call in calls(fake_venv)]
    assert commands == [
        ["manage.py", "migrate"], ["manage.py", "forge_demo"], ["manage.py", "forge_serve"],
    ]  # fmt: skip
    assert {call.split(" | ")[0] for call in calls(fake_venv)} == {DEMO_PLANNER}

    (fake_venv / "bin" / "calls").unlink()
    assert make_run(fake_venv, FORGE_PLANNER="openai:gpt-4o-mini").returncode == 0
    assert {call.split(" | ")[0] for call in calls(fake_venv)} == {"openai:gpt-4o-mini"}


def test_make_run_prints_one_line_per_step(fake_venv):
    done = make_run(fake_venv)

    lines = done.stdout.splitlines()
    assert lines[:2] == ["--- migrating the database", "--- loading the demo"]
    assert "noise from migrate that make run keeps quiet" not in done.stdout
    assert not any("manage.py" in line for line in lines)  # make does not echo commands
