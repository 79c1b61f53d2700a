"""Seed a database with a working history for load tests: many runs and a long audit trail.

``python -m bench.seed_load`` (``load`` from code; by default 10,000 runs and 1,000,000
audit events over the last 90 days, into the database of ``DATABASE_URL``) fills an
empty database with three users (``load-author``,
``load-approver``, ``load-operator``), five plans of three approved versions, runs with
their step runs, run events and step approvals, and the audit trail: the setup's events,
each run's own (``run.started``, ``run.step_approved`` / ``run.step_rejected``,
``run.resumed`` with its ``drift``, ``run.cancelled``) and everyday traffic (logins,
exports, diffs, tokens, reviews) up to the number asked for, all in time order.

The numbers are random but seeded (``--seed``): two loads give the same history. Rows
are written directly, in bulk, not through the services (which would date them now, and
take hours): plans are still compiled, and the trail goes through
``audit.services.bulk_load_chain``, which redacts, canonicalises and hashes every row as
``record`` does, so the chain verifies. ``created_at`` values are set explicitly
(``auto_now_add`` is lifted for this load alone). Nothing here runs a tool, a worker
or the scheduler: it is data for pages, metrics and benchmarks (``bench/pages.py``).
"""

from __future__ import annotations

import argparse
import heapq
import math
import os
import random
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TextIO

import django

# A script of its own: Django is set up before the models below are imported (a no-op
# where it is set up already, in the tests and bench.pages).
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forge_web.settings")
django.setup()

from django.db import connections, models, router, transaction  # noqa: E402
from django.db.models import Field  # noqa: E402
from django.utils import timezone  # noqa: E402

from accounts.models import User  # noqa: E402
from audit.models import AuditEvent  # noqa: E402
from audit.services import LoadedEvent, bulk_load_chain  # noqa: E402
from forge.plan import content_hash, from_data, to_data  # noqa: E402
from plans.compilation import compile_document  # noqa: E402
from plans.models import Approval, Plan, PlanVersion, VersionStatus  # noqa: E402
from runs.models import Run, RunEvent, StepApproval, StepRun  # noqa: E402

PLAN_NAMES = (
    "Supplier risk report",
    "Release notes",
    "Quarterly board pack",
    "Invoice reconciliation",
    "Incident postmortem",
)
STEPS = ("gather", "analyse", "draft", "publish")
GATED_STEP = 3  # "publish" waits for approval in gated runs
PEOPLE = tuple(
    "ada grace alan edsger barbara donald ken dennis margaret john frances tony leslie "
    "niklaus robin radia linus guido bjarne james anders yukihiro rasmus brendan larry "
    "sophie hedy katherine annie mary lynn joan carol shafi silvio judea yoshua geoffrey "
    "fei".split()
)
FINAL_WEIGHTS = {
    "succeeded": 72,
    "failed": 9,
    "budget_exhausted": 4,
    "cancelled": 6,
    "needs_replan": 3,
}
LIVE_STATUSES = ("running", "awaiting_approval")
# Runs started in the last LIVE_WINDOW are still going; none starts after now minus
# LIVE_WINDOW_END. A finished run lasts at most about 2.5 hours (two replans of half an
# hour, an approval of an hour, steps of two minutes at most), so none ends in the future.
LIVE_WINDOW = timedelta(hours=4)
SETUP_TIME = timedelta(minutes=30)  # users and plans come first, then runs
LIVE_WINDOW_END = timedelta(minutes=15)
DRIFT = ["approval before 'external_email' is no longer required"]
# Everyday traffic in the trail: (action, object_type, weight).
FILLER = (
    ("user.logged_in", "user", 30),
    ("plan_version.exported", "plan", 14),
    ("plan.diffed", "plan", 10),
    ("user.logged_out", "user", 10),
    ("plan_version.created", "plan", 8),
    ("plan_version.approved", "plan", 6),
    ("user.login_failed", "user", 4),
    ("token.created", "token", 4),
    ("plan_version.rejected", "plan", 2),
    ("token.revoked", "token", 2),
    ("plan_version.submitted", "plan", 3),
    ("user.updated", "user", 1),
)


