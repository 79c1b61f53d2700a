"""What rules are matched against: the version's compiled impact, or one step of it."""

from __future__ import annotations

from forge.compiler import GraphCompiler, impact_of
from forge.plan import from_data
from forge.rules import Subject
from forge.tools import DEFAULT_POLICY, PolicyEngine, builtin_registry


def _graph():
    document = from_data({
        "goal": "Tell the partner about the report",
        "steps": [
            {"id": "gather", "description": "Gather the facts", "tool": "echo",
             "args": {"facts": [1]}, "estimate": {"tokens": 30, "cost": 0.5}},
            {"id": "post", "description": "Post the report", "tool": "http_request",
             "args": {"method": "POST", "url": "https://API.partner.example/reports"},
             "depends_on": ["gather"]},
        ],
    })  # fmt: skip
    result = GraphCompiler(builtin_registry(), PolicyEngine(DEFAULT_POLICY)).compile(document)
    assert result.graph is not None
    return result.graph


def test_a_versions_subject_is_its_impact_summary():
    graph = _graph()

    subject = Subject.of_impact(impact_of(graph))

    assert subject.tools == {"echo", "http_request"}
    assert subject.hosts == {"api.partner.example"}
    assert "external" in subject.side_effects
    assert (subject.steps, subject.tokens, subject.cost) == (2, 30, 0.5)


def test_a_steps_subject_is_that_step_alone():
    graph = _graph()

    post = Subject.of_step(graph.nodes["post"])
    gather = Subject.of_step(graph.nodes["gather"])

    assert (post.tools, post.hosts, post.side_effects) == (
        {"http_request"},
        {"api.partner.example"},
        {"external"},
    )
    assert (gather.tools, gather.hosts, gather.steps, gather.tokens) == ({"echo"}, set(), 1, 30)
