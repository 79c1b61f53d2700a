from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture
def examples() -> Path:
    return EXAMPLES
