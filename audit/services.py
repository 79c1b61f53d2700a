"""The audit trail's only writer, ``record``, and its reader ``verify``.

The chain's head is appended to the anchor log outside the database (``audit.anchors``)
every ``FORGE_AUDIT_ANCHOR_EVERY`` rows, once the row has committed; once the oldest row
the newest anchor left out has waited ``FORGE_AUDIT_ANCHOR_SECONDS`` (``anchor_if_due``:
looked at after a commit at most every ``ANCHOR_CHECK_SECONDS`` per process, and as
often by every worker, so that a system gone quiet anchors its last rows too); and after
every whole full walk. ``verify`` checks the chain against it, so a tail deleted or
re-hashed after it was anchored is named (``truncated``, ``rehashed``), and so is a log
edited, cut short or deleted. What this does and does not promise: docs/security.md.

``record`` belongs inside the caller's ``transaction.atomic()``, next to the change it
describes, so that the audit row commits or rolls back with that change. Writers are
serialised so that ``seq`` has no gaps and each row links to the one before it: on
PostgreSQL by a transaction-level advisory lock (held until the caller's transaction
ends, so the next writer reads the row this one wrote); on SQLite by the write lock
that Forge's IMMEDIATE transactions take at BEGIN. On any other database a race would
collide on the ``seq`` primary key: an IntegrityError, never a forked chain.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, connections, router, transaction
from django.db.models import QuerySet
from django.utils import timezone

from audit import anchors, chain, walk_lock
from audit.anchors import Anchor, AnchorLogError
from audit.models import COLUMNS, AnchorReceipt, AuditEvent, ChainCheckpoint
from audit.vocabulary import spellings
from forge.redaction import redact

logger = logging.getLogger(__name__)

# pg_advisory_xact_lock takes a bigint; this one is derived from a name so that it is
# unlikely to collide with a lock anyone else takes.
ADVISORY_LOCK_KEY = int.from_bytes(hashlib.sha256(b"forge.audit.chain").digest()[:8], signed=True)

VERIFY_CHUNK = 2000
# How often a process looks whether the head is due for an anchor by time (at most: a
# writer looks after its commit, the worker at this interval); FORGE_AUDIT_ANCHOR_SECONDS
# plus this bounds how long a row waits for an anchor.
ANCHOR_CHECK_SECONDS = 1.0
_next_time_check = 0.0  # this process's time.monotonic() for its next look after a commit


def record(
    actor: str,
    action: str,
    object_type: str,
    object_id: object,
    payload: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one event to the chain and return it. ``payload`` is redacted first."""
    if payload is not None and not isinstance(payload, dict):
        raise TypeError("an audit payload is a dict")
    # Stored exactly as hashed: what json can write, after redaction, normalised.
    clean = json.loads(chain.canonical_json(redact(payload or {})))
    using = router.db_for_write(AuditEvent)
    with transaction.atomic(using=using):
        connection = connections[using]
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [ADVISORY_LOCK_KEY])
        last = AuditEvent.objects.using(using).order_by("-seq").values_list("seq", "hash").first()
        seq, prev_hash = (last[0] + 1, last[1]) if last else (1, chain.GENESIS_HASH)
        event = AuditEvent(
            seq=seq,
            at=timezone.now(),
            actor=str(actor),
            action=str(action),
            object_type=str(object_type),
            object_id=str(object_id),
            payload=clean,
            prev_hash=prev_hash,
        )
        event.hash = event.expected_hash()
        event.save(using=using)
        if seq % settings.FORGE_AUDIT_ANCHOR_EVERY == 0:
            _anchor_after_commit(using, seq, event.hash)
        elif _time_check_due():
            transaction.on_commit(anchor_if_due_quietly, using=using)
    return event


