"""How a shell command is confined: bubblewrap and resource limits, or, by explicit
choice, resource limits alone.

Mode ``"bwrap"`` (the default) gives the command its own mount, pid, network, ipc and
uts namespaces: it sees only read-only system directories, the workspace at
``/workspace`` and, at ``/tmp``, the step's own temporary directory (a directory on
disk, so the disk quota can measure it; ``TMPDIR`` names it in both modes), and it dies
with its parent. Without a working ``bwrap`` it
fails closed: ``launch`` raises ``SandboxUnavailable`` saying why and how to fix it, and
nothing runs. Mode ``"rlimits"`` is the deployment's explicit opt-in to less, and every
outcome says so. Either way the command runs under rlimits (CPU, address space,
processes, file size, open files, no core dumps) and as an unprivileged user: the kernel
never enforces ``RLIMIT_NPROC`` for uid 0, not even for uid 0 mapped inside a user
namespace, so a worker running as root drops the command to ``nobody`` (65534) and hands
it the workspace. Inside bubblewrap that drop is done by ``setpriv`` after the mounts
are made, so the workspace need not be reachable by ``nobody`` on the host; the
environment is then rebuilt by ``env -i`` so nothing reaches the privileged helpers.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from forge.runners.base import Isolation
from forge.runners.errors import RunnerError, SandboxUnavailable
from forge.runners.modes import SANDBOX_MODES, SandboxMode

__all__ = ["NOBODY", "SANDBOX_MODES", "Launch", "Limits", "Sandbox", "SandboxMode"]

NOBODY = 65534

# The worker and the CLI show this as is: it names the cause and both ways out.
_UNAVAILABLE = (
    "shell steps cannot run: {reason}. Install bubblewrap (the 'bubblewrap' package), or "
    "accept weaker isolation with FORGE_SANDBOX=rlimits (forge run --sandbox rlimits): "
    "resource limits only, with the host's files, network and processes in reach."
)
_RLIMITS_NOTE = (
    "sandbox mode rlimits (an explicit opt-in): resource limits and an unprivileged user "
    "only; no bubblewrap, so the command could read the host's files and reach the network"
)

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
    add to its user's count (RLIMIT_NPROC counts every process of the uid).
    ``disk_bytes`` is what it may add to its workspace and temporary directory together
    (``forge.runners.quota``, enforced by the shell runner); no single file may grow
    more than one byte past it either."""

    cpu_s: int = 60
    address_space_bytes: int = 2 << 30
    processes: int = 64
    file_size_bytes: int = 256 << 20
    open_files: int = 256
    disk_bytes: int = 1 << 30

    def __post_init__(self) -> None:
        if self.disk_bytes < 1:
            raise ValueError(f"disk_bytes must be positive, got {self.disk_bytes}")


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
    """Turns argv into a confined ``Launch`` in the deployment's ``mode``.

    In ``"bwrap"`` mode bubblewrap is looked up and probed at the first ``launch`` (or
    ``problem``), not here, so building the runners never fails and never spawns
    anything; a success is kept, a failure is probed again next time, so installing
    bubblewrap needs no restart.
    """

    def __init__(
        self,
        mode: SandboxMode = "bwrap",
        *,
        limits: Limits | None = None,
        uid: int = NOBODY,
        gid: int = NOBODY,
    ) -> None:
        if mode not in SANDBOX_MODES:
            raise ValueError(f"sandbox mode must be one of {', '.join(SANDBOX_MODES)}: {mode!r}")
        self.mode: SandboxMode = mode
        self.limits = limits or Limits()
        # Dropping privileges is only needed, and only possible, when we are root.
        self.identity = (uid, gid) if os.geteuid() == 0 else None
        self._bwrap: str | None = None
        self._lock = threading.Lock()
        self._setpriv = shutil.which("setpriv", path="/usr/bin:/bin")
        self._env = shutil.which("env", path="/usr/bin:/bin") or "/usr/bin/env"

    @property
    def isolation(self) -> Isolation:
        """What confines a command that ``launch`` returns."""
        return "bubblewrap" if self.mode == "bwrap" else "rlimits-only"

    @property
    def notes(self) -> tuple[str, ...]:
        """What every outcome should say about its isolation."""
        return (_RLIMITS_NOTE,) if self.mode == "rlimits" else ()

    def problem(self) -> str | None:
        """Why this sandbox cannot run commands now, or ``None`` when it can."""
        if self.mode == "rlimits":
            return None
        with self._lock:
            if self._bwrap is None:
                bwrap, reason = self._find_bubblewrap()
                if reason:
                    return reason
                self._bwrap = bwrap
        return None

    def launch(
        self, argv: Sequence[str], env: Mapping[str, str], workspace: Path, scratch: Path
    ) -> Launch:
        """The confined form of ``argv``; ``env`` is complete except for HOME and TMPDIR.
        ``scratch`` is the step's own, empty temporary directory.

        Raises ``SandboxUnavailable`` in ``"bwrap"`` mode when bubblewrap is missing or
        broken, and ``RunnerError`` (``io_error``) when a root worker cannot hand the
        workspace over to the sandbox user.
        """
        if reason := self.problem():
            raise SandboxUnavailable(_UNAVAILABLE.format(reason=reason))
        return self._launch(self._bwrap, argv, env, workspace, scratch)

    def _launch(
        self,
        bwrap: str | None,
        argv: Sequence[str],
        env: Mapping[str, str],
        workspace: Path,
        scratch: Path,
    ) -> Launch:
        if self.identity:
            try:
                _hand_over(workspace, *self.identity)
                _hand_over(scratch, *self.identity)
            except OSError as exc:
                raise RunnerError(
                    f"cannot hand the workspace to the sandbox user: {exc}", code="io_error"
                ) from None
        nproc = _process_count(self.identity[0] if self.identity else os.getuid())
        preexec = _rlimit_setter(self.limits, nproc + self.limits.processes)
        if bwrap:
            inner = {**env, "HOME": "/workspace", "TMPDIR": "/tmp"}
            prefix = self._bwrap_prefix(bwrap, workspace, scratch)
            return Launch(
                argv=(*prefix, *self._inner_prefix(inner), *argv),
                env={"PATH": _SANDBOX_PATH},
                cwd=workspace,
                user=None,
                group=None,
                preexec=preexec,
            )
        user, group = self.identity or (None, None)
        return Launch(
            argv=tuple(argv),
            env={**env, "HOME": str(workspace), "TMPDIR": str(scratch)},
            cwd=workspace,
            user=user,
            group=group,
            preexec=preexec,
        )

    def _bwrap_prefix(self, bwrap: str, workspace: Path, scratch: Path) -> list[str]:
        args = [bwrap, "--die-with-parent", "--unshare-ipc", "--unshare-pid"]
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
        # bwrap makes the parents of bind targets 0700: /etc must be searchable by the
        # sandbox user, or /etc/passwd and the loader's cache are out of its reach.
        args += ["--perms", "0755", "--dir", "/etc"]
        for pattern in _ETC_ENTRIES:
            for entry in sorted(Path("/etc").glob(pattern)):
                args += ["--ro-bind", str(entry), str(entry)]
        # /tmp is the step's directory on disk, not a tmpfs: a tmpfs is RAM the quota
        # could not see, and the runner deletes the directory after the step.
        args += ["--proc", "/proc", "--dev", "/dev", "--bind", str(scratch), "/tmp"]
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

    def _find_bubblewrap(self) -> tuple[str, str]:
        """``bwrap``'s path once it ran ``true`` confined, or ``""`` and the reason."""
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            return "", "bubblewrap (bwrap) is not on PATH"
        if self.identity and self._setpriv is None:
            return "", "setpriv (util-linux) is missing, so the sandbox could not drop root"
        with tempfile.TemporaryDirectory(prefix="forge-bwrap-probe-") as probe:
            workspace, scratch = Path(probe, "workspace"), Path(probe, "tmp")
            workspace.mkdir()
            scratch.mkdir()
            env = {"PATH": _SANDBOX_PATH}
            launch = self._launch(bwrap, ["true"], env, workspace, scratch)
            try:
                result = subprocess.run(
                    launch.argv, env=launch.env, cwd=launch.cwd, capture_output=True,
                    timeout=10, check=False,
                )  # fmt: skip
            except (OSError, subprocess.TimeoutExpired) as exc:
                return "", f"bubblewrap failed its probe: {exc}"
        if result.returncode != 0:
            message = result.stderr.decode(errors="replace").strip()
            return "", f"bubblewrap failed its probe: {message or result.returncode}"
        return bwrap, ""


def _rlimit_setter(limits: Limits, nproc: int) -> Callable[[], None]:
    values = (
        (resource.RLIMIT_CPU, limits.cpu_s),
        (resource.RLIMIT_AS, limits.address_space_bytes),
        (resource.RLIMIT_NPROC, nproc),
        # One byte past the quota, so that a file running into it is over the quota
        # (and the step fails as such), not merely at it.
        (resource.RLIMIT_FSIZE, min(limits.file_size_bytes, limits.disk_bytes + 1)),
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
