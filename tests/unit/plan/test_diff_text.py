from hypothesis import given
from hypothesis import strategies as st

from forge.plan import FieldChange, diff_plans
from forge.plan.diff_text import MOST_LINES, field_lines
from tests.unit.plan.strategies import json_values
from tests.unit.plan.test_diff import NEW, OLD

CHANGELOG = "fix: parser handles empty plans\nfeat: mermaid export\n"


def test_a_changed_argument_reads_as_itself_not_as_two_whole_objects():
    before = {"path": "CHANGELOG.txt", "content": CHANGELOG}
    after = {"path": "CHANGELOG.txt", "content": CHANGELOG + "fix: typo in docs\n"}

    assert field_lines("args", before, after) == [
        'args.content: …"feat: mermaid export\\n" → …"feat: mermaid export\\nfix: typo in docs\\n"'
    ]


def test_a_long_string_is_shown_where_it_differs_from_a_word_boundary():
    text = "The quick brown fox jumps over the lazy dog and keeps running into the forest beyond"

    assert field_lines("description", text, text.replace("forest", "desert")) == [
        "description: …keeps running into the forest beyond → …keeps running into the desert beyond"
    ]


def test_short_values_are_shown_whole_and_strings_with_line_breaks_quoted():
    assert field_lines(
        "args", {"content": "# Q3 supplier review\n"}, {"content": "# Q3 review\n"}
    ) == ['args.content: "# Q3 supplier review\\n" → "# Q3 review\\n"']
    assert field_lines("timeout_s", None, 30) == ["timeout_s: — → 30"]
    assert field_lines("args", {"name": ""}, {"name": "x"}) == ['args.name: "" → x']


def test_list_items_added_removed_and_changed_in_place():
    checks = ["exit_code == `0`", "contains(stdout, 'CHANGELOG.txt')"]

    assert field_lines(
        "done_when", {"checks": checks}, {"checks": [*checks, "contains(stdout, '2')"]}
    ) == ["done_when.checks: + contains(stdout, '2')"]
    assert field_lines("args", {"argv": ["wc", "-l", "X"]}, {"argv": ["wc", "-c", "X"]}) == [
        "args.argv[1]: -l → -c"
    ]
    assert field_lines("depends_on", ["a", "b"], ["b", "c"]) == [
        "depends_on: − a",
        "depends_on: + c",
    ]


def test_an_object_that_appears_reads_as_its_parts_without_its_empty_ones():
    done_when = {"description": "scored", "required_keys": [], "checks": ["length(scores) > `0`"]}

    assert field_lines("done_when", None, done_when) == [
        "done_when.description: — → scored",
        "done_when.checks: + length(scores) > `0`",
    ]
    assert field_lines("done_when", done_when, None) == [
        "done_when.description: scored → —",
        "done_when.checks: − length(scores) > `0`",
    ]
    assert field_lines("done_when", None, {"description": "", "checks": []}) == [
        'done_when: — → {"checks": [], "description": ""}'
    ]


def test_keys_that_are_not_names_are_quoted():
    assert field_lines("args", {}, {"weird key": 1}) == ['args["weird key"]: — → 1']


def test_a_field_with_many_changes_counts_the_rest_on_its_last_line():
    lines = field_lines("args", {"xs": list(range(40))}, {"xs": [-n for n in range(1, 41)]})

    assert len(lines) == MOST_LINES
    assert lines[-1] == f"args: {40 - MOST_LINES + 1} more changes"


def test_the_api_diff_carries_the_lines_the_pages_show():
    data = diff_plans(OLD, NEW).to_data()

    assert data["changed_steps"][1]["changes"][0]["lines"] == ["depends_on: + fetch"]
    assert data["plan_changes"][2]["lines"] == ["budget.max_cost: — → 2.5"]
    assert FieldChange("goal", "a", "b").lines == ["goal: a → b"]


@given(json_values, json_values)
def test_every_change_has_at_least_one_line_and_each_line_names_its_field(before, after):
    lines = field_lines("args", before, after)

    if before == after:
        assert lines == []
    else:
        assert 1 <= len(lines) <= MOST_LINES
        assert all(line.startswith("args") for line in lines)


@given(st.lists(st.text(max_size=5), max_size=8), st.lists(st.text(max_size=5), max_size=8))
def test_a_list_change_lists_exactly_what_was_added_and_removed(before, after):
    lines = field_lines("xs", before, after)

    assert (lines == []) == (before == after)
