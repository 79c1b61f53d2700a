"""The settings of the test deployments' processes (tests/integration/deployment.py):
Forge's own (``forge_web.settings``, read from the same environment), but for the
password hasher.

Django's default hasher, PBKDF2 at 1,500,000 iterations, spends half a second of CPU on
each password it stores or checks: the demo's four users in each of a run's demo
templates and every login through a deployment's form, about 60 of them in a run of the
suite, 30 CPU-seconds on a 2-core machine that the suite keeps busy. The in-process tests
use MD5 for the same reason (tests/conftest.py), as Django's testing documentation
advises; no test is about the hasher's strength."""

from forge_web.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
