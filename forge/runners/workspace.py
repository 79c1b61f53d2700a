"""A run's workspace: the only directory file tools may touch, and how they touch it.

Paths are relative to the workspace. ``resolve`` refuses anything that resolves
outside it (absolute paths, ``..`` past the root, symlinks pointing out). Reads and
writes then walk the resolved path one component at a time with ``O_NOFOLLOW``, so a
component swapped for a symlink between the check and the use (a shell step racing
a file step) is refused instead of followed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from forge.runners.errors import (
    FileTooLarge,
    NotAFile,
    PathOutsideWorkspace,
    RunnerError,
    WorkspaceFileMissing,
)

__all__ = ["Workspace"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class Workspace:
    root: Path

    def __post_init__(self) -> None:
        # Resolve once, so a workspace reached through a symlink (/tmp on macOS) still
        # contains the paths resolved inside it.
        try:
            root = Path(self.root).resolve(strict=True)
        except OSError as exc:
            raise RunnerError(
                f"the run's workspace {self.root} is unusable: {exc.strerror}",
                code="workspace_missing",
            ) from None
        object.__setattr__(self, "root", root)

    def resolve(self, relative: str) -> Path:
        """The real path of ``relative`` inside the workspace.

        Raises ``PathOutsideWorkspace`` for an absolute path or one resolving outside,
        ``RunnerError`` (``invalid_path``) for an empty path or one with a NUL byte.
        """
        if not relative or "\0" in relative:
            raise RunnerError(f"invalid path {relative!r}", code="invalid_path")
        if PurePosixPath(relative).is_absolute():
            raise PathOutsideWorkspace(
                f"{relative!r} is absolute; paths are relative to the run's workspace"
            )
        resolved = (self.root / relative).resolve()
        if resolved != self.root and self.root not in resolved.parents:
            raise PathOutsideWorkspace(f"{relative!r} resolves outside the run's workspace")
        return resolved

    def relative(self, relative: str) -> str:
        """The canonical workspace-relative spelling of ``relative`` (``a/../b`` -> ``b``)."""
        return self._parts(relative)[1].as_posix()

    def read_bytes(self, relative: str, *, limit: int) -> bytes:
        """The content of a regular file, refusing one over ``limit`` bytes."""
        parents, name = self._split(relative)
        dir_fd = self._open_dir(parents, create=False, relative=relative)
        try:
            try:
                # O_NONBLOCK: opening a FIFO planted in the workspace must not hang.
                fd = os.open(
                    name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd
                )
            except OSError as exc:
                raise self._translate(exc, relative) from None
        finally:
            os.close(dir_fd)
        with os.fdopen(fd, "rb") as file:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise NotAFile(f"{relative!r} is not a regular file")
            if info.st_size > limit:
                raise FileTooLarge(f"{relative!r} is {info.st_size} bytes, over the {limit} limit")
            data = file.read(limit + 1)  # the file may have grown since fstat
        if len(data) > limit:
            raise FileTooLarge(f"{relative!r} is over the {limit} byte limit")
        return data

    def read_existing(self, relative: str, *, limit: int) -> bytes | None:
        """Like ``read_bytes``, but ``None`` when the file does not exist yet."""
        try:
            return self.read_bytes(relative, limit=limit)
        except WorkspaceFileMissing:
            return None

    def write_atomic(self, relative: str, data: bytes) -> None:
        """Replace (or create) a file in one step: a temporary file, then ``os.replace``.

        Missing parent directories are created; an existing file keeps its mode.
        """
        parents, name = self._split(relative)
        dir_fd = self._open_dir(parents, create=True, relative=relative)
        temporary = f".{name}.{uuid.uuid4().hex}.forge-tmp"
        try:
            mode = 0o666  # the umask decides, as for any new file
            try:
                existing = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                pass
            else:
                if not stat.S_ISREG(existing.st_mode):
                    raise NotAFile(f"{relative!r} exists and is not a regular file")
                mode = stat.S_IMODE(existing.st_mode)
            fd = os.open(
                temporary,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                mode,
                dir_fd=dir_fd,
            )
            try:
                with os.fdopen(fd, "wb") as file:
                    file.write(data)
                    file.flush()
                    os.fsync(file.fileno())
                os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temporary, dir_fd=dir_fd)
                raise
            os.fsync(dir_fd)  # make the rename itself durable
        except OSError as exc:
            raise self._translate(exc, relative) from None
        finally:
            os.close(dir_fd)

    def _parts(self, relative: str) -> tuple[Path, PurePosixPath]:
        resolved = self.resolve(relative)
        return resolved, PurePosixPath(resolved.relative_to(self.root).as_posix())

    def _split(self, relative: str) -> tuple[tuple[str, ...], str]:
        parts = self._parts(relative)[1].parts
        if not parts:
            raise NotAFile(f"{relative!r} is the workspace itself, not a file")
        return parts[:-1], parts[-1]

    def _open_dir(self, parents: Sequence[str], *, create: bool, relative: str) -> int:
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            for part in parents:
                if create:
                    try:
                        os.mkdir(part, 0o777, dir_fd=fd)
                    except FileExistsError:
                        pass
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
        except OSError as exc:
            os.close(fd)
            raise self._translate(exc, relative) from None
        return fd

    @staticmethod
    def _translate(exc: OSError, relative: str) -> RunnerError:
        if exc.errno == errno.ENOENT:
            return WorkspaceFileMissing(f"{relative!r} does not exist in the workspace")
        if exc.errno == errno.ELOOP:
            # resolve() had already followed every symlink, so one here appeared since.
            return PathOutsideWorkspace(f"{relative!r} changed into a symlink while in use")
        if exc.errno in (errno.ENOTDIR, errno.EISDIR):
            return NotAFile(f"{relative!r}: {exc.strerror}")
        return RunnerError(f"{relative!r}: {exc.strerror}", code="io_error")
