"""@tunable, @constraint and @pytest.mark.autotune: validation, stacking, markers, node ids."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_autotune import Interval, Set, constraint, tunable
from pytest_autotune.api import get_spec
from pytest_autotune.policy import PolicyError
from pytest_autotune.space.errors import ConstraintError, EmptySpaceError

Entries = Callable[[], dict[str, dict[str, Any]]]


def test_constraint_stacks_above_or_below_tunable_alike() -> None:
    @constraint(lambda A, B: A * B <= 8)
    @tunable(A=Interval(1, 4), B=Set(1, 2, 4), budget=5)
    @constraint("A != 3")
    def test_one(autotune: Any) -> None: ...

    @tunable(A=Interval(1, 4), B=Set(1, 2, 4), budget=5)
    @constraint(lambda A, B: A * B <= 8)
    @constraint("A != 3")
    def test_two(autotune: Any) -> None: ...

    one, two = get_spec(test_one), get_spec(test_two)
    assert one is not None
    assert two is not None
    assert one.space.size == two.space.size == 8  # A in {1, 2, 4}, A*B <= 8: 3 + 3 + 2
    assert one.policy == {"budget": 5}
    assert get_spec(lambda: None) is None


def test_declaration_errors_name_the_test_and_parameter() -> None:
    with pytest.raises(
        ConstraintError, match=r"@tunable on .*test_bad: where= of parameter 'A'.*'Q'"
    ) as info:

        @tunable(A=Interval(1, 4, where=lambda Q: Q > 1))
        def test_bad(autotune: Any) -> None: ...

    assert info.value.parameter == "A"
    with pytest.raises(EmptySpaceError, match=r"@tunable on .*test_empty"):

        @tunable(A=Interval(1, 4))
        @constraint(lambda A: A > 10)
        def test_empty(autotune: Any) -> None: ...


def test_policy_keyword_errors() -> None:
    with pytest.raises(PolicyError, match=r"@tunable on .*test_budget: 'budget' is a policy keyword"):

        @tunable(budget=Interval(1, 3))
        def test_budget(autotune: Any) -> None: ...

    with pytest.raises(
        PolicyError, match=r"@tunable on .*test_size: keyword size=3 is neither a parameter kind"
    ):

        @tunable(A=Interval(1, 3), size=3)
        def test_size(autotune: Any) -> None: ...

    with pytest.raises(PolicyError, match=r"@tunable on .*test_x: invalid budget=-1"):

        @tunable(A=Interval(1, 3), budget=-1)
        def test_x(autotune: Any) -> None: ...

    with pytest.raises(PolicyError, match="at least one parameter"):

        @tunable(budget=3)
        def test_y(autotune: Any) -> None: ...

    with pytest.raises(TypeError, match="applied twice"):
        tunable(A=Interval(1, 3))(tunable(B=Interval(1, 3))(lambda autotune: None))


def test_import_error_reports_the_test_at_collection(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_bad="""
        from pytest_autotune import Interval, tunable

        @tunable(WPT=Interval(1, 8), LS=Interval(1, 4, where=lambda WPT, NOPE: True))
        def test_kernel(autotune):
            pass
        """
    )
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*ConstraintError: @tunable on test_bad.test_kernel: where= of parameter 'LS': reads unknown*"]
    )


def test_marker_is_added_so_m_autotune_selects_under_strict_markers(
    project: pytest.Pytester, two_tests: str
) -> None:
    project.makepyfile(test_k=two_tests, test_plain="def test_plain():\n    pass\n")
    result = project.runpytest("--strict-markers", "-m", "autotune", "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        ["test_k.py::test_a", "test_k.py::test_b", "*2/3 tests collected (1 deselected)*"]
    )


def test_configurations_never_appear_in_node_ids(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_k="""
        import pytest
        from pytest_autotune import Interval, tunable

        @tunable(A=Interval(1, 6), strategy="exhaustive")
        @pytest.mark.parametrize("n", [8, 16])
        def test_sizes(autotune, n):
            autotune.measure(lambda: None)
        """
    )
    result = project.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(
        ["test_k.py::test_sizes[[]8]", "test_k.py::test_sizes[[]16]", "2 tests collected*"]
    )


MISUSE = """
import pytest
from pytest_autotune import Interval, constraint, tunable

@constraint(lambda A: A > 1)
def test_constraint_alone():
    pass

@pytest.mark.autotune(budget=3)
def test_marker_alone():
    pass

@tunable(A=Interval(1, 3))
def test_no_fixture():
    pass

