"""The vendored front-end libraries are the files their README pins: every file the pages
load has the SHA-256 written in static/vendor/README.md (the ``yaml`` package's modules
through yaml/SHA256SUMS, whose own sum is in the README), so a changed or truncated copy
fails here and not in a user's browser."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

VENDOR = Path(__file__).resolve().parents[2] / "static" / "vendor"
SUM_LINE = re.compile(r"^([0-9a-f]{64})  (\S+)$")


def _sums(text: str) -> dict[str, str]:
    return {m[2]: m[1] for line in text.splitlines() if (m := SUM_LINE.match(line.strip()))}


def _actual(root: Path, names: dict[str, str]) -> dict[str, str]:
    return {
        name: hashlib.sha256((root / name).read_bytes()).hexdigest()
        if (root / name).is_file()
        else "missing"
        for name in names
    }


def test_the_readme_pins_every_file_the_pages_load_to_its_sha256():
    pinned = _sums((VENDOR / "README.md").read_text())

    assert "cytoscape/cytoscape.esm.min.mjs" in pinned and "yaml/SHA256SUMS" in pinned
    assert _actual(VENDOR, pinned) == pinned


def test_each_module_of_the_yaml_package_matches_its_sum():
    pinned = _sums((VENDOR / "yaml" / "SHA256SUMS").read_text())

    assert len(pinned) >= 70  # the README says 74 modules; an empty list checks nothing
    assert _actual(VENDOR / "yaml", pinned) == pinned


def test_a_changed_byte_is_seen(tmp_path: Path):
    (tmp_path / "lib.js").write_text("export const a = 1;\n")
    pinned = {"lib.js": hashlib.sha256(b"export const a = 1;\n").hexdigest()}
    assert _actual(tmp_path, pinned) == pinned

    (tmp_path / "lib.js").write_text("export const a = 2;\n")
    assert _actual(tmp_path, pinned) != pinned
