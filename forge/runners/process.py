"""Run one command as its own process group, with a deadline and capped output.

The command starts a new session, so its whole group can be killed with one
``SIGKILL`` when the deadline passes (a grandchild ignoring SIGTERM goes too) and
when the command exits (a step's background processes end with the step). Output is
read from both pipes as it comes, so a chatty command never blocks on a full pipe;
only the head of each stream is kept, and the total is counted to report truncation.
An optional watchdog is asked every ``WATCH_EVERY_S`` while the command runs (between
reads, in this same thread) and stops the whole group the first time it says so: the
shell runner's disk quota.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from forge.runners.sandbox import Launch

__all__ = ["WATCH_EVERY_S", "Captured", "Completed", "run_process_group"]

# How often the watchdog is asked; it decides itself how much each answer costs.
WATCH_EVERY_S = 0.01  # a statvfs when nothing is due: writing at 2 GB/s, 20 MB between looks

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
    """``exit_code`` is None when the deadline or the watchdog killed the command
    (``timed_out``, ``stopped``); a death by signal N is reported as ``128 + N``, as
    shells do."""

    exit_code: int | None
    stdout: Captured
    stderr: Captured
    timed_out: bool
    notes: tuple[str, ...] = ()
    stopped: bool = False


_End = Literal["exited", "deadline", "stopped"]


def run_process_group(
    launch: Launch,
    *,
    timeout_s: float,
    max_output_bytes: int,
    watchdog: Callable[[], bool] | None = None,
) -> Completed:
    """Run ``launch`` to completion, to ``timeout_s`` or until ``watchdog()`` is true;
    raises ``OSError`` if it cannot be started (``FileNotFoundError`` for an unknown
    program)."""
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
        end = _pump(
            selector,
            streams,
            time.monotonic() + timeout_s,
            until_readable=pidfd,
            watchdog=watchdog,
        )
        selector.unregister(pidfd)
        # Kill before reaping: until the leader is waited for, its pid (the group id)
        # cannot be reused, so the signal reaches this group and nothing else.
        _kill_group(process)
        if _pump(selector, streams, time.monotonic() + _DRAIN_GRACE_S) != "exited":
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
    return Completed(
        exit_code if end == "exited" else None,
        stdout,
        stderr,
        timed_out=end == "deadline",
        notes=tuple(notes),
        stopped=end == "stopped",
    )


def _pump(
    selector: selectors.BaseSelector,
    streams: dict[int, Captured],
    deadline: float,
    until_readable: int | None = None,
    watchdog: Callable[[], bool] | None = None,
) -> _End:
    """Read the pipes into ``streams`` until ``until_readable`` is readable (or, without
    it, until every pipe is closed): ``"exited"``; ``"deadline"`` when ``deadline`` came
    first, ``"stopped"`` when ``watchdog`` said so first."""
    next_watch = time.monotonic() + WATCH_EVERY_S
    while until_readable is not None or selector.get_map():
        now = time.monotonic()
        if watchdog is not None and now >= next_watch:
            if watchdog():
                return "stopped"
            now = time.monotonic()  # the watchdog may have taken a while
            next_watch = now + WATCH_EVERY_S
        remaining = deadline - now
        if remaining <= 0:
            return "deadline"
        wait = min(remaining, next_watch - now) if watchdog is not None else remaining
        for key, _ in selector.select(wait):
            if key.fd == until_readable:
                return "exited"
            if chunk := os.read(key.fd, _CHUNK):
                streams[key.fd].add(chunk)
            else:
                selector.unregister(key.fd)
    return "exited"


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
