import re

from forge.plan import PlanDocument, Step, dump_plan

QUOTED = r'"(?:[^"\\\n]|\\.)*"'


def test_dot_export_is_a_digraph_with_edges_from_dependency_to_dependent():
    document = PlanDocument(
        goal="Ship",
        steps=(Step(id="build"), Step(id="test", description="Run tests", depends_on=("build",))),
    )

    assert (
        dump_plan(document, "dot")
        == """\
digraph plan {
    graph [rankdir=TB, labelloc=t, label="Ship"];
    node [shape=box, style="rounded", fontname="Helvetica"];
    edge [color="#64748b"];
    "build" [label="build"];
    "test" [label="test\\nRun tests", style="rounded,filled,bold", fillcolor="#fef3c7", \
color="#b45309", penwidth=2];
    "build" -> "test";
}
"""
    )


def test_dot_export_escapes_hostile_labels_into_plain_quoted_strings():
    hostile = 'say "hi"\r\nthen <img src=x onerror=alert(1)> \\N\t];\n"x" -> "y'
    document = PlanDocument(
        goal=hostile,
        steps=(Step(id="a", description=hostile), Step(id="b", depends_on=("a",))),
        deliverable="b",
    )

    lines = dump_plan(document, "dot").split("\n")

    escaped = 'say \\"hi\\"\\nthen <img src=x onerror=alert(1)> \\\\N\ufffd];\\n\\"x\\" -> \\"y'
    assert lines[1] == f'    graph [rankdir=TB, labelloc=t, label="{escaped}"];'
    assert lines[4] == f'    "a" [label="a\\n{escaped}"];'
    assert len(lines) == 9
    for line in lines[4:7]:
        assert re.fullmatch(rf"    {QUOTED}( -> {QUOTED})?( \[label={QUOTED}.*\])?;", line)
