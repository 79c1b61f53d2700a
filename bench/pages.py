"""How fast the everyday pages stay with 10,000 runs and 1,000,000 audit events.

Seeds a fresh SQLite database once (``bench.seed_load``: 10,000 runs over 90
days with their steps and events, and a million-row audit trail), then times, through
Django's test client as a logged-in viewer (middleware, session, permission check,
queries, template), the median of a few requests of:

- the audit page: unfiltered, filtered (actor, action, one object, a week's time range,
  a time range with an object type), and page 500 (``?before=`` deep in the trail);
- the full walk of the chain (``POST /audit/verify/``, O(rows) by nature), timed once
  and reported apart; the audit page is timed before it (each view then also checks up
  to ``audit.services.STATE_WALK_LIMIT`` rows newer than its last checkpoint) and after
  it (nothing new to check: the steady state);
- the metrics page and ``GET /api/v1/metrics`` for the last 30 days, and for 90;
- the run list.

Goal: every page under 500 ms here (a shared machine: run it twice before believing a
miss). Run with ``python -m bench.pages`` (``--db PATH`` to keep the seeded database and
reuse it next time, ``--runs``/``--audit-events`` for other sizes, ``--repeat N``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import django

GOAL_MS = 500.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="the SQLite file (kept; reused when already seeded)")
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--audit-events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    directory = None
    if args.db:
        path = Path(args.db).resolve()
    else:
        directory = tempfile.TemporaryDirectory(prefix="forge-bench-pages-")
        path = Path(directory.name) / "pages.sqlite3"
    os.environ["DATABASE_URL"] = f"sqlite:///{path}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forge_web.settings")
    django.setup()
    try:
        run(path, args)
    finally:
        if directory is not None:
            directory.cleanup()


def run(path: Path, args: argparse.Namespace) -> None:
    from django.core.management import call_command
    from django.test import Client

    from accounts.models import User
    from audit import services
    from audit.models import AuditEvent, WalkLock
    from bench.common import print_table
    from bench.seed_load import load
    from forge_web.warmup import warm_up

    call_command("migrate", verbosity=0)
    if not AuditEvent.objects.exists():
        print(f"seeding {path} ({args.runs:,} runs, {args.audit_events:,} audit events)")
        started = time.perf_counter()
        load(runs=args.runs, audit_events=args.audit_events)
        print(f"seeded in {time.perf_counter() - started:.0f} s; {path.stat().st_size >> 20} MiB")
    else:
        print(f"reusing {path}")
    warm_up()

    viewer, _ = User.objects.get_or_create(username="bench-viewer", defaults={"roles": ["viewer"]})
    client = Client()
    client.force_login(viewer)
    head = AuditEvent.objects.order_by("-seq").values_list("seq", "at").first()
    assert head is not None
    week_ago = (head[1] - _days(7)).strftime("%Y-%m-%dT%H:%M")
    month_ago = (head[1] - _days(30)).strftime("%Y-%m-%dT%H:%M")
    month_ago_plus = (head[1] - _days(29)).strftime("%Y-%m-%dT%H:%M")
    deep = max(head[0] - 500 * 50, 1)

    def get(url: str, status: int = 200) -> Callable[[], None]:
        def request() -> None:
            response = client.get(url)
            if response.status_code != status:
                raise SystemExit(f"{url}: {response.status_code}")
            if hasattr(response, "streaming_content"):
                b"".join(response.streaming_content)

        return request

    audit_pages = [
        ("audit, unfiltered", "/audit/"),
        ("audit, actor", "/audit/?actor=ada"),
        ("audit, action", "/audit/?action=run.resumed"),
        ("audit, one object", "/audit/?object_type=run&object_id=5000"),
        ("audit, last 7 days", f"/audit/?since={week_ago}"),
        (
            "audit, 1 day a month ago, type",
            f"/audit/?object_type=user&since={month_ago}&until={month_ago_plus}",
        ),
        ("audit, page 500", f"/audit/?before={deep}"),
    ]
    rows = []
    for label, url in audit_pages[:1]:
        rows.append((f"{label} (before a full walk)", *_ms(get(url), args.repeat)))

    # The full walk needs audit.verify (operators, admins), and a walk of an earlier
    # bench run on this database must not throttle this one.
    operator, _ = User.objects.get_or_create(
        username="bench-operator", defaults={"roles": ["operator"]}
    )
    walker = Client()
    walker.force_login(operator)
    WalkLock.objects.filter(pk=1).update(finished_at=None, expires_at=None)
    walker.get("/audit/")  # the CSRF cookie
    token = walker.cookies["csrftoken"].value
    started = time.perf_counter()
    response = walker.post("/audit/verify/", {"csrfmiddlewaretoken": token})
    walk_s = time.perf_counter() - started
    assert response.status_code == 302, response.status_code
    assert services.latest_full_walk() is not None

    for label, url in audit_pages:
        rows.append((label, *_ms(get(url), args.repeat)))
    for days in (30, 90):
        rows.append(
            (f"metrics page, {days} days", *_ms(get(f"/metrics/?days={days}"), args.repeat))
        )
        until = head[1]
        since = until - _days(days)
        api = f"/api/v1/metrics?since={since:%Y-%m-%dT%H:%M:%S}&until={until:%Y-%m-%dT%H:%M:%S}"
        rows.append((f"GET /api/v1/metrics, {days} days", *_ms(get(api), args.repeat)))
    rows.append(("run list", *_ms(get("/runs/"), args.repeat)))

    print()
    print_table(
        ("page", "median ms", "max ms", "goal"),
        [
            (label, f"{median:.1f}", f"{worst:.1f}", "ok" if median < GOAL_MS else "MISS")
            for label, median, worst in rows
        ],
    )
    rows_walked = AuditEvent.objects.count()
    print()
    print(
        f"full walk of the chain (POST /audit/verify/): {walk_s:.1f} s for {rows_walked:,} rows "
        f"({walk_s / max(rows_walked, 1) * 1e6:.1f} µs a row); the page shows its result and "
        "checks only newer rows from then on"
    )


def _ms(action: Callable[[], None], repeat: int) -> tuple[float, float]:
    action()  # warm: the first request of a kind pays for imports and caches
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples), max(samples)


def _days(n: int) -> timedelta:
    return timedelta(days=n)


if __name__ == "__main__":
    main()
