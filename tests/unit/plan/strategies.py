"""Hypothesis strategies for plan documents: ``plans()`` any valid plan every readable
format can hold; ``rich_plans()`` those with what only some hold (duration estimates,
milestones, automatic replans) and floats of every size."""

from dataclasses import replace

import msgspec
from hypothesis import strategies as st

from forge.plan import Budget, DoneWhen, Estimate, Milestone, PlanDocument, Step
from forge.plan.document import RISK_LEVELS
from forge.plan.limits import ID_PATTERN, QUANTITY_LIMIT

ids = st.from_regex(ID_PATTERN, fullmatch=True)
# Any text, and text made of what every format has to escape, to reach the escapes often.
HOSTILE = "\"'#;:<>&`[](){}|\\%-=.~ \n\r\t\x00\x85\u2028\ufeffo\U0001f600"
texts = st.text(max_size=30) | st.text(alphabet=HOSTILE, max_size=30)
counts = st.integers(min_value=0, max_value=QUANTITY_LIMIT)
amounts = st.floats(min_value=0, max_value=QUANTITY_LIMIT, allow_nan=False, allow_infinity=False)
# Floats json and msgspec spell differently, and ordinary ones. A plan's amounts stop at
# QUANTITY_LIMIT, so the larger ones (1e16 and up) are reached in arguments.
ODD_FLOATS = st.sampled_from([1e16, 1.5e20, 1e-05, 2.5e-07, 1e-10, 5e-324, 0.0001, 0.1, 3.0])
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | ODD_FLOATS
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


any_amounts = (
    amounts
    | ODD_FLOATS.filter(lambda value: value <= QUANTITY_LIMIT)
    | st.integers(min_value=0, max_value=QUANTITY_LIMIT)
)


@st.composite
def rich_plans(draw):
    plan = draw(plans())
    steps = []
    for step in plan.steps:
        estimate = draw(
            st.none()
            | st.builds(
                Estimate,
                tokens=counts,
                cost=any_amounts,
                seconds=st.none() | any_amounts,
            )
        )
        timeout = draw(st.none() | any_amounts.filter(bool))
        steps.append(msgspec.structs.replace(step, estimate=estimate, timeout_s=timeout))
    step_ids = [step.id for step in steps]
    cut = draw(st.integers(min_value=0, max_value=len(step_ids)))
    milestones = draw(
        st.just(())
        | st.just(
            (
                Milestone(id="first", title=draw(texts), steps=tuple(step_ids[:cut]), review=True),
                Milestone(id="second", steps=tuple(step_ids[cut:])),
            )
        )
    )
    return replace(
        plan,
        steps=tuple(steps),
        milestones=milestones,
        replan=draw(st.sampled_from(["manual", "auto"])),
        budget=Budget(max_cost=draw(st.none() | any_amounts)),
    )
