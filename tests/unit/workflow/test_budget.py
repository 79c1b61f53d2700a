import pytest

from forge.workflow import WorkflowBudget


def _budget() -> WorkflowBudget:
    return WorkflowBudget(max_steps=3, max_tokens=100, max_cost=1.0)


def test_a_reservation_over_the_token_limit_is_refused_though_steps_and_cost_fit():
    budget = _budget()
    budget.consume(1, 40, 0.25)

    assert budget.can_reserve(1, 70, 0.25) is False
    with pytest.raises(RuntimeError, match="tokens"):
        budget.consume(1, 70, 0.25)


def test_a_refused_consumption_changes_no_counter():
    budget = _budget()
    budget.consume(1, 40, 0.25)

    with pytest.raises(RuntimeError):
        budget.consume(1, 70, 0.25)

    assert (budget.used_steps, budget.used_tokens, budget.used_cost) == (1, 40, 0.25)


def test_exactly_reaching_every_limit_is_allowed():
    budget = _budget()

    assert budget.can_reserve(3, 100, 1.0) is True
    budget.consume(3, 100, 1.0)
    assert (budget.used_steps, budget.used_tokens, budget.used_cost) == (3, 100, 1.0)
    assert budget.can_reserve(0, 0, 0) is True
    assert budget.can_reserve(1, 0, 0) is False


@pytest.mark.parametrize("dimension", ["steps", "tokens", "cost"])
def test_each_dimension_alone_can_refuse(dimension):
    amounts = {"steps": (4, 0, 0.0), "tokens": (0, 101, 0.0), "cost": (0, 0, 1.01)}[dimension]

    assert _budget().can_reserve(*amounts) is False
    with pytest.raises(RuntimeError, match=dimension):
        _budget().consume(*amounts)


@pytest.mark.parametrize("amounts", [(-1, 0, 0.0), (0, -1, 0.0), (0, 0, -0.5)])
def test_negative_amounts_are_refused(amounts):
    budget = _budget()

    with pytest.raises(ValueError):
        budget.can_reserve(*amounts)
    with pytest.raises(ValueError):
        budget.consume(*amounts)
    assert (budget.used_steps, budget.used_tokens, budget.used_cost) == (0, 0, 0.0)
