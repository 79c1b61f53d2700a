"""Load the demo: four users and three approved plans that show what Forge does.

- "Release notes": shell and file steps that succeed.
- "Score a supplier": a contract check fails, so the run needs a replan.
- "Publish the board review": a file write waits for a person's approval.

Ada authors the plans; Grace approves them (nobody approves their own work). Barbara is
both author and approver, to see the four-eyes rule from one login (she can approve
anyone's version but her own); Alan is the auditor, who reads the audit trail and
nothing else. Running it again changes nothing that is already there: a user who exists
keeps the password and roles they have (a person who changed the demo password keeps
theirs). It says which planner "New plan from a goal" asks (``make run`` sets the demo's
planner script when ``FORGE_PLANNER`` is not set) and which goals a script knows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from accounts.models import User
from accounts.services import save_user
from forge.plan import load_plan
from plans import planning
from plans import services as plans
from plans.models import Plan

DEMO_PASSWORD = "forge-demo-2026"
# name: (roles, what the login is for)
USERS = {
    "ada": (["author", "operator"], "author and operator: imports, edits and starts plans"),
    "grace": (["approver", "operator"], "approver and operator: approves plans and steps"),
    "barbara": (["author", "approver"], "author and approver: writes plans, approves others'"),
    "alan": (["auditor"], "auditor: reads the audit trail"),
}
PLANS = {
    "Release notes": "examples/release-notes.yaml",
    "Score a supplier": "examples/demo/score-supplier.yaml",
    "Publish the board review": "examples/demo/publish-board.yaml",
}


class Command(BaseCommand):
    help = "Create the demo users (ada, grace, barbara, alan) and the demo plans, approved."

    def handle(self, *args: Any, **options: Any) -> None:
        users, created = {}, []
        for name, (roles, _) in USERS.items():
            user = User.objects.filter(username=name).first()
            if user is None:  # an existing user keeps the password and roles they have
                user = save_user(name, actor="forge_demo", roles=roles, password=DEMO_PASSWORD)[0]
                created.append(name)
            users[name] = user
        added = 0
        for name, path in PLANS.items():
            if Plan.objects.filter(name=name).exists():
                continue
            source = (Path(settings.BASE_DIR) / path).read_text()
            document = load_plan(source, "yaml")
            version = plans.create_plan(
                users["ada"], name, document, source_format="yaml", note="demo plan"
            )
            plans.approve(version, users["grace"], "demo: reviewed")
            added += 1
        write = self.stdout.write
        made = f"created {', '.join(created)}" if created else "all there already"
        write(f"Demo users: {made}; demo plans: {added} added, {len(PLANS) - added} there already")
        write(f"Demo logins (password {DEMO_PASSWORD}, unless you changed yours):")
        for name, (_, what) in USERS.items():
            write(f"  {name:<8} {what}")
        for line in planner_lines():
            write(line)


def planner_lines() -> list[str]:
    """What "New plan from a goal" will ask, in a few lines."""
    spec = settings.FORGE_PLANNER.strip()
    if not spec:
        return ["New plan from a goal: no planner (set FORGE_PLANNER, docs/configuration.md)"]
    examples = planning.planner_examples()
    if not examples:
        return [f"New plan from a goal: FORGE_PLANNER={spec}"]
    return [
        f"New plan from a goal: a planner script, no model or key ({spec}); goals it knows:",
        *(f"  - {goal}" for goal in examples),
    ]
