"""System checks of the run machinery: the shell sandbox this deployment's workers use.

``manage.py check`` (and every command that runs checks, the worker's included) warns
when shell steps cannot run as configured, ``forge.W001``, or run with weaker isolation
by choice, ``forge.W002``. Warnings, not errors: a deployment without shell steps works.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage
from django.core.checks import Warning as CheckWarning

from forge.runners import Sandbox


def sandbox_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Probes bubblewrap the way the worker will (one confined ``true``)."""
    if settings.FORGE_SANDBOX == "rlimits":
        return [
            CheckWarning(
                "FORGE_SANDBOX=rlimits: shell steps run with resource limits only, without "
                "bubblewrap; they can read the host's files and reach the network.",
                hint="Install bubblewrap and unset FORGE_SANDBOX (bwrap is the default). "
                "Every such step is recorded as rlimits-only and the run page warns.",
                id="forge.W002",
            )
        ]
    problem = Sandbox(settings.FORGE_SANDBOX).problem()
    if problem:
        return [
            CheckWarning(
                f"FORGE_SANDBOX=bwrap but {problem}: every shell step will fail with "
                "sandbox_unavailable.",
                hint="Install bubblewrap (the 'bubblewrap' package), or accept weaker "
                "isolation with FORGE_SANDBOX=rlimits.",
                id="forge.W001",
            )
        ]
    return []
