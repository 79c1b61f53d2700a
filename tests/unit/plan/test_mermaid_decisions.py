"""A Mermaid decision (``id{question}``) is imported as an ordinary step: Forge plans
have no conditions, so every branch after it runs. Import says so (issue 25, item 8):
one ``flattened_decision`` warning per decision, naming it and its branches, and each
branch's label is kept in its step's description."""

from __future__ import annotations

from forge.plan import ImportWarning, import_plan, load_plan

CHART = """\
flowchart TD
    fetch[Fetch the supplier record] --> check{Is the record complete?}
    check -->|yes| score[Score the supplier]
    check -->|no| ask[Ask the supplier for the missing data]
    score --> report[Write the report]
"""
HINT = (
    "keep the branch that should run and delete the others, or make the choice inside one "
    "step (an agent step can decide with its tools); each branch's label is kept in its "
    "step's description"
)


def test_each_branch_keeps_its_label_in_its_steps_description():
    document = import_plan(CHART, "mermaid").document

    descriptions = {step.id: step.description for step in document.steps}
    assert descriptions == {
        "fetch": "Fetch the supplier record",
        "check": "Is the record complete?",
        "score": "Score the supplier (if Is the record complete?: yes)",
        "ask": "Ask the supplier for the missing data (if Is the record complete?: no)",
        "report": "Write the report",
    }
    assert {step.id: step.depends_on for step in document.steps}["ask"] == ("check",)


def test_a_decision_draws_one_warning_naming_it_and_its_branches():
    imported = import_plan(CHART, "mermaid")

    assert imported.warnings == (
        ImportWarning(
            "flattened_decision",
            "decision 'check' (\"Is the record complete?\") is imported as an ordinary "
            "step: a plan has no conditions, so both of its branches run after it: "
            "'score' (yes) and 'ask' (no)",
            nodes=("check", "score", "ask"),
            edges=(("check", "score"), ("check", "ask")),
            hint=HINT,
        ),
    )


def test_the_text_form_of_a_label_is_kept_too_and_each_decision_is_named():
    source = """\
flowchart LR
    a{Approved?} -- yes --> ship[Ship it]
    a -- no --> fix[Fix it]
    fix --> b{"Tests pass?"}
    b -->|"all green"| ship
    b -.->|red| fix2[Fix again]
"""
    imported = import_plan(source, "mermaid")

    descriptions = {step.id: step.description for step in imported.document.steps}
    assert descriptions["ship"] == "Ship it (if Approved?: yes) (if Tests pass?: all green)"
    assert descriptions["fix"] == "Fix it (if Approved?: no)"
    assert descriptions["fix2"] == "Fix again (if Tests pass?: red)"
    assert [(w.code, w.nodes) for w in imported.warnings] == [
        ("flattened_decision", ("a", "ship", "fix")),
        ("flattened_decision", ("b", "ship", "fix2")),
    ]


def test_unlabelled_branches_of_a_decision_are_named_without_a_label():
    imported = import_plan("flowchart TD\n  d{Which way?} --> left & right\n", "mermaid")

    [warning] = imported.warnings
    assert warning.message.endswith("both of its branches run after it: 'left' and 'right'")
    assert [s.description for s in imported.document.steps] == ["Which way?", "", ""]


def test_a_branch_without_a_label_of_its_own_keeps_its_description():
    imported = import_plan("flowchart TD\n  d{Ready?} -->|yes| go[Go]\n  d --> wait\n", "mermaid")

    assert {s.id: s.description for s in imported.document.steps} == {
        "d": "Ready?", "go": "Go (if Ready?: yes)", "wait": "",
    }  # fmt: skip
    assert imported.warnings[0].message.endswith("'go' (yes) and 'wait'")


def test_a_rhombus_with_one_unlabelled_link_loses_nothing_and_draws_no_warning():
    imported = import_plan("flowchart TD\n  a --> c{decision} --> d\n", "mermaid")

    assert imported.warnings == ()
    assert [s.description for s in imported.document.steps] == ["", "decision", ""]


def test_labels_on_links_from_ordinary_steps_stay_as_they_were():
    source = "flowchart TD\n  a[Build] -->|then| b[Test]\n  h{{hexagon}} -->|x| y\n"
    imported = import_plan(source, "mermaid")

    assert imported.warnings == ()
    assert [s.description for s in imported.document.steps] == ["Build", "Test", "hexagon", ""]


def test_a_decision_renamed_by_its_metadata_is_named_by_its_step_id():
    source = """\
flowchart TD
    %% forge-step n1: {"id": "check.record"}
    n1{Complete?} -->|yes| score
    n1 -->|no| ask
"""
    [warning] = import_plan(source, "mermaid").warnings

    assert warning.nodes == ("check.record", "score", "ask")
    assert warning.edges == (("check.record", "score"), ("check.record", "ask"))


def test_load_plan_gives_the_same_document_and_other_formats_have_no_warnings():
    assert load_plan(CHART, "mermaid") == import_plan(CHART, "mermaid").document
    yaml = "goal: g\nsteps:\n  - {id: a, description: Read the notes}\n"
    assert import_plan(yaml, "yaml").warnings == ()
    assert import_plan(yaml.encode(), "yaml").document == load_plan(yaml, "yaml")
