"""Path confinement: nothing a file tool is given may resolve outside the workspace."""

from __future__ import annotations

import os

import pytest

from forge.runners import NotAFile, PathOutsideWorkspace, Workspace, WorkspaceFileMissing
from forge.runners.errors import RunnerError


def test_a_relative_path_resolves_inside_the_workspace(workspace):
    assert Workspace(workspace).resolve("notes/today.md") == workspace / "notes" / "today.md"


def test_dot_dot_that_stays_inside_is_allowed_and_normalised(workspace):
    assert Workspace(workspace).relative("notes/../today.md") == "today.md"


@pytest.mark.parametrize("path", ["../escape.txt", "a/../../escape.txt", "/etc/passwd"])
def test_a_path_leaving_the_workspace_is_refused(workspace, path):
    with pytest.raises(PathOutsideWorkspace) as caught:
        Workspace(workspace).resolve(path)

    assert caught.value.code == "path_outside_workspace"


def test_a_symlink_pointing_out_of_the_workspace_is_refused(workspace, tmp_path):
    (tmp_path / "outside.txt").write_text("secret")
    (workspace / "link.txt").symlink_to(tmp_path / "outside.txt")

    with pytest.raises(PathOutsideWorkspace):
        Workspace(workspace).read_bytes("link.txt", limit=100)


def test_a_symlinked_directory_pointing_out_is_refused_for_writes(workspace, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (workspace / "dir").symlink_to(tmp_path / "elsewhere")

    with pytest.raises(PathOutsideWorkspace):
        Workspace(workspace).write_atomic("dir/planted.txt", b"x")

    assert not (tmp_path / "elsewhere" / "planted.txt").exists()


def test_a_symlink_staying_inside_the_workspace_is_followed(workspace):
    (workspace / "real.txt").write_text("inside")
    (workspace / "alias.txt").symlink_to("real.txt")

    assert Workspace(workspace).read_bytes("alias.txt", limit=100) == b"inside"


def test_an_empty_path_is_refused(workspace):
    with pytest.raises(RunnerError) as caught:
        Workspace(workspace).resolve("")

    assert caught.value.code == "invalid_path"


def test_a_missing_file_is_reported_as_missing(workspace):
    with pytest.raises(WorkspaceFileMissing):
        Workspace(workspace).read_bytes("nothing/here.txt", limit=100)


def test_a_fifo_is_refused_without_blocking(workspace):
    os.mkfifo(workspace / "pipe")

    with pytest.raises(NotAFile):
        Workspace(workspace).read_bytes("pipe", limit=100)


def test_an_atomic_write_creates_parents_and_leaves_no_temporary_file(workspace):
    Workspace(workspace).write_atomic("a/b/c.txt", b"hello")

    assert (workspace / "a" / "b" / "c.txt").read_bytes() == b"hello"
    assert [path.name for path in (workspace / "a" / "b").iterdir()] == ["c.txt"]


def test_an_atomic_write_keeps_the_mode_of_the_file_it_replaces(workspace):
    script = workspace / "run.sh"
    script.write_text("old")
    script.chmod(0o750)

    Workspace(workspace).write_atomic("run.sh", b"new")

    assert script.read_text() == "new"
    assert script.stat().st_mode & 0o777 == 0o750
