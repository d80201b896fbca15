"""Issue 23, run-time part: bad option values, bad measured values and narrow prune selections.

Each test drives the plugin through ``pytester`` and checks what a user sees: a usage error (exit
status 4) naming the option before any tuning, a failed test naming itself and the configuration,
or a refused prune that keeps every entry.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

Entries = Callable[[], dict[str, dict[str, Any]]]

PARAMETRIZED = """
import json
import pytest
from pytest_autotune import Interval, tunable


@pytest.mark.parametrize("n", [1, 2, 3])
@tunable(A=Interval(1, 3, default=1), strategy="exhaustive")
def test_t(autotune, n):
    with open("calls.jsonl", "a") as f:
        f.write(json.dumps(autotune.config) + "\\n")
    autotune.measure(lambda: None)
"""


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--autotune-strategy=genetic:population=abc", "option population must be an integer, got 'abc'"),
        ("--autotune-strategy=random:bogus=1", "strategy 'random': unknown option(s) bogus"),
        ("--autotune-strategy=anneal:cycle=0", "option cycle=0 must be at least 1"),
        ("--autotune-tolerance=10", "'10' has no unit; write a percentage (median:10%)"),
        ("--autotune-tolerance=median:0.5", "'0.5' has no unit"),
        ("--autotune-json=/proc/nope/x.json", "--autotune-json: cannot write /proc/nope/x.json"),
        ("--autotune-budget=abc", "--autotune-budget: invalid budget='abc'"),
        ("--autotune-budget=-5", "--autotune-budget: invalid budget='-5'"),
        ("--autotune-budget=0", "a number of evaluations must be positive"),
        ("--autotune-seed=1.5", "--autotune-seed: invalid seed='1.5'"),
        ("--autotune-trial-timeout=0", "'0' is not a positive duration (use off for no limit)"),
        ("--autotune-trial-timeout=-3", "--autotune-trial-timeout: invalid trial_timeout='-3'"),
        ("--autotune-worker-memory=lots", "--autotune-worker-memory: invalid worker_memory='lots'"),
        ("--autotune-transfer=on", "--autotune-transfer: invalid value 'on'; expected auto or off"),
    ],
)
def test_a_bad_option_is_a_usage_error_before_any_tuning(
    project: pytest.Pytester, option: str, message: str
) -> None:
    project.makepyfile(test_k=PARAMETRIZED)
    result = project.runpytest("--autotune", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert not (project.path / "calls.jsonl").exists()  # nothing was tuned


def test_bad_bayesian_options_are_refused_at_start_up(project: pytest.Pytester) -> None:
    """The issue's example, in a subprocess (the Bayesian engine's torch loads once per process)."""
    project.makepyfile(test_k=PARAMETRIZED.replace(', strategy="exhaustive"', ""))
    result = project.runpytest_subprocess("--autotune", "--autotune-strategy=bo:initial=abc")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "command line --autotune-strategy: invalid strategy='bo:initial=abc': "
        "expected bo option initial='abc': expected an integer"
    ) in result.stderr.str()


def test_bad_values_from_ini_and_environment_name_their_source(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_k=PARAMETRIZED)
    project.makeini("[pytest]\nautotune_tolerance = 10\n")
    result = project.runpytest("--autotune")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ini key autotune_tolerance: '10': '10' has no unit" in result.stderr.str()
    project.makeini("[pytest]\n")
    monkeypatch.setenv("PYTEST_AUTOTUNE_STRATEGY", "local:initial=-1")
    result = project.runpytest("--autotune")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "environment variable PYTEST_AUTOTUNE_STRATEGY: invalid strategy" in result.stderr.str()


def test_bad_strategy_options_on_a_test_fail_at_collection_naming_it(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_k="""
        import pytest
        from pytest_autotune import Interval, tunable

        @tunable(A=Interval(1, 3), strategy="genetic:population=abc")
        def test_declared(autotune):
            autotune.measure(lambda: None)
        """,
        test_m="""
        import pytest
        from pytest_autotune import Interval, tunable

        @pytest.mark.autotune(strategy="anneal:cycle=0")
        @tunable(A=Interval(1, 3))
        def test_marked(autotune):
            autotune.measure(lambda: None)
        """,
    )
    declared = project.runpytest("--autotune", "test_k.py")
    declared.stdout.fnmatch_lines(
        ["*@tunable on test_k.test_declared: invalid strategy=*population must be an integer*"]
    )
    assert declared.ret == pytest.ExitCode.INTERRUPTED  # a collection error
    marked = project.runpytest("--autotune", "test_m.py")
    marked.assert_outcomes(errors=1)
    marked.stdout.fnmatch_lines(
        ["*@pytest.mark.autotune on test_m.py::test_marked: invalid strategy=*cycle=0 must be at least 1*"]
    )
    assert not (project.path / "autotune.json").exists()


BAD_TIMER = """
import os
import pytest


class BadTimer:
    def __call__(self, fn, autotune):
        value = 1e-4 * autotune.config["A"]
        if autotune.config["A"] == 2:
            value = eval(os.environ["BAD_TIME"])
        return fn(), value


@pytest.fixture
def autotune_timer():
    return BadTimer()
