"""Verify the audit chain from the command line; exit status 1 names the broken row or
what is wrong with the anchor log."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from audit.anchors import AnchorLogError
from audit.services import verify_and_record


class Command(BaseCommand):
    help = (
        "Walk the audit hash chain in seq order, check it against the anchor log, report "
        "the first broken row, and anchor the head when the chain is whole (the audit page "
        "shows the outcome as its latest full walk). Not throttled."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = verify_and_record()
        except AnchorLogError as exc:
            raise CommandError(str(exc), returncode=1) from exc
        if not result.ok:
            where = f"broken at seq {result.broken_at}" if result.broken_at else "not verified"
            raise CommandError(
                f"audit chain {where}: {result.reason} "
                f"(verified through seq {result.verified_through}; {result.code})",
                returncode=1,
            )
        self.stdout.write(f"audit chain ok through seq {result.verified_through}")