@dataclass(frozen=True)
class Verification:
    """The verdict of a walk. ``code`` says what failed ("" when ``ok``):

    - a row: ``rows_missing`` (seq skips), ``link_broken`` (prev_hash is not the previous
      row's hash), ``hash_mismatch`` (the hash is not the row's content);
    - the chain against the anchor log (audit.anchors): ``truncated`` (an anchor names a
      seq past the last row), ``rehashed`` (an anchored seq holds another hash);
    - the anchor log itself, with ``broken_at`` None: ``anchor_invalid`` (a line that
      is not an anchor signed with this deployment's key), ``anchor_chain_broken`` (a line
      that does not follow the one before it), ``anchor_log_unreadable``,
      ``anchors_missing`` (the log is gone or shorter than the anchors the database
      wrote to it), ``anchor_log_replaced`` (it holds another anchor where the database
      wrote one);
    - a page's check (``chain_state``): ``row_missing``/``row_changed`` since a
      checkpoint.
    """

    ok: bool
    verified_through: int  # the last seq whose link and hash check out; 0 if none
    broken_at: int | None  # the first seq that does not, or None
    reason: str = ""
    code: str = ""


def verify() -> Verification:
    """Walk the whole chain in seq order, in chunks, name the first broken row, and check
    the chain against the anchor log (``audit.anchors``): a tail deleted or re-hashed since
    its head was anchored, and the log itself, edited, cut short or deleted."""
    return _full_walk()[0]


def _full_walk() -> tuple[Verification, int, str]:
    # The newest receipt is read before the log: every receipt is written after its
    # anchor, so the log read next holds it unless someone took it out.
    receipt = AnchorReceipt.objects.order_by("-n").first()
    reading = anchors.anchor_log().read()
    anchored = {anchor.seq: anchor for anchor in reading.anchors}
    result, rows, last_hash = _walk(1, chain.GENESIS_HASH, anchored=anchored)
    if not result.ok:
        return result, rows, last_hash
    end = result.verified_through
    newest = max(reading.anchors, key=lambda anchor: anchor.seq, default=None)
    if newest is not None and newest.seq > end:
        reason = (
            f"truncated: anchor {newest.n} ({newest.at}) says seq {newest.seq} has hash "
            f"{newest.hash[:16]}…, the database ends at seq {end}"
        )
        return Verification(False, end, end + 1, reason, "truncated"), rows, last_hash
    if reading.problem:
        result = Verification(False, end, None, f"anchor log: {reading.problem}", reading.code)
    elif receipt is not None:
        result = _check_receipt(receipt, reading, end) or result
    return result, rows, last_hash


def _check_receipt(
    receipt: AnchorReceipt, reading: anchors.Reading, end: int
) -> Verification | None:
    """The log against the newest anchor the database remembers writing to it."""
    wrote = f"the database wrote anchor {receipt.n} (seq {receipt.seq}) to it"
    if not reading.exists:
        reason, code = f"anchor log: the log is missing, but {wrote}", "anchors_missing"
    elif len(reading.anchors) < receipt.n:
        reason = f"anchor log: the log ends at anchor {len(reading.anchors)}, but {wrote}"
        code = "anchors_missing"
    elif reading.anchors[receipt.n - 1].digest != receipt.digest:
        reason = (
            f"anchor log: anchor {receipt.n} in the log is not the one the database wrote "
            f"(seq {receipt.seq}): the log was replaced or started over"
        )
        code = "anchor_log_replaced"
    else:
        return None
    return Verification(False, end, None, reason, code)


