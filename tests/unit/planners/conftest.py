from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..models.openai_fake import FakeOpenAI, running


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with running() as server:
        yield server
