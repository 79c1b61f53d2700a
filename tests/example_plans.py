"""The plan documents under ``examples/``, for tests that check every reader and writer
against them (not the suites and answers of examples/eval, replies or server files, nor
the demo's planner script, whose plans tests/unit/planners reads)."""

from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PLANS = sorted(
    path
    for path in EXAMPLES.rglob("*")
    if path.suffix in {".yaml", ".json"}
    and path.parent.name != "eval"
    and path.relative_to(EXAMPLES).as_posix() != "demo/planner.yaml"
    and "goal" in path.read_text()
    and "steps" in path.read_text()
)
