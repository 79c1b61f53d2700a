"""Each import limit is refused with its own code and an error that names the limit."""

import json
import time

import pytest

from forge.errors import PlanDocumentError
from forge.plan import ImportLimits, PlanDocument, Step, dump_plan, load_plan
from forge.plan.formats import yaml_safe

FORMATS = ("json", "yaml", "mermaid")


def _plan(step_count: int) -> PlanDocument:
    steps = [Step(id=f"s{n}", depends_on=(f"s{n - 1}",) if n else ()) for n in range(step_count)]
    return PlanDocument(goal="count", steps=tuple(steps))


def _nested_args(depth: int) -> str:
    value: object = "bottom"
    for _ in range(depth):
        value = {"deeper": value}
    return json.dumps({"goal": "deep", "steps": [{"id": "a", "args": value}]})


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_document_over_the_byte_limit_is_refused_before_parsing(fmt):
    source = dump_plan(_plan(3), fmt)
    limits = ImportLimits(max_bytes=len(source.encode()) - 1)

    with pytest.raises(PlanDocumentError, match="max_bytes") as caught:
        load_plan(source, fmt, limits)

    assert caught.value.code == "document_too_large"
    assert load_plan(source, fmt, ImportLimits(max_bytes=len(source.encode()))) == _plan(3)


def test_the_byte_limit_counts_utf8_bytes_not_characters():
    source = json.dumps({"goal": "é" * 60, "steps": []}, ensure_ascii=False)
    limits = ImportLimits(max_bytes=100)

    assert len(source) <= 100 < len(source.encode())
    with pytest.raises(PlanDocumentError, match="over the limit of 100 bytes") as caught:
        load_plan(source, "json", limits)
    assert caught.value.code == "document_too_large"


def test_the_byte_limit_holds_even_for_text_that_is_not_a_plan_at_all():
    with pytest.raises(PlanDocumentError) as caught:
        load_plan(b"\xff" * 101, "json", ImportLimits(max_bytes=100))

    assert caught.value.code == "document_too_large"


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_document_over_the_step_limit_is_refused(fmt):
    source = dump_plan(_plan(4), fmt)

    with pytest.raises(PlanDocumentError, match="max_steps") as caught:
        load_plan(source, fmt, ImportLimits(max_steps=3))

    assert caught.value.code == "too_many_steps"
    assert "4 steps" in caught.value.message


@pytest.mark.parametrize(
    ("fmt", "source"),
    [
        ("json", '{"goal": "g", "steps": [{"id": "has space"}]}'),
        ("yaml", "goal: g\nsteps:\n  - id: " + "x" * 65 + "\n"),
        ("yaml", "goal: g\nsteps:\n  - {id: a, depends_on: ['b/c']}\n"),
        ("mermaid", 'flowchart TD\n    %% forge-step a: {"id": "étape"}\n    a\n'),
        ("mermaid", "flowchart TD\n    " + "x" * 65 + " --> b\n"),
    ],
)
def test_an_id_outside_the_pattern_is_refused(fmt, source):
    with pytest.raises(PlanDocumentError, match=r"not a valid step id") as caught:
        load_plan(source, fmt)

    assert caught.value.code == "invalid_id"


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_nesting_deeper_than_the_limit_is_refused(fmt):
    with pytest.raises(PlanDocumentError, match="max_depth") as caught:
        load_plan(_nested_args(30), fmt)

    assert caught.value.code == "document_too_deep"
    # plan, steps, step, then 29 levels of args: exactly 32 containers
    assert load_plan(_nested_args(29), fmt).steps[0].args["deeper"]


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_absurd_nesting_is_refused_as_too_deep_rather_than_crashing_the_parser(fmt):
    source = "[" * 200_000 + "]" * 200_000

    with pytest.raises(PlanDocumentError, match="max_depth") as caught:
        load_plan(source, fmt)

    assert caught.value.code == "document_too_deep"


def test_nesting_inside_mermaid_metadata_is_refused_too():
    meta = json.dumps({"args": json.loads(_nested_args(40))})
    source = f"flowchart TD\n    %% forge-step a: {meta}\n    a\n"

    with pytest.raises(PlanDocumentError, match="max_depth") as caught:
        load_plan(source, "mermaid")

    assert caught.value.code == "document_too_deep"


