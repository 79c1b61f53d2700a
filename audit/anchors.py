"""The anchor log: signed heads of the audit chain, appended to a file outside the database.

The hash chain proves that rows were not changed in place, but not that the newest rows
are all there: whoever can write the table can delete its tail, or rewrite it and
re-hash every row after the change, and the rest still verifies. So, as CloudTrail writes
digest files, Forge appends the chain's head to a log the database does not hold:

    {"at": "...", "count": 500, "hash": "<hash of seq 500>", "n": 5,
     "prev": "<digest of anchor 4>", "seq": 500, "sig": "<HMAC-SHA256>"}

one canonical JSON object a line (JSON Lines). ``sig`` is HMAC-SHA256 over the canonical
JSON of every other field, with ``FORGE_AUDIT_ANCHOR_KEY`` or else a key derived from
``SECRET_KEY`` for this use alone. ``n`` counts anchors from 1 and ``prev`` is the SHA-256
of the previous line's bytes (64 zeros for the first), so the anchors form a chain of
their own: a line edited, inserted or removed from the middle shows. ``count`` is the
number of rows through ``seq`` (equal to it while the chain is gapless; it is there so
that a reader of the log alone can tell how much was anchored).

Writers in several processes append under an exclusive ``flock`` of the file (read the
last line, write one line with one ``write`` on an ``O_APPEND`` descriptor, ``fsync``),
so the log never interleaves or forks. That needs a local filesystem or one whose locks
work; every process of a deployment must write the same file (docs/security.md).

This module reads and writes the log and nothing else; ``audit.services`` decides when to
anchor and compares the log with the chain.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings

from audit import chain
from forge.errors import ForgeError

GENESIS_DIGEST = "0" * 64
# Far longer than any line this module writes (about 330 bytes): the tail read looks
# this far back for the last line.
_TAIL_BYTES = 4096


class AnchorLogError(ForgeError, RuntimeError):
    """The anchor log cannot be appended to (unwritable, or its last line unreadable)."""

    code = "anchor_log_unwritable"


@dataclass(frozen=True)
class Anchor:
    n: int
    seq: int
    hash: str
    count: int
    at: str
    prev: str
    sig: str

    def line(self) -> str:
        return chain.canonical_json(asdict(self))

    @property
    def digest(self) -> str:
        """What the next anchor's ``prev`` holds: the SHA-256 of this anchor's line."""
        return hashlib.sha256(self.line().encode("ascii")).hexdigest()


@dataclass(frozen=True)
class Reading:
    """The log as read: ``anchors`` is every line up to the first one that fails its
    checks; ``problem`` says what failed there (empty when nothing did), ``code`` is
    ``anchor_invalid`` (a line that does not parse or whose signature is wrong),
    ``anchor_chain_broken`` (a line that does not follow the one before it) or
    ``anchor_log_unreadable``. ``exists`` is False when there is no file at all."""

    anchors: tuple[Anchor, ...]
    problem: str = ""
    code: str = ""
    exists: bool = True

    @property
    def last(self) -> Anchor | None:
        return self.anchors[-1] if self.anchors else None


class AnchorLog:
    """One anchor log file, signed with ``key``."""

    def __init__(self, path: Path, key: bytes) -> None:
        self.path = path
        self._key = key

    def append(self, *, seq: int, hash: str, count: int, at: datetime) -> Anchor:
        """Sign the head ``(seq, hash, count)`` and append it after the last anchor."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o640)
        except OSError as exc:
            raise AnchorLogError(f"cannot open the audit anchor log {self.path}: {exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released by close()
            last = self._last_line(fd)
            previous = self._parse(last) if last else None
            if last and previous is None:
                raise AnchorLogError(
                    f"the last line of the audit anchor log {self.path} is not an anchor: "
                    "repair the log (docs/security.md) before more anchors can be written"
                )
            body = {
                "n": previous.n + 1 if previous else 1,
                "seq": seq,
                "hash": hash,
                "count": count,
                "at": chain.format_time(at),
                "prev": previous.digest if previous else GENESIS_DIGEST,
            }
            anchor = Anchor(**body, sig=self._sign(body))
            os.write(fd, (anchor.line() + "\n").encode("ascii"))
            os.fsync(fd)
            return anchor
        except OSError as exc:
            raise AnchorLogError(
                f"cannot append to the audit anchor log {self.path}: {exc}"
            ) from exc
        finally:
            os.close(fd)

    def read(self) -> Reading:
        """Every anchor in the log, checked line by line (see ``Reading``)."""
        try:
            text = self.path.read_bytes().decode("ascii")
        except FileNotFoundError:
            return Reading((), exists=False)
        except (OSError, UnicodeDecodeError) as exc:
            return Reading((), f"the log cannot be read ({exc})", "anchor_log_unreadable")
        anchors: list[Anchor] = []
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        else:
            lines[-1] += "\x00"  # a last line without its newline was cut short
        for number, line in enumerate(lines, start=1):
            anchor = self._parse(line)
            if anchor is None or not hmac.compare_digest(anchor.sig, self._sign(_body(anchor))):
                return Reading(
                    tuple(anchors),
                    f"line {number} of the anchor log is not an anchor signed with this "
                    "deployment's key (edited, forged, or cut short)",
                    "anchor_invalid",
                )
            expected_prev = anchors[-1].digest if anchors else GENESIS_DIGEST
            if anchor.prev != expected_prev or anchor.n != len(anchors) + 1:
                return Reading(
                    tuple(anchors),
                    f"line {number} of the anchor log (anchor {anchor.n}) does not follow "
                    f"the line before it: anchors were removed, inserted or reordered",
                    "anchor_chain_broken",
                )
            anchors.append(anchor)
        return Reading(tuple(anchors))

    def _sign(self, body: dict[str, Any]) -> str:
        return hmac.new(self._key, chain.canonical_json(body).encode("ascii"), "sha256").hexdigest()

    @staticmethod
    def _parse(line: str) -> Anchor | None:
        try:
            data = json.loads(line)
            anchor = Anchor(**data)
        except (ValueError, TypeError):
            return None
        types_ok = all(isinstance(getattr(anchor, f), int) for f in ("n", "seq", "count")) and all(
            isinstance(getattr(anchor, f), str) for f in ("hash", "at", "prev", "sig")
        )
        return anchor if types_ok and line == anchor.line() else None

    @staticmethod
    def _last_line(fd: int) -> str:
        size = os.lseek(fd, 0, os.SEEK_END)
        if size == 0:
            return ""
        start = max(size - _TAIL_BYTES, 0)
        tail = os.pread(fd, size - start, start)
        if not tail.endswith(b"\n"):
            return tail.rsplit(b"\n", 1)[-1].decode("ascii", "replace") + "\x00"  # cut short
        lines = tail[:-1].rsplit(b"\n", 1)
        if len(lines) == 1 and start > 0:
            return "\x00"  # longer than any anchor: not one
        return lines[-1].decode("ascii", "replace")


def _body(anchor: Anchor) -> dict[str, Any]:
    body = asdict(anchor)
    del body["sig"]
    return body


def anchor_key() -> bytes:
    """``FORGE_AUDIT_ANCHOR_KEY``, or a key derived from ``SECRET_KEY`` for anchors alone
    (as runs.execution.approval_signer does for its tokens), so that no other signature
    made with ``SECRET_KEY`` can pass for an anchor's."""
    explicit = settings.FORGE_AUDIT_ANCHOR_KEY
    if explicit:
        return str(explicit).encode()
    return hmac.new(settings.SECRET_KEY.encode(), b"forge-audit-anchors", "sha256").digest()


def anchor_log() -> AnchorLog:
    """The deployment's anchor log (``FORGE_AUDIT_ANCHOR_PATH``), read from settings on
    each call so that tests can point it elsewhere."""
    return AnchorLog(Path(settings.FORGE_AUDIT_ANCHOR_PATH), anchor_key())