@dataclass
class PlannedRun:
    """A run before it is written: its row, steps, events, approvals and audit events
    (``(at, actor, action, payload)``: their object is the run, whose id comes later)."""

    run: Run
    steps: list[StepRun] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)  # RunEvent fields
    approvals: list[StepApproval] = field(default_factory=list)
    audit: list[tuple[datetime, str, str, dict[str, Any]]] = field(default_factory=list)


class NotEmpty(RuntimeError):
    """The database already holds a trail: a history dated in the past would make its
    times go backwards."""


def load(
    *,
    runs: int = 10_000,
    audit_events: int = 1_000_000,
    days: int = 90,
    seed: int = 7,
    batch: int = 5_000,
    out: TextIO = sys.stdout,
) -> None:
    """Fill the empty default database with the history; says what it wrote on ``out``.
    Raises ``NotEmpty`` when the database has audit events already."""
    _Loader(out).handle(runs=runs, audit_events=audit_events, days=days, seed=seed, batch=batch)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.seed_load", description=__doc__)
    parser.add_argument("--runs", type=int, default=10_000, help="runs (default 10,000)")
    parser.add_argument(
        "--audit-events",
        type=int,
        default=1_000_000,
        help="audit events, the runs' own included (default 1,000,000)",
    )
    parser.add_argument("--days", type=int, default=90, help="history length (default 90)")
    parser.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    parser.add_argument("--batch", type=int, default=5_000, help="rows per insert")
    args = parser.parse_args(argv)
    try:
        load(
            runs=args.runs, audit_events=args.audit_events, days=args.days, seed=args.seed,
            batch=args.batch,
        )  # fmt: skip
    except NotEmpty as exc:
        parser.exit(2, f"{parser.prog}: {exc}\n")