def _walk(
    first_seq: int,
    prev_hash: str,
    limit: int | None = None,
    anchored: Mapping[int, Anchor] | None = None,
) -> tuple[Verification, int, str]:
    """Check the rows from ``first_seq`` on (at most ``limit``), given the hash of the row
    before it, and each row ``anchored`` names against its anchor; return the verdict,
    the rows read and the last intact row's hash."""
    anchored = anchored or {}
    trusted = first_seq - 1  # the last row an anchor vouches for (or, first, the start)
    expected_seq, rows_read = first_seq, 0
    fields = ("seq", "at", "actor", "action", "object_type", "object_id", "payload")
    rows = (
        AuditEvent.objects.filter(seq__gte=first_seq)
        .order_by("seq")
        .values_list(*fields, "prev_hash", "hash")
    )
    if limit is not None:
        rows = rows[:limit]
    for *values, stored_prev, stored_hash in rows.iterator(chunk_size=VERIFY_CHUNK):
        rows_read += 1
        event = dict(zip(fields, values, strict=True))
        seq = event["seq"]
        reason, code = "", ""
        if seq != expected_seq:
            reason = f"seq {seq} follows seq {expected_seq - 1}: rows are missing"
            code = "rows_missing"
        elif stored_prev != prev_hash:
            reason, code = f"prev_hash does not match the hash of seq {seq - 1}", "link_broken"
        elif stored_hash != chain.event_hash(prev_hash=prev_hash, **event):
            reason, code = "hash does not match the row's content", "hash_mismatch"
        if reason:
            verdict = Verification(False, expected_seq - 1, seq, reason, code)
            return verdict, rows_read, prev_hash
        anchor = anchored.get(seq)
        if anchor is not None and anchor.hash != stored_hash:
            # Every row links and hashes, yet not to what was anchored: the rows after
            # the last anchor that matched were rewritten and re-hashed.
            reason = (
                f"re-hashed: anchor {anchor.n} ({anchor.at}) says seq {seq} has hash "
                f"{anchor.hash[:16]}…, the database has {stored_hash[:16]}…: rows "
                f"{trusted + 1} to {seq} were rewritten"
            )
            return Verification(False, trusted, seq, reason, "rehashed"), rows_read, prev_hash
        if anchor is not None:
            trusted = seq
        expected_seq, prev_hash = seq + 1, stored_hash
    return Verification(True, expected_seq - 1, None), rows_read, prev_hash


# --- The chain's state for pages: checkpoints ------------------------------------------

# How many rows one look at the chain's state may walk past the latest checkpoint: about
# 50 ms of reading and hashing here, so a page view stays fast; a longer tail waits for
# the next views or for a full walk. (A trail grows by a few rows a minute: one look
# usually sees it all.)
STATE_WALK_LIMIT = 2_000
# A look that walked fewer rows than this stores no checkpoint: walking them again costs
# less than a write per page view.
CHECKPOINT_MIN_ROWS = 1_000


@dataclass(frozen=True)
class ChainState:
    """What the audit page says about the chain.

    ``ok`` with ``verified_through == head``: every row up to the newest is intact
    (``pending`` is 0). ``ok`` with ``pending`` rows: those are newer than what has been
    checked so far. Not ``ok``: ``broken_at`` is the first row that fails, ``reason`` why
    (``broken_at`` is None when the rows are whole but the anchor log is not).
    ``full_walk`` is the latest walk that started at seq 1 (None if there was none);
    rows before its end were checked by it, rows after by later incremental walks."""

    ok: bool
    verified_through: int
    head: int
    broken_at: int | None
    reason: str
    checked_at: datetime | None
    full_walk: ChainCheckpoint | None
    walked_now: int

    @property
    def pending(self) -> int:
        return max(self.head - self.verified_through, 0) if self.ok else 0


def verify_and_record() -> Verification:
    """``verify()`` the whole chain, store the outcome as a checkpoint, and, when the
    chain is whole and agrees with the anchor log, anchor the head it verified.

    For ``manage.py forge_audit_verify`` (an operator's command, not throttled) and
    ``walk_now``. Call it outside a transaction that wrote audit rows: the head it
    anchors must be committed (see ``_write_anchor``).
    """
    started, clock = timezone.now(), time.perf_counter()
    result, rows, last_hash = _full_walk()
    _store(started, ChainCheckpoint.FULL, 1, result, rows, last_hash, time.perf_counter() - clock)
    if result.ok and result.verified_through:
        _write_anchor(result.verified_through, last_hash, rows)
    return result


def walk_now(holder: str) -> Verification:
    """``verify_and_record`` for the API and the page: one walk at a time across
    processes, and not within ``FORGE_AUDIT_VERIFY_INTERVAL`` of the last one
    (``audit.walk_lock``; raises ``walk_lock.WalkRefused``)."""
    ticket = walk_lock.claim(holder)
    try:
        return verify_and_record()
    finally:
        walk_lock.release(ticket)


