"""A shell step's disk quota: what it adds to its workspace plus everything in its own
temporary directory, measured by walking both trees.

The workspace is a host directory bind-mounted into the sandbox, so no mount option
can cap it (that would take filesystem quotas); the shell runner's watchdog measures
instead and kills the step once it is over. Only growth counts against the step: files
left by earlier steps are the baseline, and a step that deletes them may write that
much more, never more than baseline plus quota in all. A file counts for what it takes
on disk or claims, whichever is larger (``max(st_size, st_blocks * 512)``), hard links
once. The walk never follows a symlink and opens each directory relative to its parent
with ``O_NOFOLLOW``, so a command swapping a directory for a symlink cannot send the
worker (often root) across the host. A tree that cannot be measured (a directory the
worker may not read, nesting deeper than ``MAX_DEPTH``) counts as over the quota:
failing closed is the point.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from forge.runners.errors import DiskQuotaExceeded

__all__ = ["MAX_DEPTH", "DiskQuota"]

# Each level holds one open directory descriptor while the walk is below it.
MAX_DEPTH = 256
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class _Unmeasurable(Exception):
    pass


class DiskQuota:
    """Takes the workspace's baseline when made; ``exceeded`` then measures the step.

    Raises ``DiskQuotaExceeded`` when even the baseline cannot be measured.
    """

    def __init__(self, limit_bytes: int, workspace: Path, scratch: Path) -> None:
        self.limit_bytes = limit_bytes
        self.workspace = workspace
        self.scratch = scratch
        # Sticky: a step once seen over its quota stays over it, even if it then deletes
        # files before the kill lands.
        self.verdict: str | None = None
        try:
            self._baseline = _tree_bytes(workspace)
        except _Unmeasurable as exc:
            raise DiskQuotaExceeded(self._unmeasurable(str(exc))) from None

    def used(self) -> int:
        """Bytes the step added: workspace growth plus its temporary directory."""
        growth = _tree_bytes(self.workspace) - self._baseline
        return max(0, growth) + _tree_bytes(self.scratch)

    def exceeded(self) -> str | None:
        """Why the step is over its quota (now or at an earlier look), or ``None``."""
        if self.verdict is None:
            try:
                if self.used() > self.limit_bytes:
                    self.verdict = (
                        f"the step wrote more than its disk quota of {self.limit_bytes} bytes "
                        "(workspace and temporary directory together)"
                    )
            except _Unmeasurable as exc:
                self.verdict = self._unmeasurable(str(exc))
        return self.verdict

    def _unmeasurable(self, reason: str) -> str:
        return (
            f"the step's disk use cannot be measured ({reason}), so it counts as over its "
            f"disk quota of {self.limit_bytes} bytes"
        )


def _tree_bytes(root: Path) -> int:
    """What the entries under ``root`` take (``root`` itself not counted)."""
    walk = _Walk()
    try:
        top = os.open(root, _DIR_FLAGS)
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise _Unmeasurable(f"{root}: {exc.strerror}") from None
    # (directory fd, names of its subdirectories still to visit); depth-first, so only
    # the current path's directories are open at any time.
    stack: list[tuple[int, list[str]]] = [(top, [])]
    try:
        stack[-1] = (top, walk.scan(top))
        while stack:
            fd, pending = stack[-1]
            if not pending:
                stack.pop()
                os.close(fd)
                continue
            name = pending.pop()
            if len(stack) >= MAX_DEPTH:
                raise _Unmeasurable(f"directories nested deeper than {MAX_DEPTH} levels")
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except (FileNotFoundError, NotADirectoryError):
                continue  # removed or replaced by a file since it was listed
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    continue  # replaced by a symlink since it was listed: not followed
                raise _Unmeasurable(f"{name}: {exc.strerror}") from None
            stack.append((child, []))
            stack[-1] = (child, walk.scan(child))
    finally:
        for fd, _ in stack:
            os.close(fd)
    return walk.total


class _Walk:
    def __init__(self) -> None:
        self.total = 0
        self._linked: set[tuple[int, int]] = set()

    def scan(self, fd: int) -> list[str]:
        """Add up one directory's entries; the names of its subdirectories."""
        subdirectories = []
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    if stat.S_ISDIR(info.st_mode):
                        subdirectories.append(entry.name)
                    elif info.st_nlink > 1:
                        key = (info.st_dev, info.st_ino)
                        if key in self._linked:
                            continue
                        self._linked.add(key)
                    size = info.st_size if stat.S_ISREG(info.st_mode) else 0
                    self.total += max(size, info.st_blocks * 512)
        except OSError as exc:
            raise _Unmeasurable(f"a directory could not be listed: {exc.strerror}") from None
        return subdirectories
