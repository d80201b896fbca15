"""One parser per kind of option value: the accepted spellings, the refused ones, and the messages."""

from __future__ import annotations

import pytest

from pytest_autotune.policy import PolicyError
from pytest_autotune.strategies.bo.options import BOOptions
from pytest_autotune.tuning.validation import validate_policy
from pytest_autotune.values import BadValue, parse_bool, parse_float, parse_int, parse_size


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (False, False),
        (1, True),
        (0, False),
        *((text, True) for text in ("true", "True", " YES ", "on", "1")),
        *((text, False) for text in ("false", "FALSE", "no", " off", "0")),
    ],
)
def test_booleans_accepted(value: object, expected: bool) -> None:
    assert parse_bool(value) is expected


@pytest.mark.parametrize("value", ["", "maybe", "t", "2", 2, -1, 1.0, None, "enabled"])
def test_booleans_refused_naming_option_and_value(value: object) -> None:
    with pytest.raises(BadValue) as info:
        parse_bool(value, "prune")
    assert str(info.value) == (f"prune={value!r}: expected a boolean (true/false, yes/no, on/off or 1/0)")


@pytest.mark.parametrize(("value", "expected"), [(3, 3), ("12", 12), (" -3 ", -3), ("+4", 4), (4.0, 4)])
def test_integers_accepted(value: object, expected: int) -> None:
    assert parse_int(value) == expected


@pytest.mark.parametrize("value", [True, 2.5, "1.5", "abc", "", None, float("inf"), "1e3"])
def test_integers_refused(value: object) -> None:
    with pytest.raises(BadValue, match="expected an integer"):
        parse_int(value, "seed")


def test_integer_bounds() -> None:
    assert parse_int("1", minimum=1, maximum=3) == 1
    with pytest.raises(BadValue, match=r"^initial=0: expected an integer >= 1$"):
        parse_int(0, "initial", minimum=1)
    with pytest.raises(BadValue, match=r"within \[1, 3\]"):
        parse_int(4, minimum=1, maximum=3)


def test_numbers() -> None:
    assert parse_float("0.5") == 0.5
    assert parse_float(2) == 2.0
    assert parse_float(" 1e-3 ", minimum=0.0) == 1e-3
    for bad in (True, "nan", "inf", float("inf"), "ten", None, "-1"):
        with pytest.raises(BadValue, match="expected a number"):
            parse_float(bad, "noise_k", minimum=0.0)
    with pytest.raises(BadValue, match=r"^x=2\.0: expected a number within \[0\.0, 1\.0\]$"):
        parse_float(2.0, "x", minimum=0.0, maximum=1.0)


def test_sizes() -> None:
    assert parse_size("512MB") == 512_000_000
    assert parse_size("1.5GiB") == 3 << 29
    assert parse_size("off") is None
    assert parse_size(0) is None
    for bad in ("lots", True, float("inf"), -5.0):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_every_user_of_a_boolean_accepts_the_same_spellings() -> None:
    for text, expected in (("yes", True), ("OFF", False), ("1", True)):
        assert validate_policy({"maximize": text}, source="s") == {"maximize": expected}
        assert BOOptions.parse({"ordinal": text}).ordinal is expected
    with pytest.raises(PolicyError, match=r"^s: invalid maximize='maybe': expected a boolean \(true/false"):
        validate_policy({"maximize": "maybe"}, source="s")
    with pytest.raises(ValueError, match=r"^bo option ordinal='maybe': expected a boolean \(true/false"):
        BOOptions.parse({"ordinal": "maybe"})


def test_policy_numbers_name_key_and_value() -> None:
    with pytest.raises(PolicyError, match=r"^s: invalid finalists='0': expected an integer >= 1$"):
        validate_policy({"finalists": "0"}, source="s")
    with pytest.raises(PolicyError, match=r"^s: invalid noise_k=-1: expected a number >= 0\.0$"):
        validate_policy({"noise_k": -1}, source="s")
    assert validate_policy({"repeat": "3", "noise_k": "2.5"}, source="s") == {"repeat": 3, "noise_k": 2.5}


def test_a_flag_from_the_environment_uses_the_same_parser(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_k="def test_x(): pass")
    monkeypatch.setenv("PYTEST_AUTOTUNE_ALLOW_SHARED_DEVICE", "yes")
    pytester.runpytest().assert_outcomes(passed=1)
    monkeypatch.setenv("PYTEST_AUTOTUNE_ALLOW_SHARED_DEVICE", "maybe")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*environment variable PYTEST_AUTOTUNE_ALLOW_SHARED_DEVICE: 'maybe': expected a boolean*"]
    )


def test_the_policy_imports_only_the_values_and_the_rule() -> None:
    """Budget and strategy checks live above it (plugin/validation.py), so the policy sits low."""
    from pathlib import Path

    from benchmarks.structure.import_graph import import_graph

    edges, _ = import_graph(Path(__file__).resolve().parents[1] / "pytest_autotune")
    assert edges["pytest_autotune.policy"] == {"pytest_autotune.values", "pytest_autotune.timing.regression"}
    assert edges["pytest_autotune.timing.regression"] == {"pytest_autotune.values"}
    assert edges["pytest_autotune.values"] == set()