@dataclass(frozen=True)
class LastVerification:
    """What ``GET /audit/verify`` serves: the latest full walk's verdict, or a break any
    later walk found (a broken state is sticky: see ``chain_state``)."""

    verification: Verification
    checked_at: datetime | None


def last_verification() -> LastVerification:
    """The last stored verdict, without walking anything."""
    latest = ChainCheckpoint.objects.order_by("-id").first()
    checkpoint = latest if latest is not None and not latest.ok else latest_full_walk()
    if checkpoint is None:
        never = Verification(
            False, 0, None, "the whole chain has not been walked yet", "not_verified"
        )
        return LastVerification(never, None)
    verdict = Verification(
        checkpoint.ok,
        checkpoint.through_seq,
        checkpoint.broken_at,
        checkpoint.reason,
        checkpoint.code,
    )
    return LastVerification(verdict, checkpoint.checked_at)


# --- Anchors: the chain's head, signed, outside the database ----------------------------


def _anchor_after_commit(using: str, seq: int, hash: str) -> None:
    # After the commit, never inside the transaction: a rolled-back transaction must not
    # leave an anchor naming a row that never existed.
    transaction.on_commit(partial(_anchor_quietly, seq, hash), using=using)


def _time_check_due() -> bool:
    global _next_time_check
    now = time.monotonic()
    if now < _next_time_check:
        return False
    _next_time_check = now + min(ANCHOR_CHECK_SECONDS, settings.FORGE_AUDIT_ANCHOR_SECONDS)
    return True


def anchor_if_due(now: datetime | None = None) -> Anchor | None:
    """Anchor the committed head if the oldest row after the newest anchor was written
    ``FORGE_AUDIT_ANCHOR_SECONDS`` or more before ``now``; return the anchor, or None when
    none was due. Two indexed reads when nothing is due. Call it outside a transaction
    that wrote audit rows (the head must be committed)."""
    anchored = AnchorReceipt.objects.order_by("-n").values_list("seq", flat=True).first() or 0
    oldest = (
        AuditEvent.objects.filter(seq__gt=anchored)
        .order_by("seq")
        .values_list("at", flat=True)
        .first()
    )
    waited = (now or timezone.now()) - oldest if oldest is not None else None
    if waited is None or waited.total_seconds() < settings.FORGE_AUDIT_ANCHOR_SECONDS:
        return None
    head = AuditEvent.objects.order_by("-seq").values_list("seq", "hash").first()
    assert head is not None  # there is a row after the newest anchor
    return _write_anchor(head[0], head[1], head[0])


def anchor_if_due_quietly() -> None:
    """``anchor_if_due`` for loops and commit hooks: a failure is logged, and the next
    look tries again."""
    try:
        anchor_if_due()
    except (AnchorLogError, DatabaseError):
        logger.exception("audit anchor by time not written")


def _anchor_quietly(seq: int, hash: str) -> None:
    # The rows are committed by now: failing the request would not undo them. The
    # failure is logged; the next anchor (or verify) anchors a later head.
    try:
        _write_anchor(seq, hash, seq)
    except (AnchorLogError, DatabaseError):
        logger.exception("audit anchor for seq %s not written", seq)


def _write_anchor(seq: int, hash: str, count: int) -> Anchor:
    """Append the head ``(seq, hash, count)`` to the anchor log, then note it in the
    database (``AnchorReceipt``): in this order, so the log is never behind its notes."""
    anchor = anchors.anchor_log().append(seq=seq, hash=hash, count=count, at=timezone.now())
    try:
        with transaction.atomic():
            AnchorReceipt.objects.create(
                n=anchor.n,
                seq=seq,
                hash=hash,
                digest=anchor.digest,
                written_at=datetime.fromisoformat(anchor.at),
            )
    except IntegrityError:
        # The log numbers this anchor as one the database already has a receipt for: it
        # was deleted and started over. The old receipt stays, as the evidence verify
        # reports (anchor_log_replaced).
        logger.error("the audit anchor log started over: anchor %s was written before", anchor.n)
    return anchor


