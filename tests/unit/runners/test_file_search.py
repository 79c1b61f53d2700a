"""file_search: a bounded regular expression over the workspace's text files."""

from __future__ import annotations

import time

from forge.runners import FileSearchRunner


def search(spec, context, **args):
    return FileSearchRunner().run(spec("file_search"), args, context)


def test_it_returns_each_matching_line_with_its_path_and_number(spec, make_context, workspace):
    (workspace / "contracts").mkdir()
    (workspace / "contracts" / "acme.md").write_text("# ACME\npenalty: 5%\nterm: 2y\n")
    (workspace / "contracts" / "northwind.md").write_text("penalty: none\n")
    (workspace / "notes.txt").write_text("no match here\n")

    outcome = search(spec, make_context(), pattern=r"^penalty")

    assert outcome.ok, outcome.error
    assert outcome.output == {
        "matches": [
            {"path": "contracts/acme.md", "line": 2, "text": "penalty: 5%"},
            {"path": "contracts/northwind.md", "line": 1, "text": "penalty: none"},
        ],
        "truncated": False,
    }
    assert outcome.isolation == "workspace"


def test_it_searches_under_the_given_path_only(spec, make_context, workspace):
    (workspace / "a").mkdir()
    (workspace / "b").mkdir()
    (workspace / "a" / "x.txt").write_text("risk\n")
    (workspace / "b" / "y.txt").write_text("risk\n")

    outcome = search(spec, make_context(), pattern="risk", path="b")

    assert [m["path"] for m in outcome.output["matches"]] == ["b/y.txt"]


def test_it_stops_at_max_results_and_says_so(spec, make_context, workspace):
    (workspace / "many.txt").write_text("hit\n" * 10)

    outcome = search(spec, make_context(), pattern="hit", max_results=3)

    assert len(outcome.output["matches"]) == 3
    assert outcome.output["truncated"] is True


def test_it_skips_binary_files_and_never_follows_symlinks(spec, make_context, workspace, tmp_path):
    (tmp_path / "outside.txt").write_text("secret\n")
    (workspace / "link.txt").symlink_to(tmp_path / "outside.txt")
    (workspace / "linked-dir").symlink_to(tmp_path)
    (workspace / "blob.bin").write_bytes(b"secret\0\xff")

    outcome = search(spec, make_context(), pattern="secret")

    assert outcome.ok
    assert outcome.output["matches"] == []


def test_a_path_outside_the_workspace_is_refused(spec, make_context):
    outcome = search(spec, make_context(), pattern="x", path="../")

    assert outcome.error_code == "path_outside_workspace"


def test_an_invalid_regular_expression_is_refused_as_invalid_arguments(spec, make_context):
    outcome = search(spec, make_context(), pattern="(unclosed")

    assert outcome.error_code == "invalid_args"
    assert outcome.error.startswith("invalid regular expression '(unclosed'")


def test_a_catastrophic_pattern_is_stopped_at_the_deadline(spec, make_context, workspace):
    (workspace / "evil.txt").write_text("a" * 40 + "!\n")
    started = time.monotonic()

    outcome = search(spec, make_context(timeout_s=0.5), pattern=r"^(a+)+$")

    assert outcome.error_code == "timeout"
    assert time.monotonic() - started < 3


def test_the_total_read_is_capped_and_the_output_says_it_is_incomplete(
    spec, make_context, workspace
):
    for name in "abc":
        (workspace / f"{name}.txt").write_text("needle\n" + "x" * 100)
    runner = FileSearchRunner(max_total_bytes=250)

    outcome = runner.run(spec("file_search"), {"pattern": "needle"}, make_context())

    assert [m["path"] for m in outcome.output["matches"]] == ["a.txt", "b.txt"]
    assert outcome.output["truncated"] is True
    assert outcome.notes == ("the search stopped at a size or file cap",)


def test_lines_are_numbered_as_an_editor_numbers_them(spec, make_context, workspace):
    (workspace / "windows.txt").write_bytes(b"one\r\ntwo\x0cstill two\r\nthree\n")

    outcome = search(spec, make_context(), pattern="three|still")

    assert outcome.output["matches"] == [
        {"path": "windows.txt", "line": 2, "text": "two\x0cstill two"},
        {"path": "windows.txt", "line": 3, "text": "three"},
    ]
