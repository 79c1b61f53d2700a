"""How long, and how much memory, refusing an oversized plan takes, and reading the largest
plan the limits accept.

Refusals (goal: each under 1 s and 256 MiB, the issue "Trust"'s bound):

- YAML: 4 MB of one flow list of two million ``1`` items (refused at ``max_nodes``);
- JSON: 4 MB of two million ``1`` items, and of 1.3 million ``{}`` (``max_nodes``);
- absurd nesting (issue 26): 100,000 levels of objects inside one step's ``args``
  (600 KB) as JSON text, JSON bytes (msgspec's own way) and YAML, and inside a Mermaid
  step's metadata (``document_too_deep``);
- Mermaid: a flowchart of 200,000 bare nodes (refused at the 5,001st, ``max_steps``), and
  one line whose two groups of 2,500 names would draw 6.25 million edges (``max_nodes``).

Each is timed against ``json.loads`` of the 4 MB JSON list, the C parser reading as many
bytes, alternately in the same run, so the ratio holds across machines. The peak is that
of Python's allocations (``tracemalloc``) in a separate run, since tracing slows it down.

Accepted: a plan of ``max_steps`` (5,000) steps as rich as the specification's example,
in each format, read with ``load_plan``; next to it, for YAML, PyYAML's plain
``yaml.load(text, CSafeLoader)`` of the same text (no limits), to show what the first pass
over the events costs. The machine is shared: run it twice before believing a miss.

Run with ``python -m bench.import_limits``.
"""

from __future__ import annotations

import gc
import json
import statistics
import time
import tracemalloc
from collections.abc import Callable

import yaml

from bench.common import print_table
from forge.errors import PlanDocumentError
from forge.plan import DEFAULT_LIMITS, dump_plan, from_data, load_plan

GOAL_MS = 1000.0
GOAL_MIB = 256.0
REPEATS = 5
RICH_STEP = {
    "description": "Read supplier contracts and purchase history",
    "tool": "sql_read",
    "args": {"query": "select * from contracts"},
    "tools_allowed": ["file_search", "sql_read"],
    "done_when": {
        "description": "Contracts summarised as structured facts",
        "required_keys": ["facts"],
        "checks": ["length(facts) > `0`"],
    },
    "timeout_s": 30,
    "retries": 0,
    "rollback_hint": "nothing to undo",
}


def refusals() -> list[tuple[str, str, str | bytes]]:
    """(case, format, source) of each document the limits must refuse."""
    deep = '{"a":' * 100_000 + "1" + "}" * 100_000
    deep_json = '{"goal": "g", "steps": [{"id": "a", "tool": "echo", "args": ' + deep + "}]}"
    groups = " & ".join(f"a{i}" for i in range(2_500)), " & ".join(f"b{i}" for i in range(2_500))
    return [
        (
            "YAML, 2M-item list, 4 MB",
            "yaml",
            "goal: g\nsteps: []\nx: [" + "1," * 1_999_999 + "1]\n",
        ),
        ("JSON, 2M-item list, 4 MB", "json", _json_list("1")),
        ("JSON, 1.3M empty objects", "json", _json_list("{}")),
        ("JSON text, args 100k deep", "json", deep_json),
        ("JSON bytes, args 100k deep", "json", deep_json.encode()),
        ("YAML, args 100k deep", "yaml", deep_json),
        (
            "Mermaid, step metadata 100k deep",
            "mermaid",
            f"flowchart TD\n    %% forge-step a: {{\"args\": {deep}}}\n    a\n",
        ),
        (
            "Mermaid, 200k nodes",
            "mermaid",
            "flowchart TD\n" + "".join(f"    n{i}\n" for i in range(200_000)),
        ),
        (
            "Mermaid, 6.25M-edge groups",
            "mermaid",
            f"flowchart TD\n    {groups[0]} --> {groups[1]}\n",
        ),
    ]


def _json_list(item: str) -> str:
    count = 4_000_000 // (len(item) + 1)
    return '{"goal": "g", "steps": [], "x": [' + ",".join([item] * count) + "]}"


def refuse(source: str | bytes, fmt: str) -> str:
    try:
        load_plan(source, fmt)
    except PlanDocumentError as error:
        return error.code
    raise AssertionError(f"the {fmt} document was accepted")


def paired_ms(first: Callable[[], object], second: Callable[[], object]) -> tuple[float, float]:
    """Median milliseconds of each action, timed alternately."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(REPEATS):
        for action, found in ((first, times[0]), (second, times[1])):
            gc.collect()
            started = time.perf_counter()
            action()
            found.append((time.perf_counter() - started) * 1000)
    return statistics.median(times[0]), statistics.median(times[1])


def peak_mib(action: Callable[[], object]) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def largest_accepted() -> dict[str, str]:
    steps = [
        {"id": f"s{n}", "depends_on": [f"s{n - 1}"] if n else [], **RICH_STEP}
        for n in range(DEFAULT_LIMITS.max_steps)
    ]
    document = from_data({"goal": "the largest plan the limits accept", "steps": steps})
    return {fmt: dump_plan(document, fmt) for fmt in ("yaml", "json", "mermaid")}


def main() -> None:
    baseline_text = _json_list("1")
    rows: list[list[object]] = []
    for case, fmt, source in refusals():
        code = refuse(source, fmt)
        ms, base = paired_ms(
            lambda s=source, f=fmt: refuse(s, f), lambda: json.loads(baseline_text)
        )
        peak = peak_mib(lambda s=source, f=fmt: refuse(s, f))
        met = ms < GOAL_MS and peak < GOAL_MIB
        rows.append([case, code, f"{ms:.0f}", f"{peak:.1f}", f"{base:.0f}", f"{ms / base:.2f}",
                     "met" if met else "MISSED"])  # fmt: skip
    print(
        f"Refusals (goal: under {GOAL_MS:g} ms and {GOAL_MIB:g} MiB); baseline: json.loads of 4 MB"
    )
    print_table(["case", "code", "median ms", "peak MiB", "baseline ms", "ratio", "goal"], rows)

    print()
    texts = largest_accepted()
    rows = []
    for fmt, text in texts.items():
        baseline: Callable[[], object] = lambda t=text: json.loads(t)  # noqa: E731
        label = "json.loads"
        if fmt == "yaml":
            baseline, label = (lambda t=text: yaml.load(t, Loader=yaml.CSafeLoader)), "CSafeLoader"
        elif fmt == "mermaid":
            baseline, label = (lambda t=texts["json"]: json.loads(t)), "json.loads of the JSON"
        ms, base = paired_ms(lambda t=text, f=fmt: load_plan(t, f), baseline)
        peak = peak_mib(lambda t=text, f=fmt: load_plan(t, f))
        rows.append([fmt, f"{len(text.encode()) / 2**20:.2f}", f"{ms:.0f}", f"{peak:.1f}", label,
                     f"{base:.0f}", f"{ms / base:.2f}"])  # fmt: skip
    print(f"Accepted: {DEFAULT_LIMITS.max_steps} steps as rich as the specification's example")
    print_table(["format", "MiB", "median ms", "peak MiB", "baseline", "ms", "ratio"], rows)


if __name__ == "__main__":
    main()
