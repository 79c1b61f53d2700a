"""Run one command as its own process group, with a deadline and capped output.

The command starts a new session, so its whole group can be killed with one
``SIGKILL`` when the deadline passes (a grandchild ignoring SIGTERM goes too) and
when the command exits (a step's background processes end with the step). Output is
read from both pipes as it comes, so a chatty command never blocks on a full pipe;
only the head of each stream is kept, and the total is counted to report truncation.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass, field

from forge.runners.sandbox import Launch

__all__ = ["Captured", "Completed", "run_process_group"]

# After the command exits and its group is killed, how long a pipe may stay open (held
# by a process that left the group) before we stop waiting for the rest of its output.
_DRAIN_GRACE_S = 0.5
_CHUNK = 65536


@dataclass
class Captured:
    limit: int
    head: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head)


@dataclass(frozen=True)
class Completed:
    """``exit_code`` is None when the deadline killed the command; a death by signal N
    is reported as ``128 + N``, as shells do."""

    exit_code: int | None
    stdout: Captured
    stderr: Captured
    timed_out: bool
    notes: tuple[str, ...] = ()


def run_process_group(launch: Launch, *, timeout_s: float, max_output_bytes: int) -> Completed:
    """Run ``launch`` to completion or to ``timeout_s``; raises ``OSError`` if it cannot
    be started (``FileNotFoundError`` for an unknown program)."""
    process = subprocess.Popen(
        launch.argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(launch.env),
        cwd=launch.cwd,
        user=launch.user,
        group=launch.group,
        extra_groups=[] if launch.user is not None else None,
        start_new_session=True,
        preexec_fn=launch.preexec,
    )
    assert process.stdout and process.stderr
    streams = {
        process.stdout.fileno(): Captured(max_output_bytes),
        process.stderr.fileno(): Captured(max_output_bytes),
    }
    pidfd = os.pidfd_open(process.pid)
    selector = selectors.DefaultSelector()
    for fd in (*streams, pidfd):
        selector.register(fd, selectors.EVENT_READ)
    notes: list[str] = []
    try:
        exited = _pump(selector, streams, time.monotonic() + timeout_s, until_readable=pidfd)
        selector.unregister(pidfd)
        # Kill before reaping: until the leader is waited for, its pid (the group id)
        # cannot be reused, so the signal reaches this group and nothing else.
        _kill_group(process)
        if not _pump(selector, streams, time.monotonic() + _DRAIN_GRACE_S):
            notes.append("a process that left the group kept the output open")
    finally:
        selector.close()
        os.close(pidfd)
        _kill_group(process)
        returncode = process.wait()
        process.stdout.close()
        process.stderr.close()
    stdout, stderr = streams.values()
    exit_code = 128 - returncode if returncode < 0 else returncode
    return Completed(exit_code if exited else None, stdout, stderr, not exited, tuple(notes))


def _pump(
    selector: selectors.BaseSelector,
    streams: dict[int, Captured],
    deadline: float,
    until_readable: int | None = None,
) -> bool:
    """Read the pipes into ``streams`` until ``until_readable`` is readable (or, without
    it, until every pipe is closed): True, or False when ``deadline`` came first."""
    while until_readable is not None or selector.get_map():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        for key, _ in selector.select(remaining):
            if key.fd == until_readable:
                return True
            if chunk := os.read(key.fd, _CHUNK):
                streams[key.fd].add(chunk)
            else:
                selector.unregister(key.fd)
    return True


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
