"""Any valid plan written in a readable format reads back equal to itself."""

from hypothesis import given, settings

from forge.plan import dump_plan, load_plan
from tests.examples import examples
from tests.unit.plan.strategies import plans


@settings(max_examples=examples(100), deadline=None)
@given(plan=plans())
def test_loading_a_dumped_plan_gives_back_the_same_plan(plan):
    # One test for the three formats, so each generated plan serves all of them.
    for fmt in ("json", "yaml", "mermaid"):
        assert load_plan(dump_plan(plan, fmt), fmt) == plan, fmt
