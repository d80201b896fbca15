"""Policy values: parsing of every key, precedence of layers, and the ``--autotune PATH`` rewrite."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pytest_autotune.plugin.options import normalise_mode_argument
from pytest_autotune.policy import DEFAULT_POLICY, PolicyError, merge_policy, parse_tolerance_spec
from pytest_autotune.tuning.abort import AnyOf, Duration, Evaluations
from pytest_autotune.tuning.validation import parse_budget, validate_policy
from pytest_autotune.values import format_seconds, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2us", 2e-6),
        ("2µs", 2e-6),
        ("1.5ms", 1.5e-3),
        ("90s", 90.0),
        ("5m", 300.0),
        ("5min", 300.0),
        ("1h", 3600.0),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


def test_duration_without_unit_is_rejected() -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration("12")


def test_budgets() -> None:
    assert parse_budget(60) == 60
    assert parse_budget("60") == 60
    assert parse_budget("90s") == timedelta(seconds=90)
    assert parse_budget(timedelta(minutes=2)) == timedelta(minutes=2)
    either = parse_budget("60|10min")
    assert isinstance(either, AnyOf)
    assert repr(either) == repr(Evaluations(60) | Duration(600.0))
    condition = Evaluations(5)
    assert parse_budget(condition) is condition
    for bad in (0, -3, True, "abc", "0", timedelta(0), 1.5):
        with pytest.raises(ValueError):
            parse_budget(bad)


def test_tolerance_specs_follow_pytest_benchmark() -> None:
    assert parse_tolerance_spec("median:10%") == {"tolerance": pytest.approx(0.10)}
    assert parse_tolerance_spec("median:12.5%") == {"tolerance": pytest.approx(0.125)}
    assert parse_tolerance_spec("median:2us") == {"floor": pytest.approx(2e-6)}
    assert parse_tolerance_spec("median:5%,median:3us") == {
        "tolerance": pytest.approx(0.05),
        "floor": pytest.approx(3e-6),
    }
    with pytest.raises(ValueError, match="only 'median'"):
        parse_tolerance_spec("mean:5%")
    with pytest.raises(ValueError):
        parse_tolerance_spec("median:-5%")


def test_validate_policy_names_the_source_and_key() -> None:
    with pytest.raises(PolicyError, match=r"@tunable on t: invalid tolerance='ten'"):
        validate_policy({"tolerance": "ten"}, source="@tunable on t")
    with pytest.raises(PolicyError, match=r"env X: unknown policy key 'budgett'"):
        validate_policy({"budgett": 3}, source="env X")
    with pytest.raises(PolicyError, match="invalid strategy='nope': expected one of the strategies"):
        validate_policy({"strategy": "nope"}, source="s")
    with pytest.raises(PolicyError, match="invalid check='loud'"):
        validate_policy({"check": "loud"}, source="s")


def test_validate_policy_parses_text_values() -> None:
    parsed = validate_policy(
        {
            "tolerance": "15%",
            "floor": "5us",
            "finalists": "2",
            "maximize": "true",
            "strategy": "genetic:population=4",
        },
        source="s",
    )
    assert parsed["tolerance"] == pytest.approx(0.15)
    assert parsed["floor"] == pytest.approx(5e-6)
    assert parsed["finalists"] == 2
    assert parsed["maximize"] is True
    assert parsed["strategy"] == "genetic"
    assert parsed["strategy_options"] == {"population": 4}


def test_merge_policy_later_layers_win_and_record_explicit_keys() -> None:
    ini = validate_policy({"budget": 5, "check": "warn", "strategy": "genetic:population=4"}, source="ini")
    cli = validate_policy({"budget": 8}, source="cli")
    marker = validate_policy({"strategy": "anneal"}, source="marker")
    policy = merge_policy([ini, cli, marker])
    assert policy.budget == 8
    assert policy.check == "warn"
    assert policy.strategy == "anneal"
    assert policy.strategy_options == {}  # options of the ini's strategy do not carry over
    assert policy.explicit == {"budget", "check", "strategy", "strategy_options"}
    assert merge_policy([]).explicit == frozenset()
    assert DEFAULT_POLICY.effective_floor == 2e-6
    assert merge_policy([{"objective": "GFLOP/s"}]).effective_floor == 0.0


def test_format_seconds() -> None:
    assert [format_seconds(x) for x in (2.5, 1.5e-3, 1.3e-4, 2e-6, 5e-9, 0.0)] == [
        "2.5s",
        "1.5ms",
        "130us",
        "2us",
        "5ns",
        "0ns",
    ]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--autotune", "tests/"], ["--autotune=all", "tests/"]),
        (["--autotune", "missing", "tests/"], ["--autotune", "missing", "tests/"]),
        (["--autotune", "-x"], ["--autotune", "-x"]),
        (["-q", "--autotune"], ["-q", "--autotune"]),
        (["--autotune=missing", "k.py"], ["--autotune=missing", "k.py"]),
    ],
)
def test_autotune_followed_by_a_path_means_all(args: list[str], expected: list[str]) -> None:
    normalise_mode_argument(args)
    assert args == expected