"""


@pytest.mark.parametrize(
    "bad", ["-1e-4", "0", "0.0", "float('nan')", "float('inf')", "'1e-4'", "True", "None"]
)
def test_a_bad_time_from_the_timer_fails_the_test_naming_it_and_the_configuration(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, bad: str
) -> None:
    project.makeconftest(BAD_TIMER)
    project.makepyfile(
        test_k="""
        from pytest_autotune import Interval, tunable

        @tunable(A=Interval(1, 3, default=1), strategy="exhaustive")
        def test_t(autotune):
            autotune.measure(lambda: None)
        """
    )
    monkeypatch.setenv("BAD_TIME", bad)
    result = project.runpytest("--autotune")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*test_k.py::test_t: the timer BadTimer returned * for configuration {'A': 2}*"]
    )
    assert not (project.path / "autotune.json").exists()  # never a winner or a baseline


@pytest.mark.parametrize("bad", ["-1.0", "0", "float('nan')", "'fast'", "False"])
def test_a_bad_recorded_time_fails_the_test(project: pytest.Pytester, bad: str) -> None:
    project.makepyfile(
        test_k=f"""
        from pytest_autotune import Interval, tunable

        @tunable(A=Interval(1, 3, default=1), strategy="exhaustive")
        def test_t(autotune):
            autotune.record(1e-3 if autotune.config["A"] != 3 else {bad})
        """
    )
    result = project.runpytest("--autotune")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_k.py::test_t: autotune.record got * for configuration {'A': 3}*"])


def test_a_non_time_objective_may_record_any_finite_number(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_k="""
        from pytest_autotune import Interval, tunable

        @tunable(A=Interval(1, 3, default=1), strategy="exhaustive", objective="score", maximize=True)
        def test_t(autotune):
            autotune.record(-10.0 + autotune.config["A"])
        """
    )
    project.runpytest("--autotune").assert_outcomes(passed=1)


def test_prune_with_a_node_id_keeps_every_entry(project: pytest.Pytester, stored_entries: Entries) -> None:
    project.makepyfile(test_x=PARAMETRIZED)
    project.runpytest("--autotune").assert_outcomes(passed=3)
    result = project.runpytest("--autotune-prune", "test_x.py::test_t[2]")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["--autotune-prune skipped: node ids select only part of their file*"])
    assert "unused entries" not in result.stdout.str()
    assert sorted(stored_entries()) == [f"test_x.py::test_t[{n}]" for n in (1, 2, 3)]


def test_prune_refuses_lf_and_keeps_entries_of_a_file_that_fails_to_import(
    project: pytest.Pytester, stored_entries: Entries
) -> None:
    project.makepyfile(test_x=PARAMETRIZED, test_y=PARAMETRIZED)
    project.runpytest("--autotune").assert_outcomes(passed=6)
    lf = project.runpytest("--autotune-prune", "--lf")
    lf.stdout.fnmatch_lines(["--autotune-prune skipped: --lf selects only the tests that failed last time"])
    (project.path / "test_y.py").write_text("import no_such_module_here\n" + PARAMETRIZED)
    broken = project.runpytest("--autotune-prune", "--continue-on-collection-errors")
    broken.stdout.fnmatch_lines(["--autotune-prune skipped: 1 collection error(s)"])
    assert len(stored_entries()) == 6


def test_a_refusal_is_printed_once_under_xdist(project: pytest.Pytester) -> None:
    project.makepyfile(test_x=PARAMETRIZED)
    result = project.runpytest_subprocess("-n", "2", "--autotune", "-p", "no:randomly")
    result.assert_outcomes(errors=3)
    output = result.stdout.str()
    assert "During handling of the above exception" not in output
    # The errors section (the short summary repeats each message, cut to the terminal's width
    # unless CI is set, so it is left out of the count).
    errors = output.split("short test summary info")[0]
    assert errors.count("test_x.py::test_t[1]: refusing to tune on") == 1


def test_the_library_tuner_takes_any_finite_objective_value() -> None:
    """A library objective is any number (a score may be negative); NaN/inf are failed trials."""
    from pytest_autotune import Interval, Tuner, build_space

    space = build_space({"A": Interval(1, 4)})
    result = Tuner(space, "exhaustive").run(lambda c: -float(c["A"]))
    assert result.best_value == -4.0
    result = Tuner(space, "exhaustive").run(lambda c: float("nan") if c["A"] == 1 else float(c["A"]))
    assert result.counts["runtime"] == 1
    assert result.best_value == 2.0
    with pytest.raises(TypeError, match="must return a number or an Outcome, got True"):
        Tuner(space, "exhaustive").run(lambda c: True)
    with pytest.raises(TypeError, match="got '1'"):
        Tuner(space, "exhaustive").run(lambda c: "1")


def test_json_report_lists_nothing_lost(project: pytest.Pytester) -> None:
    """``--autotune-json`` into a folder that does not exist yet is created at the end."""
    project.makepyfile(test_x=PARAMETRIZED)
    project.runpytest("--autotune", "--autotune-json=out/sub/bench.json").assert_outcomes(passed=3)
    data = json.loads((project.path / "out" / "sub" / "bench.json").read_text())
    assert len(data["benchmarks"]) == 3
    assert not list(project.path.glob("out/sub/.autotune-probe-*"))
