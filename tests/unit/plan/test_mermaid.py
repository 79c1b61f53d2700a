"""Mermaid flowcharts: hand-drawn ones import as structure, exported ones import unchanged."""

import pytest

from forge.errors import PlanDocumentError
from forge.plan import Budget, DoneWhen, PlanDocument, Step, dump_plan, load_plan
from forge.plan.formats import DEFAULT_GOAL


def _structure(document):
    return [(step.id, step.description, step.depends_on) for step in document.steps]


def test_a_hand_drawn_flowchart_imports_as_steps_and_dependencies():
    document = load_plan(
        """\
flowchart LR
    %% goal: Ship the release
    fetch[Fetch sources] --> build(Build) --> test{Run tests}
    test -->|pass| publish([Publish])
""",
        "mermaid",
    )

    assert document.goal == "Ship the release"
    assert _structure(document) == [
        ("fetch", "Fetch sources", ()),
        ("build", "Build", ("fetch",)),
        ("test", "Run tests", ("build",)),
        ("publish", "Publish (if Run tests: pass)", ("test",)),  # a decision's branch
    ]
    assert document.deliverable is None
    assert document.steps[0] == Step(id="fetch", description="Fetch sources")


def test_groups_with_ampersands_link_every_source_to_every_target():
    document = load_plan("graph TD\n    a & b --> c & d\n    c --> e\n", "mermaid")

    assert _structure(document) == [
        ("a", "", ()),
        ("b", "", ()),
        ("c", "", ("a", "b")),
        ("d", "", ("a", "b")),
        ("e", "", ("c",)),
    ]


def test_every_link_style_and_label_form_declares_a_dependency():
    source = """\
flowchart TB
    a -.-> b
    b ==> c
    c -- checked by --> d
    d -. maybe .-> e
    e == surely ==> f
    f --- g
    g --o h
    h --x i
    i ---->|long| j
    j -->|"quoted | text"| k
"""
    document = load_plan(source, "mermaid")

    ids = "abcdefghijk"
    assert [step.depends_on for step in document.steps] == [()] + [(x,) for x in ids[:-1]]


def test_every_node_shape_gives_its_label():
    source = """\
flowchart TD
    a[square] --> b(round) --> c{decision} --> d([stadium]) --> e((circle))
    e --> f[[subroutine]] --> g[(database)] --> h{{hexagon}} --> i>flag]
    i --> j[/lean/] --> k[\\lean\\] --> l[/trapezoid\\] --> m(((double)))
"""
    document = load_plan(source, "mermaid")

    assert [step.description for step in document.steps] == [
        "square", "round", "decision", "stadium", "circle", "subroutine", "database",
        "hexagon", "flag", "lean", "lean", "trapezoid", "double",
    ]  # fmt: skip


def test_quoted_labels_keep_brackets_and_decode_entities_and_line_breaks():
    document = load_plan(
        'flowchart TD\n    a["Read (all) [the] {files}; then #quot;sum#quot;<br/>them #35;1"]\n',
        "mermaid",
    )

    assert document.steps[0].description == 'Read (all) [the] {files}; then "sum"\nthem #1'


def test_styling_comments_subgraphs_and_directives_are_ignored_or_flattened():
    source = """\
---
title: Nightly report
---
%%{init: {"theme": "dark"}}%%
flowchart TD
    %% a plain comment
    subgraph ingest [Ingest]
        direction LR
        a[Load] --> b[Clean]
    end
    b --> c[Report]:::loud; c --> d
    classDef loud fill:#f96
    class d loud
    style a fill:#fff
    linkStyle 0 stroke:#f00
    click a "https://example.com"
    accTitle: A report pipeline
"""
    document = load_plan(source, "mermaid")

    assert document.goal == "Nightly report"
    assert _structure(document) == [
        ("a", "Load", ()),
        ("b", "Clean", ("a",)),
        ("c", "Report", ("b",)),
        ("d", "", ("c",)),
    ]


def test_without_a_title_or_goal_comment_the_goal_is_the_documented_default():
    document = load_plan("flowchart TD\n    a\n", "mermaid")

    assert document.goal == DEFAULT_GOAL == "Imported from Mermaid"


def test_a_keyword_used_as_a_node_id_is_a_step_not_an_ignored_statement():
    document = load_plan("flowchart TD\n    style --> next\n", "mermaid")

    assert _structure(document) == [("style", "", ()), ("next", "", ("style",))]


def test_front_matter_must_open_the_text():
    with pytest.raises(PlanDocumentError, match="line 2: expected a 'flowchart'") as caught:
        load_plan("\n---\ntitle: late\n---\nflowchart TD\n", "mermaid")

    assert caught.value.code == "invalid_mermaid"


def test_an_invisible_link_declares_no_dependency():
    document = load_plan("flowchart TD\n    a ~~~ b\n", "mermaid")

    assert _structure(document) == [("a", "", ()), ("b", "", ())]


