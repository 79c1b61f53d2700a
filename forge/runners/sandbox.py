"""How a shell command is confined: bubblewrap when it works, resource limits always.

With ``bwrap`` the command gets its own mount, pid, network, ipc and uts namespaces,
sees only read-only system directories, a private ``/tmp`` and the workspace at
``/workspace``, and dies with its parent. Either way it runs under rlimits (CPU,
address space, processes, file size, open files, no core dumps) and as an
unprivileged user: the kernel never enforces ``RLIMIT_NPROC`` for uid 0, not even for
uid 0 mapped inside a user namespace, so a worker running as root drops the command
to ``nobody`` (65534) and hands it the workspace. Inside bubblewrap that drop is done
by ``setpriv`` after the mounts are made, so the workspace need not be reachable by
``nobody`` on the host; the environment is then rebuilt by ``env -i`` so nothing
reaches the privileged helpers.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from forge.runners.base import Isolation
from forge.runners.errors import RunnerError, SandboxUnavailable

__all__ = ["NOBODY", "Launch", "Limits", "Sandbox", "SandboxMode"]

NOBODY = 65534
SandboxMode = Literal["auto", "bubblewrap", "rlimits-only"]

_SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
_ROOT_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
# Only what programs need to start and name users; never shadow, ssh or ssl keys.
_ETC_ENTRIES = (
    "alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime",
    "timezone", "passwd", "group", "nsswitch.conf", "mime.types", "python3*",
)  # fmt: skip


@dataclass(frozen=True)
class Limits:
    """Per-command resource limits. ``processes`` is how many processes the command may
    add to its user's count (RLIMIT_NPROC counts every process of the uid)."""

    cpu_s: int = 60
    address_space_bytes: int = 2 << 30
    processes: int = 64
    file_size_bytes: int = 256 << 20
    open_files: int = 256


