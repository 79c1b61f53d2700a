"""Load the demo: two users and three approved plans that show what Forge does.

- "Release notes": shell and file steps that succeed.
- "Score a supplier": a contract check fails, so the run needs a replan.
- "Publish the board review": a file write waits for a person's approval.

Ada authors the plans; Grace approves them (nobody approves their own work). Running
it again changes nothing that is already there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from accounts.services import save_user
from forge.plan import load_plan
from plans import services as plans
from plans.models import Plan

DEMO_PASSWORD = "forge-demo-2026"
USERS = {
    "ada": ["author", "operator"],
    "grace": ["approver", "operator"],
}
PLANS = {
    "Release notes": "examples/release-notes.yaml",
    "Score a supplier": "examples/demo/score-supplier.yaml",
    "Publish the board review": "examples/demo/publish-board.yaml",
}


class Command(BaseCommand):
    help = "Create the demo users (ada, grace) and the demo plans, approved."

    def handle(self, *args: Any, **options: Any) -> None:
        users = {
            name: save_user(name, actor="forge_demo", roles=roles, password=DEMO_PASSWORD)[0]
            for name, roles in USERS.items()
        }
        for name, path in PLANS.items():
            if Plan.objects.filter(name=name).exists():
                continue
            source = (Path(settings.BASE_DIR) / path).read_text()
            document = load_plan(source, "yaml")
            version = plans.create_plan(
                users["ada"], name, document, source_format="yaml", note="demo plan"
            )
            plans.approve(version, users["grace"], "demo: reviewed")
        self.stdout.write(f"Demo logins (password for both: {DEMO_PASSWORD}):")
        self.stdout.write("  ada    author and operator: imports, edits and starts plans")
        self.stdout.write("  grace  approver and operator: approves plans and waiting steps")
