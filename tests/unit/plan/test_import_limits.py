"""Each import limit is refused with its own code and an error that names the limit."""

import json
import time
import tracemalloc

import pytest
import yaml

from forge.compiler import GraphCompiler
from forge.errors import PlanDocumentError
from forge.plan import (
    DEFAULT_LIMITS,
    Estimate,
    ImportLimits,
    PlanDocument,
    Step,
    dump_plan,
    from_data,
    load_plan,
)
from forge.plan.formats import yaml_safe
from forge.plan.limits import QUANTITY_LIMIT
from forge.tools import DEFAULT_POLICY, PolicyEngine, builtin_registry

FORMATS = ("json", "yaml", "mermaid")


def _plan(step_count: int) -> PlanDocument:
    steps = [Step(id=f"s{n}", depends_on=(f"s{n - 1}",) if n else ()) for n in range(step_count)]
    return PlanDocument(goal="count", steps=tuple(steps))


def _nested_args(depth: int) -> str:
    value: object = "bottom"
    for _ in range(depth):
        value = {"deeper": value}
    return json.dumps({"goal": "deep", "steps": [{"id": "a", "args": value}]})


def _rich_plan(step_count: int, keys: int) -> dict:
    """A plan of independent echo steps of 9 + 2 * ``keys`` nodes each: the step, its id,
    description, tool and args keys with their values, and each key of args with its
    value (a copy for each step, so that YAML writes no aliases)."""
    return {
        "goal": "long",
        "steps": [
            {
                "id": f"s{n}",
                "description": "say it",
                "tool": "echo",
                "args": {f"k{k}": k for k in range(keys)},
            }
            for n in range(step_count)
        ],
    }


def _read(data: dict, how: str, limits: ImportLimits) -> PlanDocument:
    if how == "data":
        return from_data(data, limits)
    source = json.dumps(data) if how == "json" else yaml.safe_dump(data)
    return load_plan(source, how, limits)


# 200 steps allowed: 10,000 nodes (the floor; 50 per step would be the same).
TWO_HUNDRED = ImportLimits(max_steps=200)


@pytest.mark.parametrize("how", ["json", "yaml", "data"])
def test_a_plan_over_the_step_limit_is_refused_for_its_steps_before_its_nodes(how):
    """The node limit grows with the step limit, so a plan of too many ordinary steps is
    over both: it is refused for its length, the limit its author can do something about."""
    data = _rich_plan(300, keys=16)  # 41 nodes a step: 12,305 nodes in all

    with pytest.raises(PlanDocumentError) as caught:
        _read(data, how, TWO_HUNDRED)

    assert caught.value.code == "too_many_steps"
    assert "over the limit of 200 steps (max_steps)" in caught.value.message
    if how != "yaml":  # YAML's event pass stops at the node over, knowing 243 steps so far
        assert caught.value.message == (
            "document has 300 steps, over the limit of 200 steps (max_steps)"
        )


@pytest.mark.parametrize("how", ["json", "yaml", "data"])
def test_a_plan_within_the_step_limit_is_refused_for_its_nodes_when_its_steps_are_too_rich(how):
    data = _rich_plan(100, keys=60)  # 129 nodes a step: 12,905 nodes in all

    with pytest.raises(PlanDocumentError) as caught:
        _read(data, how, TWO_HUNDRED)

    assert caught.value.code == "too_many_nodes"
    assert caught.value.message.endswith("over the limit of 10000 (max_nodes)")


def test_the_node_limit_follows_the_step_limit():
    data = _rich_plan(300, keys=16)

    for how in ("json", "yaml", "data"):
        assert len(_read(data, how, ImportLimits(max_steps=300)).steps) == 300


NAMED = ImportLimits(
    max_bytes=100_000,
    max_steps=200,
    bytes_setting="FORGE_MAX_PLAN_BYTES",
    steps_setting="FORGE_MAX_PLAN_STEPS",
)