class _Loader:
    def __init__(self, out: TextIO) -> None:
        self.stdout = out

    def handle(self, **options: Any) -> None:
        started = time.perf_counter()
        self.rng = random.Random(options["seed"])
        self.batch = max(1, options["batch"])
        self.now = timezone.now()
        self.window_start = self.now - timedelta(days=max(1, options["days"]))

        existing = AuditEvent.objects.count()
        if existing:
            raise NotEmpty(
                f"bench.seed_load fills an empty database, and this one has {existing:,} "
                "audit events: the history it loads is dated in the past, and a trail's "
                "times should not go backwards (point DATABASE_URL at a new database)"
            )
        clock = time.perf_counter()
        with transaction.atomic():
            users, versions, setup_audit = self._setup()
        self._report("users and plans", clock)

        clock = time.perf_counter()
        planned = [self._plan_run(users, versions) for _ in range(max(0, options["runs"]))]
        planned.sort(key=lambda item: item.run.created_at)
        self._write_runs(planned)
        runs = len(planned)
        steps = sum(len(item.steps) for item in planned)
        events = sum(len(item.events) for item in planned)
        self._report(f"{runs:,} runs, {steps:,} step runs, {events:,} run events", clock)

        clock = time.perf_counter()
        run_audit = setup_audit + sorted(
            (
                LoadedEvent(at, actor, action, "run", str(item.run.pk), payload)
                for item in planned
                for at, actor, action, payload in item.audit
            ),
            key=lambda event: event.at,
        )
        del planned
        filler = max(0, options["audit_events"] - len(run_audit))
        stream = heapq.merge(run_audit, self._filler(filler), key=lambda e: e.at)
        written = bulk_load_chain(stream, batch_size=self.batch)
        self._report(f"{written:,} audit events", clock)
        self.stdout.write(f"done in {time.perf_counter() - started:.1f} s\n")

    def _report(self, what: str, since: float) -> None:
        self.stdout.write(f"{what}: {time.perf_counter() - since:.1f} s\n")

    # --- Setup: people and plans, dated at the start of the history ---------------------

    def _setup(self) -> tuple[dict[str, Any], list[list[PlanVersion]], list[LoadedEvent]]:
        """Three users and five plans of three approved versions each, written directly
        (not through the services, whose audit rows would be dated now, after the
        history loaded next); returns their audit events, dated at the window's start."""
        actor, at = "cli:bench.seed_load", self.window_start
        audit: list[LoadedEvent] = []
        users = {}
        for role in ("author", "approver", "operator"):
            user = User(username=f"load-{role}", roles=[role], date_joined=at)
            user.set_unusable_password()
            user.save()
            users[role] = user
            audit.append(
                LoadedEvent(
                    at,
                    actor,
                    "user.created",
                    "user",
                    str(user.pk),
                    {"username": user.username, "roles": [role], "changed": []},
                )
            )
        author, approver = users["author"], users["approver"]
        versions = []
        plan_created = Plan._meta.get_field("created_at")
        version_created = PlanVersion._meta.get_field("created_at")
        approval_created = Approval._meta.get_field("created_at")
        with _explicit_times(plan_created, version_created, approval_created):
            for name in PLAN_NAMES:
                at += timedelta(minutes=1)
                plan = Plan.objects.create(name=name, created_by=author, created_at=at)
                audit.append(
                    LoadedEvent(
                        at,
                        author.username,
                        "plan.created",
                        "plan",
                        str(plan.pk),
                        {"plan": plan.pk, "name": name},
                    )
                )
                chain: list[PlanVersion] = []
                for number in (1, 2, 3):
                    at += timedelta(seconds=30)
                    document = from_data(_document(name, number))
                    result = compile_document(document)
                    version = PlanVersion.objects.create(
                        plan=plan,
                        number=number,
                        document=to_data(document),
                        content_hash=content_hash(document),
                        parent=chain[-1] if chain else None,
                        replan_reason="a step failed its contract" if chain else "",
                        author=author,
                        planner="editor",
                        created_at=at,
                        diagnostics=[d.to_data() for d in result.diagnostics],
                        has_errors=not result.ok,
                        status=VersionStatus.APPROVED,
                    )
                    about = {
                        "plan": plan.pk,
                        "version": number,
                        "content_hash": version.content_hash,
                    }
                    audit.append(
                        LoadedEvent(
                            at,
                            author.username,
                            "plan_version.created",
                            "plan",
                            str(plan.pk),
                            {**about, "steps": 4},
                        )
                    )
                    at += timedelta(seconds=30)
                    approval = Approval.objects.create(
                        version=version,
                        reviewer=approver,
                        decision="approved",
                        comment="load test",
                        created_at=at,
                    )
                    audit.append(
                        LoadedEvent(
                            at,
                            approver.username,
                            "plan_version.approved",
                            "plan",
                            str(plan.pk),
                            {
                                **about,
                                "approval": approval.pk,
                                "comment": "load test",
                                "status": "approved",
                            },
                        )
                    )
                    chain.append(version)
                plan.latest_version = chain[-1]
                plan.save(update_fields=["latest_version"])
                versions.append(chain)
        return users, versions, audit

    # --- Runs ----------------------------------------------------------------------------

    def _plan_run(self, users: dict[str, Any], versions: list[list[PlanVersion]]) -> PlannedRun:
        rng = self.rng
        chain = rng.choice(versions)
        first, latest = self.window_start + SETUP_TIME, self.now - LIVE_WINDOW_END
        created = first + (latest - first) * rng.random()
        if created > self.now - LIVE_WINDOW:
            # Recent runs are still going: nothing of theirs can be dated in the future.
            status, replans = rng.choices(LIVE_STATUSES, weights=(7, 3))[0], 0
        else:
            status = rng.choices(list(FINAL_WEIGHTS), weights=list(FINAL_WEIGHTS.values()))[0]
            replans = rng.choices((0, 1, 2), weights=(85, 12, 3))[0]
        run = Run(
            plan_id=chain[0].plan_id,
            version=chain[replans],
            status=status,
            started_by=users["operator"],
            created_at=created,
        )
        planned = PlannedRun(run)
        _RunBuilder(self, planned, chain, users, created).build(
            status, replans, rng.random() < 0.15
        )
        return planned

    def _write_runs(self, planned: list[PlannedRun]) -> None:
        run_created = Run._meta.get_field("created_at")
        approval_created = StepApproval._meta.get_field("created_at")
        with _explicit_times(run_created, approval_created), transaction.atomic():
            for start in range(0, len(planned), self.batch):
                chunk = planned[start : start + self.batch]
                Run.objects.bulk_create([item.run for item in chunk])
                steps, events, approvals = [], [], []
                for item in chunk:
                    run_id = item.run.pk  # now that it has one
                    for step in item.steps:
                        step.run_id = run_id
                        steps.append({f: getattr(step, f) for f in STEP_FIELDS})
                    for event in item.events:
                        event["run_id"] = run_id
                    events += item.events
                    for approval in item.approvals:
                        approval.run = item.run
                    approvals += item.approvals
                _insert(StepRun, steps)
                _insert(RunEvent, events)
                StepApproval.objects.bulk_create(approvals)

    # --- Everyday audit traffic ----------------------------------------------------------

    def _filler(self, count: int) -> Iterator[LoadedEvent]:
        """``count`` events spread evenly over the window, in time order."""
        if count <= 0:
            return
        rng = self.rng
        actions = [(a, t) for a, t, _ in FILLER]
        weights = [w for _, _, w in FILLER]
        step = (self.now - timedelta(minutes=1) - self.window_start).total_seconds() / count
        for index in range(count):
            at = self.window_start + timedelta(seconds=(index + rng.random()) * step)
            action, object_type = rng.choices(actions, weights=weights)[0]
            person = rng.choice(PEOPLE)
            actor = person
            if object_type == "user":
                object_id = str(PEOPLE.index(person) + 1)
                payload: dict[str, Any] = {"username": person}
                if action == "user.login_failed":
                    actor, payload = "web:anonymous", {"username": person, "ip": _ip(rng)}
                elif action == "user.updated":
                    actor = "cli:forge_user"
                    payload = {"username": person, "roles": ["author"], "changed": ["roles"]}
            elif object_type == "token":
                object_id = str(rng.randint(1, 5_000))
                payload = {"name": f"{person}-ci", "prefix": f"{rng.getrandbits(48):012x}"}
            else:
                plan = rng.randint(1, 400)
                object_id = str(plan)
                payload = {"plan": plan, "version": rng.randint(1, 12)}
                if action == "plan_version.exported":
                    payload["format"] = rng.choice(("json", "yaml", "mermaid", "dot"))
                elif action == "plan.diffed":
                    payload["from"] = max(1, payload["version"] - 1)
                    payload["to"] = payload.pop("version")
                elif action in ("plan_version.approved", "plan_version.rejected"):
                    payload["comment"] = rng.choice(("looks right", "ok", "see the budget", ""))
            yield LoadedEvent(at, actor, action, object_type, object_id, payload)


