"""A shell step's disk quota: what it adds to its workspace plus everything in its own
temporary directory, measured by walking both trees.

The workspace is a host directory bind-mounted into the sandbox, so no mount option
can cap it (that would take filesystem quotas); the shell runner's watchdog asks
``watch`` every few tens of milliseconds instead and kills the step once it is over. A
walk costs a ``stat`` per file, so ``watch`` walks when one is due (spaced so that
walking takes at most ``LOOK_SHARE`` of the time: every time for a small workspace,
seconds apart for one of a hundred thousand files) or at once when the filesystems'
used space (one ``statvfs``) grew by more than the room left since the last walk.

Only growth counts against the step: files left by earlier steps are the baseline, and
a step that deletes them may write that much more, never more than baseline plus quota
in all. A file counts for what it takes on disk or claims, whichever is larger
(``max(st_size, st_blocks * 512)``), hard links once. The walk never follows a symlink
and opens each directory relative to its parent with ``O_NOFOLLOW``, so a command
swapping a directory for a symlink cannot send the worker (often root) across the
host. A tree that cannot be measured (a directory the worker may not read, nesting
deeper than ``MAX_DEPTH``) counts as over the quota: failing closed is the point.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path

from forge.runners.errors import DiskQuotaExceeded

__all__ = ["LOOK_SHARE", "MAX_DEPTH", "DiskQuota"]

# Each level holds one open directory descriptor while the walk is below it.
MAX_DEPTH = 256
# The share of the time scheduled walks may take; a walk the filesystems' growth calls
# for may take up to half.
LOOK_SHARE = 0.2
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class _Unmeasurable(Exception):
    pass


class DiskQuota:
    """Takes the workspace's baseline when made; ``exceeded`` then measures the step,
    ``watch`` does when it is due.

    Raises ``DiskQuotaExceeded`` when even the baseline cannot be measured.
    """

    def __init__(self, limit_bytes: int, workspace: Path, scratch: Path) -> None:
        self.limit_bytes = limit_bytes
        self.workspace = workspace
        self.scratch = scratch
        # Sticky: a step once seen over its quota stays over it, even if it then deletes
        # files before the kill lands.
        self.verdict: str | None = None
        self._filesystems = _filesystems(workspace, scratch)
        self._used = 0
        self._walk_s = 0.0
        self._walked_at = self._next_walk = 0.0
        self._fs_used_at_walk = _fs_used(self._filesystems)
        try:
            self._baseline = _tree_bytes(workspace)
        except _Unmeasurable as exc:
            raise DiskQuotaExceeded(self._unmeasurable(str(exc))) from None

    def watch(self) -> bool:
        """For a watchdog asking often: True once the step is over its quota.

        The filesystems' used space grows by at least what the step writes, unless
        something else frees space on them at the same time; then only the scheduled
        walks catch the step.
        """
        now = time.monotonic()
        if self.verdict is None and now < self._next_walk:
            grown = _fs_used(self._filesystems) - self._fs_used_at_walk
            if grown <= self.limit_bytes - self._used or now < self._walked_at + self._walk_s:
                return False
        return self.exceeded() is not None

    def used(self) -> int:
        """Bytes the step added: workspace growth plus its temporary directory."""
        growth = _tree_bytes(self.workspace) - self._baseline
        return max(0, growth) + _tree_bytes(self.scratch)

    def exceeded(self) -> str | None:
        """Why the step is over its quota (now or at an earlier look), or ``None``."""
        if self.verdict is None:
            # Read before the walk: what is written during it counts as growth next time.
            fs_used, started = _fs_used(self._filesystems), time.monotonic()
            try:
                self._used = self.used()
            except _Unmeasurable as exc:
                self.verdict = self._unmeasurable(str(exc))
                return self.verdict
            self._walked_at = time.monotonic()
            self._walk_s = self._walked_at - started
            self._next_walk = self._walked_at + self._walk_s * (1 / LOOK_SHARE - 1)
            self._fs_used_at_walk = fs_used
            if self._used > self.limit_bytes:
                self.verdict = (
                    f"the step wrote more than its disk quota of {self.limit_bytes} bytes "
                    "(workspace and temporary directory together)"
                )
        return self.verdict

    def _unmeasurable(self, reason: str) -> str:
        return (
            f"the step's disk use cannot be measured ({reason}), so it counts as over its "
            f"disk quota of {self.limit_bytes} bytes"
        )


def _filesystems(*paths: Path) -> list[Path]:
    """One path per filesystem (device) among ``paths``."""
    by_device: dict[int, Path] = {}
    for path in paths:
        try:
            by_device.setdefault(path.stat().st_dev, path)
        except OSError:
            continue  # the walk will say what is wrong with it
    return list(by_device.values())


def _fs_used(paths: list[Path]) -> int:
    """Bytes in use on the filesystems of ``paths``; 0 when one cannot be asked, which
    leaves only the scheduled walks."""
    used = 0
    for path in paths:
        try:
            info = os.statvfs(path)
        except OSError:
            return 0
        used += (info.f_blocks - info.f_bfree) * info.f_frsize
    return used


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