@tunable(A=Interval(1, 3))
@pytest.mark.autotune(budgett=3)
def test_bad_marker(autotune):
    autotune.measure(lambda: None)

@tunable(A=Interval(1, 3))
@pytest.mark.autotune(3)
def test_positional_marker(autotune):
    autotune.measure(lambda: None)

def test_fixture_without_tunable(autotune):
    pass
"""


def test_misuse_fails_setup_with_the_test_named(project: pytest.Pytester) -> None:
    project.makepyfile(test_misuse=MISUSE)
    result = project.runpytest("-rE")
    result.assert_outcomes(errors=6)
    result.stdout.fnmatch_lines_random(
        [
            "*test_constraint_alone: @constraint needs @tunable*",
            "*test_marker_alone: @pytest.mark.autotune(...) applies only to @tunable tests*",
            "*test_no_fixture: a @tunable test must request the 'autotune' fixture*",
            "*@pytest.mark.autotune on test_misuse.py::test_bad_marker: unknown policy key 'budgett'*",
            "*test_positional_marker: @pytest.mark.autotune takes keywords only*",
            "*test_fixture_without_tunable: the autotune fixture is only for @tunable tests*",
        ]
    )


PRECEDENCE = """
import pytest
from pytest_autotune import Interval, Set, tunable

@tunable(A=Interval(1, 6), B=Set(1, 2, 3), strategy="exhaustive", budget=7)
def test_declared(autotune):
    autotune.measure(lambda: None)

@tunable(A=Interval(1, 6), B=Set(1, 2, 3), strategy="exhaustive", budget=7)
@pytest.mark.autotune(budget=4, strategy="random")
def test_marked(autotune):
    autotune.measure(lambda: None)

@tunable(A=Interval(1, 6), B=Set(1, 2, 3))
def test_plain(autotune):
    autotune.measure(lambda: None)
"""


def test_precedence_marker_then_decorator_then_command_line_env_ini(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, stored_entries: Entries
) -> None:
    project.makepyfile(test_p=PRECEDENCE)
    project.makeini("[pytest]\nautotune_budget = 2\nautotune_strategy = random\n")
    monkeypatch.setenv("PYTEST_AUTOTUNE_BUDGET", "3")
    project.runpytest("--autotune").assert_outcomes(passed=3)

    def trials() -> dict[str, tuple[int, str]]:
        return {
            k.split("::")[1]: (v["tuning"]["trials"], v["tuning"]["strategy"])
            for k, v in stored_entries().items()
        }

    # env (3) beats ini (2); the decorator (7, exhaustive) and the marker (4, random) beat both
    assert trials() == {
        "test_declared": (7, "exhaustive"),
        "test_marked": (4, "random"),
        "test_plain": (3, "random"),
    }
    project.runpytest("--autotune", "--autotune-budget=5").assert_outcomes(passed=3)
    assert trials()["test_plain"] == (5, "random")  # the command line beats the environment
    assert trials()["test_declared"] == (7, "exhaustive")


@pytest.mark.parametrize(
    ("args", "env", "ini", "message"),
    [
        (["--autotune-budget=lots"], {}, "", "command line --autotune-budget: invalid budget='lots'"),
        (
            [],
            {"PYTEST_AUTOTUNE_CHECK": "loud"},
            "",
            "environment variable PYTEST_AUTOTUNE_CHECK: invalid check",
        ),
        ([], {}, "autotune_tolerance = mean:5%", "ini key autotune_tolerance: 'mean:5%': only 'median'"),
        (["--autotune-strategy=nope"], {}, "", "invalid strategy='nope': expected one of the strategies"),
        (["--autotune", "--autotune-update-baseline"], {}, "", "cannot be combined"),
    ],
)
def test_bad_option_values_are_usage_errors_naming_their_source(
    project: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    two_tests: str,
    args: list[str],
    env: dict[str, str],
    ini: str,
    message: str,
) -> None:
    project.makepyfile(test_k=two_tests)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if ini:
        project.makeini(f"[pytest]\n{ini}\n")
    result = project.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])


def test_help_lists_every_option_with_its_ini_and_env(project: pytest.Pytester) -> None:
    result = project.runpytest("--help")
    result.stdout.fnmatch_lines(
        [
            "auto-tuning of @tunable kernel tests (pytest-autotune):",
            "*--autotune=[[]MODE]*",
            "*--autotune-budget=BUDGET*",
            "*--autotune-tolerance=EXPR*",
            "*--autotune-allow-shared-device*",
        ]
    )
    text = " ".join(result.stdout.str().split())
    assert "ini: autotune_tolerance, env: PYTEST_AUTOTUNE_TOLERANCE" in text