class _RunBuilder:
    """The rows of one run, its events in seq order and its clock moving forward."""

    def __init__(
        self,
        command: _Loader,
        planned: PlannedRun,
        chain: list[PlanVersion],
        users: dict[str, Any],
        created: datetime,
    ) -> None:
        self.rng = command.rng
        self.now = command.now
        self.planned = planned
        self.chain = chain
        self.users = users
        self.clock = created
        self.seq = 0
        self.plan_id = str(chain[0].plan_id)

    def tick(self, seconds: float) -> datetime:
        self.clock += timedelta(seconds=seconds)
        return self.clock

    def event(self, version: int, event_type: str, **fields: Any) -> None:
        self.seq += 1
        self.planned.events.append(
            {
                "seq": self.seq,
                "plan_id": self.plan_id,
                "plan_version": version,
                "event_type": event_type,
                "created_at": self.clock,
                **fields,
            }
        )

    def audit(self, actor: str, action: str, payload: dict[str, Any]) -> None:
        self.planned.audit.append((self.clock, actor, action, payload))

    def build(self, status: str, replans: int, gated: bool) -> None:
        rng, run = self.rng, self.planned.run
        operator = self.users["operator"].username
        self.event(1, "run_started", transition=["queued", "running"], actor=operator)
        self.audit(operator, "run.started", {"plan": run.plan_id, "version": 1, "steps": 4})
        for replan in range(replans):
            version = replan + 1
            failed_at = rng.randrange(len(STEPS))
            self.steps(version, failed_at, "failed", record=False)
            self.event(version, "run_needs_replan", transition=["running", "needs_replan"])
            self.tick(rng.uniform(60, 1_800))  # someone replans
            drift = DRIFT if rng.random() < 0.25 else []
            self.event(
                version + 1,
                "run_resumed",
                transition=["needs_replan", "running"],
                facts={"from_version": version, "preserved": list(STEPS[:failed_at])},
                actor=operator,
            )
            self.audit(
                operator,
                "run.resumed",
                {"from_version": version, "version": version + 1, "drift": drift},
            )
        version = replans + 1
        stop = len(STEPS) if status == "succeeded" else rng.randrange(len(STEPS))
        outcome = {
            "failed": "failed",
            "needs_replan": "invalid",
            "cancelled": "cancelled",
            "running": "running",
            "awaiting_approval": "awaiting_approval",
        }.get(status, "")
        status = self.steps(version, stop, outcome, gated=gated) or status
        run.status = status
        run.replans = replans
        if status in ("succeeded", "failed", "budget_exhausted", "cancelled"):
            self.tick(rng.uniform(0.05, 0.5))
            self.event(version, f"run_{status}", transition=["running", status])
            run.finished_at = self.clock
            if status == "cancelled":
                self.audit(operator, "run.cancelled", {})
        elif status == "needs_replan":
            self.event(version, "run_needs_replan", transition=["running", "needs_replan"])
            run.failed_step = STEPS[stop]
            run.reset_steps = list(STEPS[stop:])
            run.preserved_steps = list(STEPS[:stop])
        elif status == "awaiting_approval":
            self.event(version, "run_awaiting_approval", transition=["running", status])
        run.last_seq = self.seq
        succeeded = [s for s in self.planned.steps if s.status == "succeeded"]
        run.used_steps = len(succeeded)
        run.used_tokens = sum(s.tokens for s in succeeded)
        run.used_cost = round(sum(s.cost for s in succeeded), 6)

    def steps(
        self, version: int, stop: int, outcome: str, *, gated: bool = False, record: bool = True
    ) -> str:
        """Steps before ``stop`` succeed; step ``stop`` ends in ``outcome`` ("": it never
        starts); later steps stay pending. Returns a run status when an approver's
        rejection decided it, else "". ``record``: keep StepRun rows (the final version's)."""
        rng = self.rng
        steps = [
            StepRun(
                plan_version=version,
                step_id=step_id,
                position=position,
                status="pending",
                tool_name="echo",
            )
            for position, step_id in enumerate(STEPS)
        ]
        if record:
            self.planned.steps.extend(steps)  # every step, those never reached included
        for position, (step_id, step) in enumerate(zip(STEPS, steps, strict=True)):
            if position > stop or (position == stop and not outcome):
                continue
            self.tick(rng.uniform(0.01, 0.2))
            self.event(
                version,
                "step_ready",
                step_id=step_id,
                step_status="ready",
                transition=["pending", "ready"],
            )
            waits = record and (
                (position == stop and outcome == "awaiting_approval")
                or (gated and position == GATED_STEP)
            )
            if waits:
                self.event(
                    version,
                    "step_awaiting_approval",
                    step_id=step_id,
                    step_status="awaiting_approval",
                    transition=["ready", "awaiting_approval"],
                )
                if position == stop and outcome == "awaiting_approval":
                    step.status = "awaiting_approval"
                    return ""
                self.tick(rng.uniform(30, 3_600))
                if not self.decide(version, step):
                    return "failed"
            step.started_at = self.tick(rng.uniform(0.01, 0.1))
            self.event(
                version,
                "step_started",
                step_id=step_id,
                step_status="running",
                transition=["ready", "running"],
                tool_name="echo",
            )
            if position == stop and outcome == "running":
                step.status = "running"
                return ""
            latency = min(rng.lognormvariate(math.log(800), 0.9), 120_000.0)
            step.finished_at = self.tick(latency / 1000)
            step.latency_ms = round(latency, 3)
            step.attempt = 1
            step.tokens = rng.randint(200, 6_000)
            step.cost = round(step.tokens * rng.uniform(1e-6, 2e-5), 6)
            final = outcome if position == stop else "succeeded"
            step.status = final
            self.event(
                version,
                f"step_{final}",
                step_id=step_id,
                step_status=final,
                transition=["running", final],
                tool_name="echo",
                latency_ms=step.latency_ms,
                tokens=step.tokens,
                cost=step.cost,
            )
        return ""

    def decide(self, version: int, step: StepRun) -> bool:
        """An approver decides on a waiting step (mostly yes); False: rejected."""
        approver = self.users["approver"]
        approved = self.rng.random() < 0.85
        decision = "approved" if approved else "rejected"
        self.planned.approvals.append(
            StepApproval(
                step_id=step.step_id,
                plan_version=version,
                args_hash="0" * 64,
                reviewer=approver,
                decision=decision,
                created_at=self.clock,
            )
        )
        self.event(version, f"step_{decision}", step_id=step.step_id, actor=approver.username)
        self.audit(
            approver.username,
            f"run.step_{decision}",
            {"step": step.step_id, "args_hash": "0" * 64, "comment": ""},
        )
        if not approved:
            step.status = "failed"
            step.error = "rejected by an approver"
        return approved