@dataclass(frozen=True)
class Launch:
    """A ready-to-spawn command: what ``subprocess.Popen`` needs, nothing more."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path
    user: int | None
    group: int | None
    preexec: Callable[[], None]


class Sandbox:
    """Chooses the isolation once, then turns argv into a confined ``Launch``.

    ``mode="auto"`` uses bubblewrap when ``bwrap`` is on PATH and passes a probe, else
    rlimits only (``notes`` says why); ``"bubblewrap"`` raises ``SandboxUnavailable``
    instead of falling back.
    """

    def __init__(
        self,
        mode: SandboxMode = "auto",
        *,
        limits: Limits | None = None,
        uid: int = NOBODY,
        gid: int = NOBODY,
    ) -> None:
        self.limits = limits or Limits()
        # Dropping privileges is only needed, and only possible, when we are root.
        self.identity = (uid, gid) if os.geteuid() == 0 else None
        self.notes: tuple[str, ...] = ()
        self._bwrap: str | None = None
        self._setpriv = shutil.which("setpriv", path="/usr/bin:/bin")
        self._env = shutil.which("env", path="/usr/bin:/bin") or "/usr/bin/env"
        if mode != "rlimits-only":
            reason = self._enable_bubblewrap()
            if reason:
                if mode == "bubblewrap":
                    raise SandboxUnavailable(reason)
                self.notes = (f"{reason}; running with rlimits only",)

    @property
    def isolation(self) -> Isolation:
        return "bubblewrap" if self._bwrap else "rlimits-only"

    def launch(self, argv: Sequence[str], env: Mapping[str, str], workspace: Path) -> Launch:
        """The confined form of ``argv``; ``env`` is complete except for HOME.

        Raises ``RunnerError`` (``io_error``) when a root worker cannot hand the
        workspace over to the sandbox user.
        """
        if self.identity:
            try:
                _hand_over(workspace, *self.identity)
            except OSError as exc:
                raise RunnerError(
                    f"cannot hand the workspace to the sandbox user: {exc}", code="io_error"
                ) from None
        nproc = _process_count(self.identity[0] if self.identity else os.getuid())
        preexec = _rlimit_setter(self.limits, nproc + self.limits.processes)
        if self._bwrap:
            inner = {**env, "HOME": "/workspace", "TMPDIR": "/tmp"}
            return Launch(
                argv=(*self._bwrap_prefix(workspace), *self._inner_prefix(inner), *argv),
                env={"PATH": _SANDBOX_PATH},
                cwd=workspace,
                user=None,
                group=None,
                preexec=preexec,
            )
        user, group = self.identity or (None, None)
        return Launch(
            argv=tuple(argv),
            env={**env, "HOME": str(workspace)},
            cwd=workspace,
            user=user,
            group=group,
            preexec=preexec,
        )

    def _bwrap_prefix(self, workspace: Path) -> list[str]:
        assert self._bwrap
        args = [self._bwrap, "--die-with-parent", "--unshare-ipc", "--unshare-pid"]
        args += ["--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        if self.identity:
            # bwrap keeps root's capabilities when run as root; keep only what setpriv
            # needs to switch to the sandbox user and to empty the bounding set.
            args += ["--cap-drop", "ALL"]
            for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"):
                args += ["--cap-add", cap]
        else:
            args += ["--unshare-user"]
        args += ["--ro-bind", "/usr", "/usr"]
        for name in _ROOT_LINKS:
            path = Path("/", name)
            if path.is_symlink():
                args += ["--symlink", str(path.readlink()), str(path)]
            elif path.is_dir():
                args += ["--ro-bind", str(path), str(path)]
        for pattern in _ETC_ENTRIES:
            for entry in sorted(Path("/etc").glob(pattern)):
                args += ["--ro-bind", str(entry), str(entry)]
        args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp"]
        # No --chdir: bwrap has already dropped its capabilities then, and root without
        # them may not enter a workspace that now belongs to the sandbox user.
        args += ["--bind", str(workspace), "/workspace", "--"]
        return args

    def _inner_prefix(self, env: Mapping[str, str]) -> list[str]:
        args = []
        if self.identity:
            assert self._setpriv
            uid, gid = self.identity
            args += [self._setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]
            args += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
        assignments = (f"{name}={value}" for name, value in env.items())
        return [*args, self._env, "-i", "--chdir=/workspace", *assignments]

    def _enable_bubblewrap(self) -> str:
        """Turn bubblewrap on; the reason it cannot be, or ``""``."""
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            return "bubblewrap is missing (install the 'bubblewrap' package)"
        if self.identity and self._setpriv is None:
            return "setpriv (util-linux) is missing, so the sandbox could not drop root"
        self._bwrap = bwrap
        with tempfile.TemporaryDirectory(prefix="forge-bwrap-probe-") as probe:
            launch = self.launch(["true"], {"PATH": _SANDBOX_PATH}, Path(probe))
            try:
                result = subprocess.run(
                    launch.argv, env=launch.env, cwd=launch.cwd, capture_output=True,
                    timeout=10, check=False,
                )  # fmt: skip
            except (OSError, subprocess.TimeoutExpired) as exc:
                self._bwrap = None
                return f"bubblewrap failed its probe: {exc}"
        if result.returncode != 0:
            self._bwrap = None
            message = result.stderr.decode(errors="replace").strip()
            return f"bubblewrap failed its probe: {message or result.returncode}"
        return ""


def _rlimit_setter(limits: Limits, nproc: int) -> Callable[[], None]:
    values = (
        (resource.RLIMIT_CPU, limits.cpu_s),
        (resource.RLIMIT_AS, limits.address_space_bytes),
        (resource.RLIMIT_NPROC, nproc),
        (resource.RLIMIT_FSIZE, limits.file_size_bytes),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_CORE, 0),
    )

    # Runs in the child between fork and exec (after Popen switched uid), so it only
    # calls setrlimit: no locks, no allocation worth the name.
    def set_limits() -> None:
        for which, value in values:
            resource.setrlimit(which, (value, value))

    return set_limits


def _process_count(uid: int) -> int:
    """How many processes ``uid`` has now (RLIMIT_NPROC counts them all)."""
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_uid == uid:
                    count += 1
    return count


def _hand_over(workspace: Path, uid: int, gid: int) -> None:
    """Give the workspace tree to the sandbox user so it can write there.

    ``fwalk`` with ``dir_fd`` and no symlink following keeps a planted symlink from
    redirecting the chown outside; a multiply linked file could be a hard link to a
    file elsewhere, so it keeps its owner.
    """
    os.chown(workspace, uid, gid)
    for _, dirnames, filenames, dir_fd in os.fwalk(workspace):
        for name in (*dirnames, *filenames):
            with contextlib.suppress(FileNotFoundError):
                info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                if (info.st_uid, info.st_gid) == (uid, gid):
                    continue
                if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
                    continue
                os.chown(name, uid, gid, dir_fd=dir_fd, follow_symlinks=False)
