"""No file of the repository holds a merge's conflict markers: two were committed in
docs once, and nothing else would have noticed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(rb"^(<<<<<<< |>>>>>>> )", re.MULTILINE)


def _tracked() -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=30
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: nothing to list the repository's files with")
    return [ROOT / name for name in listed.decode().split("\0") if name]


def test_no_tracked_file_holds_conflict_markers():
    marked = [
        str(path.relative_to(ROOT))
        for path in _tracked()
        if path.suffix not in {".png", ".ico", ".woff2"}
        and path.is_file()
        and MARKER.search(path.read_bytes())
    ]
    assert marked == []
