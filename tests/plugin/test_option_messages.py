"""Messages about strategy options say what is wrong with the value the user wrote (issue 44, item 12).

``max_fevals=None`` is a known option with no value, not an unknown one; ``time_limit=nan`` is
echoed as written, not as the ``'nans'`` it was rewritten to; a lower bound alone reads "at least".
"""

from __future__ import annotations

import pytest

from pytest_autotune.policy import PolicyError
from pytest_autotune.tuning.validation import validate_policy


def _message(values: dict[str, object]) -> str:
    with pytest.raises(PolicyError) as caught:
        validate_policy(values, source="@tunable(test_k)")
    return str(caught.value)


@pytest.mark.parametrize("option", ["max_fevals", "time_limit"])
def test_a_budget_option_of_none_says_it_needs_a_value(option: str) -> None:
    text = _message({"strategy_options": {option: None}})
    assert "unknown option" not in text
    assert f"{option}=None" in text
    assert "needs a value" in text


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -5, 0])
def test_a_time_limit_that_is_no_positive_number_is_echoed_as_written(value: float) -> None:
    text = _message({"strategy_options": {"time_limit": value}})
    assert f"time_limit={value!r}" in text
    assert f"'{value}s'" not in text
    assert "a positive number of seconds" in text


def test_max_fevals_that_is_no_positive_integer_is_echoed_as_written() -> None:
    text = _message({"strategy_options": {"max_fevals": 2.5}})
    assert "max_fevals=2.5" in text
    assert "a positive whole number of evaluations" in text


def test_a_lower_bound_alone_reads_at_least() -> None:
    text = _message({"strategy": "genetic_algorithm", "strategy_options": {"popsize": 0}})
    assert "population=0 must be at least 2" in text
    assert "outside [2]" not in text
