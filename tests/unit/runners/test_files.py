"""file_read, and file_write's two phases: a diff first, the commit once allowed."""

from __future__ import annotations

import pytest

from forge.runners import FileReadRunner, FileWriteRunner


def test_file_read_returns_the_path_and_the_content(spec, make_context, workspace):
    (workspace / "notes.md").write_text("# Notes\n")

    outcome = FileReadRunner().run(spec("file_read"), {"path": "./notes.md"}, make_context())

    assert outcome.ok
    assert outcome.output == {"path": "notes.md", "content": "# Notes\n"}
    assert outcome.isolation == "workspace"


@pytest.mark.parametrize("path", ["../secret.txt", "/etc/hostname"])
def test_file_read_refuses_a_path_outside_the_workspace(spec, make_context, path):
    outcome = FileReadRunner().run(spec("file_read"), {"path": path}, make_context())

    assert not outcome.ok
    assert outcome.error_code == "path_outside_workspace"


def test_file_read_reports_a_file_that_is_not_text_with_its_offset(spec, make_context, workspace):
    (workspace / "image.bin").write_bytes(b"GIF89a\xff\x00")

    outcome = FileReadRunner().run(spec("file_read"), {"path": "image.bin"}, make_context())

    assert outcome.error_code == "not_text"
    assert outcome.error == "'image.bin' is not UTF-8 text: byte 0xff at offset 6"


def test_file_read_refuses_a_file_over_its_size_cap(spec, make_context, workspace):
    (workspace / "big.txt").write_text("x" * 101)

    outcome = FileReadRunner(max_bytes=100).run(
        spec("file_read"), {"path": "big.txt"}, make_context()
    )

    assert outcome.error_code == "file_too_large"


def test_file_read_of_a_missing_file_fails_clearly(spec, make_context):
    outcome = FileReadRunner().run(spec("file_read"), {"path": "nope.txt"}, make_context())

    assert outcome.error_code == "file_not_found"
    assert outcome.error == "'nope.txt' does not exist in the workspace"


def test_file_write_waiting_for_approval_records_the_diff_and_changes_nothing(
    spec, make_context, workspace
):
    (workspace / "config.ini").write_text("debug = false\n")
    context = make_context(approval_required=True)

    outcome = FileWriteRunner().run(
        spec("file_write"), {"path": "config.ini", "content": "debug = true\n"}, context
    )

    assert outcome.ok and outcome.pending_commit
    assert outcome.output["committed"] is False
    assert outcome.output["diff"] == (
        "--- a/config.ini\n+++ b/config.ini\n@@ -1 +1 @@\n-debug = false\n+debug = true\n"
    )
    assert outcome.artifacts[0].name == "diff"
    assert outcome.artifacts[0].text == outcome.output["diff"]
    assert (workspace / "config.ini").read_text() == "debug = false\n"


def test_file_write_commits_once_the_approval_was_checked(spec, make_context, workspace):
    (workspace / "config.ini").write_text("debug = false\n")
    context = make_context(approval_required=True, approved=True)

    outcome = FileWriteRunner().run(
        spec("file_write"), {"path": "config.ini", "content": "debug = true\n"}, context
    )

    assert outcome.ok and not outcome.pending_commit
    assert outcome.output["committed"] is True
    assert (workspace / "config.ini").read_text() == "debug = true\n"


def test_file_write_commits_at_once_when_no_approval_is_required(spec, make_context, workspace):
    outcome = FileWriteRunner().run(
        spec("file_write"), {"path": "out/report.txt", "content": "done"}, make_context()
    )

    assert outcome.output == {
        "path": "out/report.txt",
        "diff": "--- /dev/null\n+++ b/out/report.txt\n@@ -0,0 +1 @@\n"
        "+done\n\\ No newline at end of file\n",
        "committed": True,
    }
    assert (workspace / "out" / "report.txt").read_text() == "done"


def test_file_write_preview_changes_nothing(make_context, workspace):
    preview = FileWriteRunner().prepare({"path": "new.txt", "content": "x\n"}, make_context())

    assert preview.changed
    assert preview.diff.startswith("--- /dev/null\n+++ b/new.txt\n")
    assert not (workspace / "new.txt").exists()


def test_file_write_of_identical_content_commits_an_empty_diff(spec, make_context, workspace):
    (workspace / "same.txt").write_text("same\n")

    outcome = FileWriteRunner().run(
        spec("file_write"), {"path": "same.txt", "content": "same\n"}, make_context()
    )

    assert outcome.output == {"path": "same.txt", "diff": "", "committed": True}


def test_file_write_through_a_symlink_out_of_the_workspace_is_refused(
    spec, make_context, workspace, tmp_path
):
    target = tmp_path / "outside.txt"
    target.write_text("untouched")
    (workspace / "link.txt").symlink_to(target)

    outcome = FileWriteRunner().run(
        spec("file_write"), {"path": "link.txt", "content": "pwned"}, make_context()
    )

    assert outcome.error_code == "path_outside_workspace"
    assert target.read_text() == "untouched"


def test_a_missing_workspace_is_a_failed_outcome_not_a_crash(spec, make_context, tmp_path):
    context = make_context(workspace=tmp_path / "never-created")

    outcome = FileReadRunner().run(spec("file_read"), {"path": "a.txt"}, context)

    assert outcome.error_code == "workspace_missing"
