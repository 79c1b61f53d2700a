"""Verify the audit chain from the command line; exit status 1 names the broken row."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from audit.services import verify_and_record


class Command(BaseCommand):
    help = (
        "Walk the audit hash chain in seq order and report the first broken row "
        "(the audit page shows the outcome as its latest full walk)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        result = verify_and_record()
        if not result.ok:
            raise CommandError(
                f"audit chain broken at seq {result.broken_at}: {result.reason} "
                f"(verified through seq {result.verified_through})",
                returncode=1,
            )
        self.stdout.write(f"audit chain ok through seq {result.verified_through}")