BILLION_LAUGHS = """\
goal: laughs
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
steps: [{id: a, args: {lol: *i}}]
"""


@pytest.fixture(params=["libyaml", "pure-python"])
def yaml_loader(request, monkeypatch):
    """Run a test with each YAML parser: the refusals must not depend on which is there."""
    factories = [
        f for f in yaml_safe._LOADERS if ("Pure" in f.__name__) == (request.param != "libyaml")
    ]
    if not factories:
        pytest.skip("PyYAML is built without libyaml")
    monkeypatch.setattr(yaml_safe, "_LOADERS", factories)
    return request.param


def test_a_billion_laughs_document_is_refused_at_once(yaml_loader):
    started = time.perf_counter()

    with pytest.raises(PlanDocumentError, match="alias budget") as caught:
        load_plan(BILLION_LAUGHS, "yaml")

    assert caught.value.code == "yaml_aliases"
    assert "line 7" in caught.value.message  # refused at "f", long before the last level
    assert time.perf_counter() - started < 0.1


def test_an_alias_to_the_node_that_contains_it_is_refused(yaml_loader):
    with pytest.raises(PlanDocumentError, match="contains it") as caught:
        load_plan("goal: g\nsteps: &s [*s]\n", "yaml")

    assert caught.value.code == "yaml_aliases"


def test_a_modest_alias_shared_between_steps_is_allowed(yaml_loader):
    source = """\
goal: shared args
steps:
  - {id: a, tool: echo, args: &shared {region: eu, limit: 10}}
  - {id: b, tool: echo, args: *shared, depends_on: [a]}
  - id: c
    tool: echo
    args: {<<: *shared, limit: 20}
    depends_on: [b]
"""
    document = load_plan(source, "yaml")

    assert [step.args for step in document.steps] == [
        {"region": "eu", "limit": 10},
        {"region": "eu", "limit": 10},
        {"region": "eu", "limit": 20},
    ]


@pytest.mark.parametrize(
    "source",
    [
        "goal: !!python/object/apply:os.system ['echo pwned']\nsteps: []\n",
        "goal: g\nsteps: []\nx: !!binary aGVsbG8=\n",
        "goal: !!str g\nsteps: []\n",
        "goal: ! g\nsteps: []\n",
        "goal: g\nsteps: !!set {a, b}\n",
        "goal: g\nsteps: !custom []\n",
    ],
)
def test_any_explicit_yaml_tag_is_refused(yaml_loader, source):
    with pytest.raises(PlanDocumentError, match="explicit YAML tags are not allowed") as caught:
        load_plan(source, "yaml")

    assert caught.value.code == "yaml_tag"
    assert caught.value.path.startswith("line ")


def test_a_python_object_tag_names_the_tag_and_its_line(yaml_loader):
    with pytest.raises(PlanDocumentError) as caught:
        load_plan("goal: g\nsteps:\n  - !!python/object:os.system {}\n", "yaml")

    assert caught.value.code == "yaml_tag"
    assert caught.value.message.startswith("line 3, column 5:")
    assert "tag:yaml.org,2002:python/object:os.system" in caught.value.message


@pytest.mark.parametrize(
    ("fmt", "source"),
    [
        ("json", '{"goal": "first", "steps": [], "goal": "second"}'),
        ("json", '{"goal": "g", "steps": [{"id": "a", "args": {"k": 1, "k": 2}}]}'),
        ("yaml", "goal: first\nsteps: []\ngoal: second\n"),
        ("yaml", "goal: g\nsteps:\n  - {id: a, args: {k: 1, 'k': 2}}\n"),
        ("mermaid", 'flowchart TD\n    %% forge-step a: {"retries": 1, "retries": 2}\n    a\n'),
    ],
)
def test_a_duplicate_key_is_refused_because_it_would_lose_data(fmt, source):
    with pytest.raises(PlanDocumentError, match="duplicate key") as caught:
        load_plan(source, fmt)

    assert caught.value.code == "duplicate_key"


def test_a_yaml_duplicate_key_names_its_line(yaml_loader):
    with pytest.raises(PlanDocumentError) as caught:
        load_plan("goal: first\nsteps: []\ngoal: second\n", "yaml")

    assert caught.value.message.startswith("line 3, column 1: duplicate key 'goal'")
