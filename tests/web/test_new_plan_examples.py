"""Issue 12, problem 10: the examples the New plan page offers are named for what they
show (not by an internal word such as "Seed 003"), and each does what its name says:
it compiles, or its name says that it has an error on purpose."""

from __future__ import annotations

import json
import re

import pytest

from forge.plan import load_plan
from plans.compilation import compiler

pytestmark = pytest.mark.django_db


def _examples(client):
    page = client.get("/plans/new/").content.decode()
    match = re.search(
        r'<script id="new-plan-data" type="application/json">(.*?)</script>', page, re.DOTALL
    )
    assert match, "no page data"
    return json.loads(match.group(1))["examples"]


def test_the_examples_are_named_for_what_they_show(author, client):
    client.force_login(author)

    titles = [example["title"] for example in _examples(client)]

    assert titles and not [t for t in titles if re.search(r"\bseed\b", t, re.IGNORECASE)]
    assert "An agent step written in Chinese, with a free-text done_when (JSON)" in titles
    assert all(example["file"].startswith(("agent", "release", "replan", "supplier"))
               for example in _examples(client))  # fmt: skip


def test_each_example_compiles_unless_its_name_says_it_has_an_error_on_purpose(author, client):
    client.force_login(author)
    for example in _examples(client):
        result = compiler().compile(load_plan(example["source"].encode(), example["format"]))
        on_purpose = "error on purpose" in example["title"]
        assert bool(result.errors) == on_purpose, (example["title"], result.errors)
