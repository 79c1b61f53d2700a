"""The PostgreSQL pass of ``make test`` names test modules; a renamed one must not fall out
of it unnoticed."""

from pathlib import Path

from tests.web.conftest import POSTGRES_PASS


def test_every_module_of_the_postgres_pass_exists():
    here = Path(__file__).parent
    assert {name for name in POSTGRES_PASS if not (here / f"{name}.py").is_file()} == set()