def _document(name: str, number: int) -> dict[str, Any]:
    steps = []
    for index, step_id in enumerate(STEPS):
        steps.append(
            {
                "id": step_id,
                "description": f"{step_id.capitalize()} the {name.lower()} material (v{number})",
                "depends_on": [STEPS[index - 1]] if index else [],
                "tool": "echo",
                "args": {"part": step_id, "version": number},
                "done_when": {"description": f"{step_id} done", "required_keys": ["part"]},
            }
        )
    return {"goal": name, "deliverable": STEPS[-1], "steps": steps}


def _ip(rng: random.Random) -> str:
    return f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"


STEP_FIELDS = tuple(f.attname for f in StepRun._meta.concrete_fields if not f.primary_key)


def _insert(model: type[models.Model], rows: list[dict[str, Any]]) -> None:
    """Insert ``rows`` (attribute name to value; defaults fill the rest) with one
    ``executemany``: several times faster than ``bulk_create`` for 100,000 rows of 20
    columns, whose SQL compilation per value dominates. Values that need converting
    for the database (JSON, times) go through their field as ``bulk_create`` would."""
    if not rows:
        return
    connection = connections[router.db_for_write(model)]
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    convert = {f.attname for f in fields if isinstance(f, models.JSONField | models.DateTimeField)}
    sql = "INSERT INTO {} ({}) VALUES ({})".format(
        connection.ops.quote_name(model._meta.db_table),
        ", ".join(connection.ops.quote_name(f.column) for f in fields),
        ", ".join(["%s"] * len(fields)),
    )
    missing = object()
    params = []
    for row in rows:
        values = []
        for f in fields:
            value = row.get(f.attname, missing)
            if value is missing:
                value = f.get_default()
            if f.attname in convert:
                value = f.get_db_prep_save(value, connection)
            values.append(value)
        params.append(values)
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


@contextmanager
def _explicit_times(*fields: Field[Any, Any]) -> Iterator[None]:
    """Let ``bulk_create`` keep the ``created_at`` values given (``auto_now_add`` would
    overwrite them with now): the seeded history is in the past."""
    saved = [(f, f.auto_now_add) for f in fields]  # type: ignore[attr-defined]
    for f, _ in saved:
        f.auto_now_add = False  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for f, value in saved:
            f.auto_now_add = value  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
