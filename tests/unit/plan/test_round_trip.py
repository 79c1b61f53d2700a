"""Any valid plan written in a readable format reads back equal to itself."""

from hypothesis import given, settings
from hypothesis import strategies as st

from forge.plan import Budget, DoneWhen, Estimate, PlanDocument, Step, dump_plan, load_plan
from forge.plan.document import RISK_LEVELS
from forge.plan.limits import ID_PATTERN

ids = st.from_regex(ID_PATTERN, fullmatch=True)
# Any text, and text made of what every format has to escape, to reach the escapes often.
HOSTILE = "\"'#;:<>&`[](){}|\\%-=.~ \n\r\t\x00\x85\u2028\ufeffo\U0001f600"
texts = st.text(max_size=30) | st.text(alphabet=HOSTILE, max_size=30)
counts = st.integers(min_value=0, max_value=10**12)
amounts = st.floats(min_value=0, allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
done_whens = st.builds(
    DoneWhen,
    description=texts,
    required_keys=st.lists(texts, max_size=2).map(tuple),
    checks=st.lists(texts, max_size=2).map(tuple),
)


@st.composite
def plans(draw):
    step_ids = draw(st.lists(ids, unique=True, max_size=6))
    steps = []
    for index, step_id in enumerate(step_ids):
        earlier = step_ids[:index]
        depends_on = (
            draw(st.lists(st.sampled_from(earlier), unique=True, max_size=3)) if earlier else []
        )
        steps.append(
            Step(
                id=step_id,
                description=draw(texts),
                depends_on=tuple(depends_on),
                tool=draw(st.none() | texts),
                args=draw(st.dictionaries(texts, json_values, max_size=3)),
                tools_allowed=tuple(draw(st.lists(texts, max_size=2))),
                done_when=draw(st.none() | done_whens),
                timeout_s=draw(st.none() | amounts.filter(bool)),
                retries=draw(st.integers(min_value=0, max_value=5)),
                rollback_hint=draw(texts),
                estimate=draw(st.none() | st.builds(Estimate, tokens=counts, cost=amounts)),
            )
        )
    return PlanDocument(
        goal=draw(texts),
        steps=tuple(steps),
        deliverable=draw(st.none() | st.sampled_from(step_ids)) if step_ids else None,
        risk_level=draw(st.sampled_from(RISK_LEVELS)),
        requires_approval_before=tuple(draw(st.lists(texts, max_size=2))),
        budget=draw(
            st.builds(
                Budget,
                max_steps=st.none() | counts,
                max_tokens=st.none() | counts,
                max_cost=st.none() | amounts,
            )
        ),
        max_replans=draw(st.integers(min_value=0, max_value=10)),
    )


@settings(max_examples=100, deadline=None)
@given(plan=plans())
def test_loading_a_dumped_plan_gives_back_the_same_plan(plan):
    # One test for the three formats, so each generated plan serves all of them.
    for fmt in ("json", "yaml", "mermaid"):
        assert load_plan(dump_plan(plan, fmt), fmt) == plan, fmt
