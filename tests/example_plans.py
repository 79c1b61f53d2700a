"""The plan documents under ``examples/``, for tests that check every reader and writer
against them (not the suites and answers of examples/eval, replies or server files)."""

from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PLANS = sorted(
    path
    for path in EXAMPLES.rglob("*")
    if path.suffix in {".yaml", ".json"}
    and path.parent.name != "eval"
    and "goal" in path.read_text()
    and "steps" in path.read_text()
)
