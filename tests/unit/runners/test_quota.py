"""The disk quota's measure: what a step adds to its workspace plus its temporary
directory, without following symlinks, failing closed on a tree it cannot measure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from forge.runners import DiskQuotaExceeded
from forge.runners import quota as quota_module
from forge.runners.quota import DiskQuota

MIB = 1 << 20


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    path = tmp_path / "scratch"
    path.mkdir()
    return path


def test_only_what_the_step_adds_to_the_workspace_counts(workspace, scratch):
    (workspace / "earlier.bin").write_bytes(b"e" * 3 * MIB)
    quota = DiskQuota(2 * MIB, workspace, scratch)

    (workspace / "new.bin").write_bytes(b"n" * MIB)

    assert quota.used() == MIB
    assert quota.exceeded() is None


def test_the_workspace_and_the_temporary_directory_count_together(workspace, scratch):
    quota = DiskQuota(2 * MIB, workspace, scratch)

    (workspace / "a.bin").write_bytes(b"a" * MIB)
    (scratch / "b.bin").write_bytes(b"b" * (MIB + 1))

    assert quota.used() == 2 * MIB + 4096  # the second file's last, partly used block
    assert quota.exceeded() == (
        "the step wrote more than its disk quota of 2097152 bytes "
        "(workspace and temporary directory together)"
    )


def test_deleting_earlier_files_frees_room_but_never_more_than_they_held(workspace, scratch):
    (workspace / "earlier.bin").write_bytes(b"e" * 3 * MIB)
    quota = DiskQuota(MIB, workspace, scratch)

    (workspace / "earlier.bin").unlink()
    (workspace / "new.bin").write_bytes(b"n" * 4 * MIB)

    assert quota.used() == MIB
    assert quota.exceeded() is None
    (workspace / "more.bin").write_bytes(b"m")
    assert quota.exceeded() is not None


def test_a_sparse_file_counts_for_the_size_it_claims(workspace, scratch):
    quota = DiskQuota(MIB, workspace, scratch)

    with (workspace / "sparse").open("wb") as sparse:
        sparse.truncate(10 * MIB)

    assert quota.used() == 10 * MIB


def test_hard_links_count_once(workspace, scratch):
    quota = DiskQuota(10 * MIB, workspace, scratch)

    (workspace / "one.bin").write_bytes(b"x" * MIB)
    for n in range(5):
        os.link(workspace / "one.bin", workspace / f"link-{n}")

    assert quota.used() == MIB


def test_a_symlink_to_a_big_tree_elsewhere_is_not_followed(workspace, scratch, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "big.bin").write_bytes(b"b" * 4 * MIB)
    quota = DiskQuota(MIB, workspace, scratch)

    (workspace / "there").symlink_to(elsewhere)
    (scratch / "there").symlink_to(elsewhere)

    assert quota.used() <= 2 * 4096  # the links themselves, a block each at most
    assert quota.exceeded() is None


def test_a_tree_nested_too_deep_to_measure_counts_as_over_the_quota(
    workspace, scratch, monkeypatch
):
    monkeypatch.setattr(quota_module, "MAX_DEPTH", 8)
    quota = DiskQuota(MIB, workspace, scratch)

    (workspace / "/".join(["d"] * 10)).mkdir(parents=True)

    assert quota.exceeded() == (
        "the step's disk use cannot be measured (directories nested deeper than 8 levels), "
        "so it counts as over its disk quota of 1048576 bytes"
    )


def test_a_workspace_that_cannot_be_measured_refuses_the_step_before_it_runs(
    workspace, scratch, monkeypatch
):
    monkeypatch.setattr(quota_module, "MAX_DEPTH", 8)
    (workspace / "/".join(["d"] * 10)).mkdir(parents=True)

    with pytest.raises(DiskQuotaExceeded) as caught:
        DiskQuota(MIB, workspace, scratch)

    assert caught.value.code == "disk_quota_exceeded"


def test_once_over_the_quota_a_step_stays_over_it(workspace, scratch):
    quota = DiskQuota(MIB, workspace, scratch)
    (scratch / "big.bin").write_bytes(b"b" * 2 * MIB)
    verdict = quota.exceeded()

    (scratch / "big.bin").unlink()

    assert verdict is not None
    assert quota.exceeded() == verdict


def test_watch_walks_at_its_first_call_and_sees_the_step_over(workspace, scratch):
    quota = DiskQuota(MIB, workspace, scratch)

    (workspace / "big.bin").write_bytes(b"b" * 2 * MIB)

    assert quota.watch() is True
    assert quota.verdict is not None


def test_between_scheduled_walks_the_filesystem_s_growth_calls_for_one_at_once(
    workspace, scratch, monkeypatch
):
    monkeypatch.setattr(quota_module, "LOOK_SHARE", 1e-9)  # the next scheduled walk: never
    quota = DiskQuota(MIB, workspace, scratch)
    assert quota.watch() is False

    (scratch / "big.bin").write_bytes(b"b" * 2 * MIB)

    assert quota.watch() is True


def test_growth_the_filesystem_does_not_show_waits_for_the_scheduled_walk(
    workspace, scratch, monkeypatch
):
    monkeypatch.setattr(quota_module, "LOOK_SHARE", 1e-9)
    monkeypatch.setattr(quota_module, "_fs_used", lambda paths: 0)  # nothing else writes
    quota = DiskQuota(MIB, workspace, scratch)
    assert quota.watch() is False

    with (workspace / "sparse").open("wb") as sparse:  # claims 10 MiB, allocates nothing
        sparse.truncate(10 * MIB)

    assert quota.watch() is False
    assert quota.exceeded() is not None  # a walk does count it