def chain_state(limit: int | None = None) -> ChainState:
    """The chain's state from the latest checkpoint, walking at most ``limit`` newer rows
    (``STATE_WALK_LIMIT`` by default); stores a checkpoint when it walked many rows or
    found a break. See ``ChainCheckpoint`` for what an incremental walk proves."""
    limit = STATE_WALK_LIMIT if limit is None else limit
    head = AuditEvent.objects.order_by("-seq").values_list("seq", flat=True).first() or 0
    latest = ChainCheckpoint.objects.order_by("-id").first()
    full = latest if latest is not None and latest.full else latest_full_walk()
    if latest is not None and not latest.ok:
        return _state(latest, head, full, 0)  # a broken chain stays broken
    started, clock = timezone.now(), time.perf_counter()
    through, prev_hash = (latest.through_seq, latest.through_hash) if latest else (0, "")
    if through:
        stored = AuditEvent.objects.filter(seq=through).values_list("hash", flat=True).first()
        if stored != prev_hash:
            when = latest.checked_at.isoformat(timespec="seconds") if latest else ""
            reason = (
                f"row {through} is missing" if stored is None else f"row {through} changed"
            ) + f" since it was verified (at {when})"
            code = "row_missing" if stored is None else "row_changed"
            result = Verification(False, through - 1, through, reason, code)
            checkpoint = _store(
                started,
                ChainCheckpoint.INCREMENTAL,
                through,
                result,
                1,
                "",
                time.perf_counter() - clock,
            )
            return _state(checkpoint, head, full, 1)
    else:
        prev_hash = chain.GENESIS_HASH
    result, rows, last_hash = _walk(through + 1, prev_hash, limit)
    elapsed = time.perf_counter() - clock
    if not result.ok or rows >= CHECKPOINT_MIN_ROWS:
        checkpoint = _store(
            started, ChainCheckpoint.INCREMENTAL, through + 1, result, rows, last_hash, elapsed
        )
        return _state(checkpoint, head, full, rows)
    checked_at = started if rows else (latest.checked_at if latest else None)
    return ChainState(True, result.verified_through, head, None, "", checked_at, full, rows)


def latest_full_walk() -> ChainCheckpoint | None:
    """The latest full walk's checkpoint (``verify_and_record``), or None."""
    return ChainCheckpoint.objects.filter(kind=ChainCheckpoint.FULL).order_by("-id").first()


def _store(
    started: datetime,
    kind: str,
    from_seq: int,
    result: Verification,
    rows: int,
    last_hash: str,
    seconds: float,
) -> ChainCheckpoint:
    return ChainCheckpoint.objects.create(
        checked_at=started,
        kind=kind,
        from_seq=from_seq,
        through_seq=result.verified_through,
        through_hash=last_hash if result.verified_through else "",
        broken_at=result.broken_at,
        reason=result.reason,
        code=result.code,
        rows=rows,
        duration_ms=round(seconds * 1000, 3),
    )


def _state(
    checkpoint: ChainCheckpoint, head: int, full: ChainCheckpoint | None, walked: int
) -> ChainState:
    return ChainState(
        checkpoint.ok,
        checkpoint.through_seq,
        head,
        checkpoint.broken_at,
        checkpoint.reason,
        checkpoint.checked_at,
        full,
        walked,
    )


# --- Loading a trail in bulk -------------------------------------------------------------


@dataclass(frozen=True)
class LoadedEvent:
    """One event for ``bulk_load_chain``: what ``record`` takes, plus its time."""

    at: datetime
    actor: str
    action: str
    object_type: str
    object_id: str
    payload: dict[str, Any]


