"""Create or update a user with roles; optionally print a new API token for scripts.

    python manage.py forge_user ci-bot --role operator --token
    python manage.py forge_user carol --role approver --team finance --team leads
    python manage.py forge_user carol --email carol@example.com
    python manage.py forge_user carol --deactivate     # --activate lets her in again

``--team`` adds the user to a team (repeat for several), creating the team when it does
not exist yet; the user's other teams are kept.

With ``--token`` the token is the only thing written to standard output (one line), so
``TOKEN=$(python manage.py forge_user ... --token)`` captures it; everything else goes
to standard error.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from accounts import services, teams
from accounts.roles import ROLES

ACTOR = "cli:forge_user"


class Command(BaseCommand):
    help = "Create or update a Forge user; --role replaces the roles, --token prints a new token."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--role",
            action="append",
            choices=ROLES,
            dest="roles",
            help="a role to hold (repeat for several); replaces the user's roles",
        )
        parser.add_argument(
            "--team",
            action="append",
            dest="teams",
            default=[],
            help="a team to join (repeat for several); created when it does not exist",
        )
        parser.add_argument("--password", help="set this password (else: unchanged or none)")
        parser.add_argument(
            "--email",
            help="the address the user's notifications are e-mailed to ('' removes it)",
        )
        access = parser.add_mutually_exclusive_group()
        access.add_argument(
            "--deactivate",
            dest="active",
            action="store_false",
            default=None,
            help="shut the person out: sign-in, sessions, tokens and open sockets refuse them",
        )
        access.add_argument(
            "--activate", dest="active", action="store_true", default=None, help="let them in again"
        )
        parser.add_argument("--token", action="store_true", help="print a new API token")
        parser.add_argument("--token-name", default="forge_user", help="name of that token")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            with transaction.atomic():
                user, created = services.save_user(
                    options["username"],
                    actor=ACTOR,
                    roles=options["roles"],
                    password=options["password"],
                    email=options["email"],
                    active=options["active"],
                )
                created_teams = teams.join_teams(user, options["teams"], actor=ACTOR)
                value = None
                if options["token"]:
                    _, value = services.create_token(user, options["token_name"], actor=ACTOR)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from exc
        roles = ", ".join(user.roles) or "no roles"
        if not user.is_active:
            roles += "; deactivated"
        for team in created_teams:
            self.stderr.write(f"created team {team}")
        in_teams = teams.teams_of(user)
        joined = f"; teams: {', '.join(in_teams)}" if in_teams else ""
        self.stderr.write(
            f"{'created' if created else 'updated'} user {user.username} ({roles}){joined}"
        )
        if value is not None:
            self.stdout.write(value)
