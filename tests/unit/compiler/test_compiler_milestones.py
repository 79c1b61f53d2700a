"""Milestones (issue 15, problem 2): the codec reads their shape, the compiler checks what
they name and their order against the dependencies, and a long plan without them draws a
warning past a configurable size."""

from __future__ import annotations

import pytest

from forge.compiler import GraphCompiler
from forge.compiler.milestones import review_holds
from forge.errors import PlanDocumentError
from forge.plan import Milestone, content_hash, from_data, to_data
from forge.plan.formats import dump_plan, load_plan
from forge.tools import DEFAULT_POLICY, PolicyEngine, builtin_registry
from tests.unit.compiler.conftest import make_plan, make_step


def chain(n: int) -> list[dict]:
    return [make_step(f"s{i}", *([f"s{i - 1}"] if i else [])) for i in range(n)]


def test_milestones_are_read_written_and_round_trip_through_every_text_format():
    data = make_plan(
        chain(3),
        milestones=[
            {"id": "gather", "title": "Gather", "steps": ["s0", "s1"], "review": True},
            {"id": "report", "steps": ["s2"]},
        ],
    )

    document = from_data(data)

    assert document.milestones == (
        Milestone("gather", "Gather", ("s0", "s1"), True),
        Milestone("report", "", ("s2",), False),
    )
    assert to_data(document)["milestones"][1] == {"id": "report", "steps": ["s2"]}
    for fmt in ("json", "yaml", "mermaid"):
        assert load_plan(dump_plan(document, fmt), fmt) == document


def test_a_plan_without_milestones_keeps_its_content_hash():
    data = make_plan(chain(2))
    assert "milestones" not in to_data(from_data(data))
    assert content_hash(from_data(data)) == content_hash(from_data({**data, "milestones": []}))


@pytest.mark.parametrize(
    ("milestones", "path"),
    [
        ({"id": "m"}, "milestones"),
        ([{"steps": ["s0"]}], "milestones[0].id"),
        ([{"id": "m", "steps": ["s0"], "review": "yes"}], "milestones[0].review"),
        ([{"id": "m", "steps": ["s0"], "owner": "ann"}], "milestones[0]"),
        ([{"id": "m", "steps": ["bad id!"]}], "milestones[0].steps[0]"),
    ],
)
def test_the_codec_refuses_a_malformed_milestone_with_its_path(milestones, path):
    with pytest.raises(PlanDocumentError) as error:
        from_data(make_plan(chain(1), milestones=milestones))
    assert error.value.path == path


def compile_with(steps, *, warn_steps=50, **fields):
    compiler = GraphCompiler(
        builtin_registry(), PolicyEngine(DEFAULT_POLICY), milestone_warn_steps=warn_steps
    )
    return compiler.compile(from_data(make_plan(steps, **fields)))


def codes(result, *wanted):
    return [(d.code, d.message, d.nodes) for d in result.diagnostics if d.code in wanted]


def test_a_milestone_naming_an_unknown_step_is_invalid_milestone():
    result = compile_with(chain(2), milestones=[{"id": "m", "steps": ["s0", "s1", "ghost"]}])

    assert codes(result, "invalid_milestone") == [
        ("invalid_milestone", "milestone 'm' names unknown step(s) 'ghost'", ())
    ]
    assert not result.ok


def test_a_step_in_two_milestones_is_invalid_milestone():
    result = compile_with(
        chain(2), milestones=[{"id": "a", "steps": ["s0", "s1"]}, {"id": "b", "steps": ["s1"]}]
    )

    assert codes(result, "invalid_milestone") == [
        (
            "invalid_milestone",
            "step 's1' is in two milestones, 'a' and 'b'; a step belongs to one",
            ("s1",),
        )
    ]


def test_steps_in_no_milestone_and_empty_or_repeated_milestones_are_invalid():
    result = compile_with(
        chain(3),
        milestones=[{"id": "a", "steps": ["s0"]}, {"id": "a", "steps": []}],
    )

    assert [message for _, message, _ in codes(result, "invalid_milestone")] == [
        "milestone id 'a' is used twice",
        "milestone 'a' names no step",
        "2 step(s) are in no milestone ('s1', 's2'): when a plan has milestones, each step "
        "belongs to one",
    ]


def test_a_step_depending_on_a_later_milestone_is_milestone_out_of_order():
    steps = [make_step("a"), make_step("b", "c"), make_step("c")]

    result = compile_with(
        steps, milestones=[{"id": "one", "steps": ["a", "b"]}, {"id": "two", "steps": ["c"]}]
    )

    (diagnostic,) = [d for d in result.diagnostics if d.code == "milestone_out_of_order"]
    assert diagnostic.severity == "error"
    assert diagnostic.edges == (("c", "b"),)
    assert diagnostic.message == (
        "step 'b' (milestone 'one') depends on 'c' of the later milestone 'two'; move one of "
        "them, or drop the dependency"
    )


def test_a_long_plan_without_milestones_draws_a_warning_past_the_configured_size():
    assert codes(compile_with(chain(50)), "plan_without_milestones") == []

    result = compile_with(chain(51))
    (diagnostic,) = [d for d in result.diagnostics if d.code == "plan_without_milestones"]
    assert diagnostic.severity == "warning"
    assert diagnostic.message.startswith("plan has 51 steps and no milestones")
    assert diagnostic.hint.startswith("group the steps into milestones")
    assert codes(compile_with(chain(11), warn_steps=10), "plan_without_milestones")
    assert not codes(compile_with(chain(500), warn_steps=0), "plan_without_milestones")


def test_a_long_plan_with_valid_milestones_compiles_clean():
    milestones = [
        {"id": f"m{k}", "steps": [f"s{i}" for i in range(k * 20, k * 20 + 20)], "review": True}
        for k in range(3)
    ]

    result = compile_with(chain(60), milestones=milestones)

    assert result.ok and result.diagnostics == ()


def test_review_holds_say_which_reviews_a_step_waits_for():
    document = from_data(
        make_plan(
            chain(4),
            milestones=[
                {"id": "a", "steps": ["s0"], "review": True},
                {"id": "b", "steps": ["s1"]},
                {"id": "c", "steps": ["s2"], "review": True},
                {"id": "d", "steps": ["s3"]},
            ],
        )
    )

    assert dict(review_holds(document)) == {"s1": ("a",), "s2": ("a",), "s3": ("a", "c")}