@pytest.mark.parametrize(
    ("data", "code", "ending"),
    [
        (_rich_plan(300, keys=16), "too_many_steps",
         "over the limit of 200 steps (max_steps; FORGE_MAX_PLAN_STEPS sets it)"),
        # the node limit is the step limit's: the setting to raise is the step limit's
        (_rich_plan(100, keys=60), "too_many_nodes",
         "over the limit of 10000 (max_nodes; FORGE_MAX_PLAN_STEPS sets it)"),
        (_rich_plan(2000, keys=0), "document_too_large",
         "over the limit of 100000 bytes (max_bytes; FORGE_MAX_PLAN_BYTES sets it)"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("how", ["json", "yaml"])
def test_each_refusal_names_the_setting_that_sets_its_limit(data, code, ending, how):
    with pytest.raises(PlanDocumentError) as caught:
        _read(data, how, NAMED)

    assert caught.value.code == code
    assert caught.value.message.endswith(ending)


def test_a_node_limit_given_outright_names_no_step_setting():
    limits = ImportLimits(max_steps=200, max_nodes=1000, steps_setting="FORGE_MAX_PLAN_STEPS")

    with pytest.raises(PlanDocumentError) as caught:
        from_data(_rich_plan(100, keys=16), limits)

    assert caught.value.code == "too_many_nodes"
    assert caught.value.message.endswith("over the limit of 1000 (max_nodes)")


def test_a_flowchart_over_the_step_limit_names_its_setting():
    source = "flowchart TD\n" + "\n".join(f"    n{i}" for i in range(300)) + "\n"

    with pytest.raises(PlanDocumentError) as caught:
        load_plan(source, "mermaid", NAMED)

    assert caught.value.code == "too_many_steps"
    assert caught.value.message.endswith("(max_steps; FORGE_MAX_PLAN_STEPS sets it)")


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


# --- Work bounds: nodes are counted while parsing, not after --------------------------
# The byte limit alone let a 4 MiB document hold two million one-character values, which
# took half a minute and most of a gigabyte to parse before any other limit looked at it.
# Each test below proves the refusal came at the limit (where the parser stopped, or what
# it counted), and bounds time and memory generously: precise timings are in
# bench/import_limits.py.

MIB = 2**20


def _refused(action):
    """``action``'s PlanDocumentError, the wall time it took and the peak of Python
    allocations while it ran (a second run, since tracing slows everything down)."""
    started = time.perf_counter()
    with pytest.raises(PlanDocumentError) as caught:
        action()
    seconds = time.perf_counter() - started
    tracemalloc.start()
    try:
        with pytest.raises(PlanDocumentError):
            action()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return caught.value, seconds, peak


def _flow_list(count: int, item: str = "1") -> str:
    return "goal: g\nsteps: []\nx: [" + ",".join([item] * count) + "]\n"


def test_a_4_mib_yaml_list_of_two_million_items_is_refused_at_the_node_limit():
    source = _flow_list(2_000_000)
    assert 4_000_000 < len(source) <= DEFAULT_LIMITS.max_bytes

    error, seconds, peak = _refused(lambda: load_plan(source, "yaml"))

    # Seven nodes come before the list's items (the mapping, goal, g, steps, [], x, the
    # list); the item that makes one node too many is item max_nodes - 6, at this column.
    item = DEFAULT_LIMITS.node_limit - 6
    assert error.code == "too_many_nodes"
    assert error.message.startswith(f"line 3, column {len('x: [') + 2 * item - 1}: ")
    assert f"over the limit of {DEFAULT_LIMITS.node_limit} (max_nodes)" in error.message
    assert (seconds < 5, peak < 256 * MIB) == (True, True)


def test_the_yaml_node_limit_holds_with_either_parser(yaml_loader):
    error, _, peak = _refused(
        lambda: load_plan(_flow_list(100_000), "yaml", ImportLimits(max_nodes=1000))
    )

    assert error.code == "too_many_nodes"
    assert error.message.startswith(f"line 3, column {len('x: [') + 2 * 994 - 1}: ")
    assert peak < 16 * MIB  # nothing of the 100,000 items was kept


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_a_document_of_exactly_max_nodes_is_read_and_one_node_more_is_refused(fmt):
    data = {"goal": "g", "steps": [{"id": "a", "args": {"items": list(range(10))}}]}
    source = json.dumps(data) if fmt == "json" else yaml.safe_dump(data)
    # the plan, goal and its value, steps and its list, the step, id and its value, args
    # and its mapping, items and its list: 12 nodes, and 10 items
    assert (
        load_plan(source, fmt, ImportLimits(max_nodes=22)).steps[0].args == data["steps"][0]["args"]
    )

    with pytest.raises(PlanDocumentError, match=r"over the limit of 21 \(max_nodes\)") as caught:
        load_plan(source, fmt, ImportLimits(max_nodes=21))
    assert caught.value.code == "too_many_nodes"


def test_yaml_aliases_count_as_the_nodes_they_repeat(yaml_loader):
    source = "goal: g\nsteps:\n  - id: a\n    args: {x: &a [1, 2, 3], y: [*a, *a]}\n"

    assert load_plan(source, "yaml", ImportLimits(max_nodes=25)).steps[0].args["y"] == [
        [1, 2, 3],
        [1, 2, 3],
    ]
    with pytest.raises(PlanDocumentError) as caught:
        load_plan(source, "yaml", ImportLimits(max_nodes=24))
    assert caught.value.code == "too_many_nodes"
    assert caught.value.message.startswith("line 4, column 37: ")  # the second *a


@pytest.mark.parametrize("item", ["1", "{}", "[]", '""'])
def test_a_4_mib_json_document_of_tiny_values_is_refused_for_its_node_count(item):
    count = 4_000_000 // (len(item) + 1)
    source = '{"goal": "g", "steps": [], "x": [' + ",".join([item] * count) + "]}"

    error, seconds, peak = _refused(lambda: load_plan(source, "json"))

    assert error.code == "too_many_nodes"
    assert (seconds < 5, peak < 256 * MIB) == (True, True)


def test_plain_data_over_the_node_limit_is_refused_before_it_is_read():
    data = {"goal": "g", "steps": [], "x": [0] * 2_000_000}

    with pytest.raises(PlanDocumentError, match="max_nodes") as caught:
        from_data(data)

    assert caught.value.code == "too_many_nodes"


def test_the_node_limit_leaves_room_for_max_steps_steps_as_rich_as_the_spec_example():
    rich = {
        "description": "Read supplier contracts and purchase history",
        "tool": "sql_read",
        "args": {"query": "select * from contracts"},
        "tools_allowed": ["file_search", "sql_read"],
        "done_when": {
            "description": "Contracts summarised as structured facts",
            "required_keys": ["facts"],
            "checks": ["length(facts) > `0`"],
        },
        "timeout_s": 30,
        "retries": 0,
        "rollback_hint": "nothing to undo",
    }
    steps = [
        {"id": f"s{n}", "depends_on": [f"s{n - 1}"] if n else [], **rich}
        for n in range(DEFAULT_LIMITS.max_steps)
    ]

    document = from_data({"goal": "many rich steps", "steps": steps})

    assert len(document.steps) == DEFAULT_LIMITS.max_steps


def test_a_flowchart_of_200_000_nodes_is_refused_at_the_first_node_over_the_step_limit():
    source = "flowchart TD\n" + "\n".join(f"    n{i}" for i in range(200_000)) + "\n"

    error, seconds, peak = _refused(lambda: load_plan(source, "mermaid"))

    over = DEFAULT_LIMITS.max_steps + 1
    assert error.code == "too_many_steps"
    assert error.path == f"line {over + 1}"  # the header is line 1, node n0 line 2
    assert f"at least {over} steps, over the limit of" in error.message
    assert (seconds < 5, peak < 256 * MIB) == (True, True)


def test_flowchart_groups_that_multiply_into_many_edges_are_refused_while_parsing():
    left = " & ".join(f"a{i}" for i in range(700))
    right = " & ".join(f"b{i}" for i in range(700))
    source = f"flowchart TD\n    {left} --> {right}\n"

    error, seconds, peak = _refused(lambda: load_plan(source, "mermaid"))

    assert error.code == "too_many_nodes"
    assert error.path == "line 2"
    assert (seconds < 5, peak < 256 * MIB) == (True, True)


def test_a_flowchart_that_repeats_one_name_in_its_groups_draws_one_edge_cheaply():
    left = " & ".join(["a"] * 5_000)
    right = " & ".join(["b"] * 5_000)
    started = time.perf_counter()

    document = load_plan(f"flowchart TD\n    {left} --> {right}\n", "mermaid")

    assert time.perf_counter() - started < 5  # 25 million pairs, were each one visited
    assert [(step.id, step.depends_on) for step in document.steps] == [("a", ()), ("b", ("a",))]


def test_flowchart_comments_count_towards_the_node_limit():
    source = "flowchart TD\n" + "%% note\n" * 30 + "    a --> b\n"

    with pytest.raises(PlanDocumentError, match="max_nodes") as caught:
        load_plan(source, "mermaid", ImportLimits(max_nodes=20))

    assert caught.value.code == "too_many_nodes"
    assert load_plan(source, "mermaid", ImportLimits(max_nodes=40)).steps[1].depends_on == ("a",)


# Where a count or an amount sits, and a value just past the limit of its type.
QUANTITIES = [
    ("max_replans", 10**12 + 1),
    ("budget.max_steps", 10**12 + 1),
    ("budget.max_tokens", 10**12 + 1),
    ("budget.max_cost", 1e308),
    ("steps.a.estimate.tokens", 10**12 + 1),
    ("steps.a.estimate.cost", 1e308),
    ("steps.a.estimate.seconds", 1.0000000001e12),
    ("steps.a.timeout_s", 1e308),
    ("steps.a.retries", 10**12 + 1),
]


def _with_quantity(where: str, value: object) -> dict:
    """A one-step plan with ``value`` at ``where`` ("steps.a." is inside its step)."""
    step: dict = {"id": "a", "tool": "noop"}
    plan: dict = {"goal": "count", "deliverable": "a", "steps": [step]}
    holder = step if where.startswith("steps.a.") else plan
    *path, field = where.removeprefix("steps.a.").split(".")
    for key in path:
        holder = holder.setdefault(key, {})
    holder[field] = value
    return plan


@pytest.mark.parametrize(("where", "over"), QUANTITIES)
@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_a_count_or_amount_past_a_trillion_is_refused_by_name(where, over, fmt):
    """1e308 twice made the impact summary's sum overflow; no count or amount may pass
    QUANTITY_LIMIT, and the error names the field and the limit."""
    dump = json.dumps if fmt == "json" else yaml.safe_dump  # YAML's own float spelling
    with pytest.raises(PlanDocumentError) as refused:
        load_plan(dump(_with_quantity(where, over)), fmt)
    assert refused.value.code == "invalid_document"
    assert where in str(refused.value) and f"at most {QUANTITY_LIMIT:,}" in str(refused.value)
    assert load_plan(dump(_with_quantity(where, QUANTITY_LIMIT)), fmt)


def test_estimates_at_the_limit_on_every_step_sum_to_a_finite_impact():
    limit = QUANTITY_LIMIT
    steps = [
        Step(id=f"s{n}", tool="noop", depends_on=(f"s{n - 1}",) if n else (),
             estimate=Estimate(tokens=limit, cost=float(limit), seconds=float(limit)))
        for n in range(1000)
    ]  # fmt: skip
    document = PlanDocument(goal="count", deliverable="s999", steps=tuple(steps))
    result = GraphCompiler(builtin_registry(), PolicyEngine(DEFAULT_POLICY)).compile(document)
    impact = json.loads(result.to_json())["impact"]
    assert impact["tokens"] == 1000 * limit and impact["cost"] == 1000 * limit