def bulk_load_chain(events: Iterable[LoadedEvent], *, batch_size: int = 5_000) -> int:
    """Append ``events`` to the chain in one transaction; return how many were written.

    For loading a trail in bulk (``bench.seed_load``, which seeds a database
    for benchmarks) and nothing else: the application's own decisions go through
    ``record``, one by one, inside the transaction of the change they describe. This
    path exists because a million ``record`` calls take many minutes, while hashing in
    a loop and inserting batches with ``executemany`` takes seconds, and because the
    model refuses ``bulk_create`` on purpose (every other caller stays refused).

    The events are appended in the order given, after the current last row, each
    redacted, canonicalised and hashed exactly as ``record`` does, under the same lock
    (PostgreSQL's advisory lock, SQLite's write lock), so ``verify()`` checks them like
    any other row. ``at`` must be timezone-aware; it is stored as given (a loaded
    history may well be older than the rows already there).
    """
    using = router.db_for_write(AuditEvent)
    connection = connections[using]
    meta = AuditEvent._meta
    columns = COLUMNS
    at_field = meta.get_field("at")
    sql = "INSERT INTO {} ({}) VALUES ({})".format(
        connection.ops.quote_name(meta.db_table),
        ", ".join(connection.ops.quote_name(meta.get_field(c).column) for c in columns),
        ", ".join(["%s"] * len(columns)),
    )
    written = 0
    with transaction.atomic(using=using):
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [ADVISORY_LOCK_KEY])
        last = AuditEvent.objects.using(using).order_by("-seq").values_list("seq", "hash").first()
        seq, prev_hash = last or (0, chain.GENESIS_HASH)
        batch: list[tuple[Any, ...]] = []
        with connection.cursor() as cursor:
            for event in events:
                seq += 1
                # Dumped as record() stores it; record's json round trip changes nothing
                # that canonical_json writes, so it is skipped here.
                payload = redact(event.payload)
                fields = {
                    "seq": seq,
                    "at": event.at,
                    "actor": str(event.actor),
                    "action": str(event.action),
                    "object_type": str(event.object_type),
                    "object_id": str(event.object_id),
                    "payload": payload,
                }
                digest = chain.event_hash(prev_hash=prev_hash, **fields)
                batch.append(
                    (
                        seq,
                        at_field.get_db_prep_value(event.at, connection),
                        fields["actor"],
                        fields["action"],
                        fields["object_type"],
                        fields["object_id"],
                        chain.canonical_json(payload),
                        prev_hash,
                        digest,
                    )
                )
                prev_hash = digest
                if len(batch) >= batch_size:
                    cursor.executemany(sql, batch)
                    written += len(batch)
                    batch.clear()
            if batch:
                cursor.executemany(sql, batch)
                written += len(batch)
        if written:
            _anchor_after_commit(using, seq, prev_hash)  # the loaded head, once
    return written


def events(
    *,
    actor: str | None = None,
    action: str | None = None,
    object_type: str | None = None,
    object_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    exclude_actor: Sequence[str] = (),
    exclude_action: Sequence[str] = (),
) -> QuerySet[AuditEvent]:
    """Events matching every filter given, in seq order. ``since`` inclusive, ``until`` not.

    Actors, actions, object types and ids match without regard to case; ``exclude_actor``
    and ``exclude_action`` leave out events by any of those actors or of those actions."""
    queryset = AuditEvent.objects.order_by("seq")
    for column, value in (("actor", actor), ("action", action), ("object_type", object_type)):
        if value:
            queryset = queryset.filter(**{f"{column}__in": spellings(column, [value])})
    if object_id:
        # Ids are mostly numbers: those keep the exact match the object index serves.
        same_case = object_id.lower() == object_id.upper()
        queryset = queryset.filter(**{"object_id" if same_case else "object_id__iexact": object_id})
    if exclude_actor:
        queryset = queryset.exclude(actor__in=spellings("actor", exclude_actor))
    if exclude_action:
        queryset = queryset.exclude(action__in=spellings("action", exclude_action))
    if since is not None:
        queryset = queryset.filter(at__gte=_aware(since))
    if until is not None:
        queryset = queryset.filter(at__lt=_aware(until))
    return queryset


def _aware(moment: datetime) -> datetime:
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, UTC)
