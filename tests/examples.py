"""How many examples a property test draws.

``HYPOTHESIS_PROFILE=ci`` (``.ci/run`` sets it) draws each test's full count; otherwise,
in a developer's ``make test``, a fifth of it and at least ten. Tests name their full count,
``@settings(max_examples=examples(300))``, and tests/conftest.py loads the profile of the
same name for the tests that name none."""

from __future__ import annotations

import os

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "dev")


def examples(full: int) -> int:
    return full if PROFILE == "ci" else max(10, full // 5)