@pytest.mark.parametrize(
    ("source", "line", "message"),
    [
        ("sequenceDiagram\n    a->>b: hi\n", 1, "expected a 'flowchart' or 'graph' header"),
        ("flowchart XY\n    a --> b\n", 1, "expected a 'flowchart' or 'graph' header"),
        ("%% only a comment\n", 1, "no 'flowchart' or 'graph' header"),
        ("flowchart TD\n    a --> b\n    a <--> c\n", 3, "two-way links"),
        ("flowchart TD\n    a --> b\n\n    a -> b\n", 4, "expected a link"),
        ("flowchart TD\n    a[never closed\n", 2, "label is never closed"),
        ('flowchart TD\n    a["never closed]\n', 2, "double quote is never closed"),
        ("flowchart TD\n    étape --> b\n", 2, "expected a node id"),
        ("flowchart TD\n    a --> b %% trailing\n", 2, "expected a link"),
        ("flowchart TD\n    a@{ shape: rect }\n", 2, "expected a link"),
        ("flowchart TD\n    subgraph one\n    a\n", 2, "subgraph is never closed"),
        ("flowchart TD\n    a\n    end\n", 3, "'end' without an open subgraph"),
        ("flowchart TD\n    subgraph one\n    a\n    end\n    one --> a\n", 5, "is a subgraph"),
        ("flowchart TD\n    %% forge: {not json}\n", 2, "forge metadata"),
        ("flowchart TD\n    %% forge: []\n", 2, "must be a JSON object"),
        ('flowchart TD\n    %% forge: {"goal": "g"}\n', 2, "cannot hold 'goal'"),
        ('flowchart TD\n    %% forge-step x: {"tool": "echo"}\n    a\n', 2, "which is no node"),
        ('flowchart TD\n    a\n    %% forge-step a: {"description": "d"}\n', 3, "'description'"),
    ],
)
def test_unsupported_or_broken_mermaid_is_refused_naming_the_line(source, line, message):
    with pytest.raises(PlanDocumentError, match=message) as caught:
        load_plan(source, "mermaid")

    assert caught.value.code == "invalid_mermaid"
    assert caught.value.message.startswith(f"line {line}:")


SUPPLIER = PlanDocument(
    goal="Generate a supplier risk report",
    deliverable="publish",
    risk_level="medium",
    requires_approval_before=("external_email",),
    budget=Budget(max_steps=20, max_cost=5.0),
    steps=(
        Step(
            id="inspect",
            description='Read "contracts" <and> history',
            tool="sql_read",
            args={"query": "select * from contracts"},
            done_when=DoneWhen("Facts extracted", required_keys=("facts",)),
        ),
        Step(id="analyse", description="Score the risks", depends_on=("inspect",)),
        Step(id="publish", description="Publish\nthe report", depends_on=("analyse", "inspect")),
    ),
)


def test_the_export_is_a_readable_flowchart_with_lossless_metadata_comments():
    assert (
        dump_plan(SUPPLIER, "mermaid")
        == """\
---
title: "Generate a supplier risk report"
---
flowchart TD
    %% Exported by Forge: the %% forge lines carry what the diagram cannot show.
    %% forge: {"schema": "forge.plan/v1", "deliverable": "publish", "risk_level": "medium", \
"requires_approval_before": ["external_email"], "budget": {"max_steps": 20, "max_cost": 5.0}, \
"max_replans": 3}
    %% forge-step inspect: {"tool": "sql_read", "args": {"query": "select * from contracts"}, \
"done_when": {"description": "Facts extracted", "required_keys": ["facts"]}}
    inspect["Read #quot;contracts#quot; #lt;and#gt; history"]
    analyse["Score the risks"]
    publish["Publish<br>the report"]
    inspect --> analyse
    analyse --> publish
    inspect --> publish
    classDef deliverable fill:#fef3c7,stroke:#b45309,stroke-width:3px
    class publish deliverable
"""
    )
    assert load_plan(dump_plan(SUPPLIER, "mermaid"), "mermaid") == SUPPLIER


def test_an_exported_flowchart_with_its_comments_removed_still_imports_its_structure():
    text = dump_plan(SUPPLIER, "mermaid")
    bare = "\n".join(line for line in text.split("\n") if "%% forge" not in line)

    document = load_plan(bare, "mermaid")

    assert document.goal == SUPPLIER.goal
    assert _structure(document) == _structure(SUPPLIER)
    assert document.steps[0].tool is None


def test_a_label_edited_in_an_exported_flowchart_becomes_the_new_description():
    text = dump_plan(SUPPLIER, "mermaid").replace('"Score the risks"', '"Score every risk"')

    document = load_plan(text, "mermaid")

    assert document.step("analyse").description == "Score every risk"
    assert document.step("inspect") == SUPPLIER.step("inspect")


def test_ids_mermaid_cannot_spell_travel_in_the_metadata_and_come_back():
    document = PlanDocument(
        goal="awkward ids",
        steps=(
            Step(id="end", description="a keyword"),
            Step(id="-x.", depends_on=("end",)),
            Step(id="step_2", depends_on=("-x.",)),
            Step(id="end", description="a repeated id", depends_on=("step_2", "ghost", "end")),
        ),
    )

    text = dump_plan(document, "mermaid")

    assert '    %% forge-step step_1: {"id": "end"}' in text
    assert '    %% forge-step step_2_: {"id": "-x."}' in text
    assert "    step_2_ --> step_2" in text
    assert '"depends_on": ["step_2", "ghost", "end"]' in text
    assert load_plan(text, "mermaid") == document


def test_hostile_labels_cannot_break_out_of_the_node_or_the_line():
    hostile = 'x"] --> pwned["<img src=x onerror=alert(1)>\n%% forge: {}\u2028`md`'
    document = PlanDocument(goal=hostile, steps=(Step(id="a", description=hostile),))

    text = dump_plan(document, "mermaid")

    assert text.split("\n")[6] == (
        '    a["x#quot;] --#gt; pwned[#quot;#lt;img src=x onerror=alert(1)#gt;<br>'
        '%% forge: {}#8232;#96;md#96;"]'
    )
    assert len(text.split("\n")) == 10  # nine lines and the final newline
    assert load_plan(text, "mermaid") == document
