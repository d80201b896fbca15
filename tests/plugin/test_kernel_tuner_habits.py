"""Kernel Tuner habits a newcomer brings (issue 38, items 13-17), accepted or refused with the spelling.

Defaults for list-declared parameters, Kernel Tuner's strategy names and ``strategy_options``, a
warning when the kernel redefines a tuned define, build errors that name the user's file and line,
and hints for keywords that belong elsewhere.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from pytest_autotune import Interval, Set, tunable
from pytest_autotune.api import TunableSpec, get_spec
from pytest_autotune.backends.opencl.defines import define_source, line_directive, redefined_defines
from pytest_autotune.policy import PolicyError
from pytest_autotune.space.errors import SpaceError
from pytest_autotune.strategies import KERNEL_TUNER_ALIASES, KERNEL_TUNER_ONLY
from pytest_autotune.strategies.options import budget_from_options
from pytest_autotune.tuning.validation import validate_policy

pytest_plugins = ["pytester"]


def _spec(fn: Any) -> TunableSpec:
    spec = get_spec(fn)
    assert spec is not None
    return spec


# -- 13: a default for list-declared parameters ---------------------------------------------------------
def test_defaults_keyword_sets_the_default_of_listed_parameters() -> None:
    @tunable(loop_unroll_factor=[0, 1, 2, 4], block_size_x=[32, 64, 128], defaults={"loop_unroll_factor": 1})
    def test_reduce(autotune: Any) -> None: ...

    default = _spec(test_reduce).space.default_config()
    assert default["loop_unroll_factor"] == 1
    assert default["block_size_x"] == 32  # no default given: the smallest value, as before


def test_defaults_keyword_also_serves_parameter_kinds_without_a_default() -> None:
    @tunable(WPT=Interval(1, 8), VW=Set(1, 2, 4), defaults={"WPT": 4, "VW": 2})
    def test_kinds(autotune: Any) -> None: ...

    assert _spec(test_kinds).space.default_config() == {"WPT": 4, "VW": 2}


@pytest.mark.parametrize(
    ("declaration", "message"),
    [
        ({"x": [1, 2], "defaults": {"y": 1}}, "defaults= names 'y', which is not a declared parameter"),
        ({"x": [1, 2], "defaults": {"x": 3}}, "default 3 is not in its domain"),
        ({"x": Set(1, 2, default=1), "defaults": {"x": 2}}, "give its default once"),
        ({"x": [1, 2], "defaults": [("x", 1)]}, "is not a mapping of parameter names to values"),
    ],
)
def test_bad_defaults_name_the_test_and_parameter(declaration: dict[str, Any], message: str) -> None:
    with pytest.raises((PolicyError, SpaceError), match=message) as caught:

        @tunable(**declaration)
        def test_bad(autotune: Any) -> None: ...

    assert "test_bad" in str(caught.value)


# -- 14: Kernel Tuner's strategy names and strategy_options --------------------------------------------
@pytest.mark.parametrize(("kernel_tuner", "ours"), sorted(KERNEL_TUNER_ALIASES.items()))
def test_kernel_tuner_strategy_names_are_aliases(kernel_tuner: str, ours: str) -> None:
    assert validate_policy({"strategy": kernel_tuner}, source="t")["strategy"] == ours


@pytest.mark.parametrize("name", sorted(KERNEL_TUNER_ONLY))
def test_kernel_tuner_names_without_a_counterpart_say_what_to_use(name: str) -> None:
    with pytest.raises(PolicyError) as caught:
        validate_policy({"strategy": name}, source="@tunable on t")
    message = str(caught.value)
    assert f"Kernel Tuner's {name!r} has no counterpart here" in message
    assert f"use {KERNEL_TUNER_ONLY[name]!r}" in message
    assert "expected unknown strategy" not in message  # the old, garbled wording


def test_an_unknown_strategy_reads_as_one_sentence() -> None:
    with pytest.raises(PolicyError) as caught:
        validate_policy({"strategy": "nope"}, source="@tunable on t")
    assert str(caught.value).startswith(
        "@tunable on t: invalid strategy='nope': expected one of the strategies anneal, bandit, bo,"
    )


def test_max_fevals_and_time_limit_are_the_budget() -> None:
    assert validate_policy({"strategy_options": {"max_fevals": 10}}, source="t") == {
        "strategy_options": {},
        "budget": 10,
    }
    budget = validate_policy({"strategy_options": {"max_fevals": 10, "time_limit": 60}}, source="t")["budget"]
    assert "10" in repr(budget)  # whichever comes first: ten evaluations ...
    assert "60" in repr(budget)  # ... or a minute
    assert budget_from_options({"time_limit": 90, "popsize": 4}) == ("90s", {"popsize": 4})


def test_max_fevals_beside_budget_is_refused_with_the_spelling() -> None:
    with pytest.raises(PolicyError, match="keep budget= only"):
        validate_policy({"budget": 20, "strategy_options": {"max_fevals": 10}}, source="t")


def test_kernel_tuner_option_names_are_translated_and_checked() -> None:
    parsed = validate_policy(
        {"strategy": "genetic_algorithm", "strategy_options": {"popsize": 8}}, source="t"
    )
    assert parsed == {"strategy": "genetic", "strategy_options": {"population": 8}}
    assert validate_policy({"strategy": "diff_evo:F=0.5,CR=0.2"}, source="t")["strategy_options"] == {
        "f": 0.5,
        "cr": 0.2,
    }
    with pytest.raises(PolicyError, match="unknown option"):
        validate_policy({"strategy": "simulated_annealing", "strategy_options": {"maxiter": 3}}, source="t")


def test_strategy_options_without_a_strategy_fail_at_collection(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from pytest_autotune import tunable

        @tunable(x=[1, 2, 3], strategy_options={"max_fevals": 2, "no_such_option": 1})
        def test_k(autotune):
            autotune.record(float(autotune.config["x"]))
        """
    )
    result = pytester.runpytest("--autotune", "--autotune-strategy=random", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*test_k*strategy 'random'*unknown option*no_such_option*"])
    assert result.ret != 0


def test_kernel_tuner_strategy_and_budget_tune_through_the_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from pytest_autotune import tunable

        @tunable(x=[1, 2, 3, 4, 5, 6], strategy="random_sample", strategy_options={"max_fevals": 3})
        def test_k(autotune):
            autotune.record(float(autotune.config["x"]))
        """
    )
    result = pytester.runpytest("--autotune", "--autotune-isolate=none", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    import json

    entries = json.loads((pytester.path / "autotune.json").read_text())
    dumped = json.dumps(entries)
    assert '"random"' in dumped  # the strategy recorded under its own name


# -- 17: keywords that belong elsewhere --------------------------------------------------------------
@pytest.mark.parametrize(
    ("keyword", "hint"),
    [
        ("local_memory", "geometry=Geometry(local_memory=...)"),
        ("problem_size", "geometry=Geometry(problem_size=...)"),
        ("grid_div_x", "geometry=Geometry(grid_div_x=...)"),
        ("max_fevals", "budget=N"),
        ("iterations", "repeat=N"),
        ("compiler_options", "autotune.build(context, source, options=[...])"),
        ("answer", "assert"),
    ],
)
def test_misplaced_keywords_say_where_they_belong(keyword: str, hint: str) -> None:
    with pytest.raises(PolicyError) as caught:

        @tunable(x=[1, 2], **{keyword: 4096})
        def test_k(autotune: Any) -> None: ...

    assert f"keyword {keyword}=4096 does not belong on @tunable" in str(caught.value)
    assert hint in str(caught.value)


# -- issue 44 item 1: a Kernel Tuner keyword is refused whatever its value type ---------------------------
@pytest.mark.parametrize(
    ("keyword", "value", "hint"),
    [
        ("grid_div_x", ["block_size_x", "tile_x"], "geometry=Geometry(grid_div_x=...)"),
        ("grid_div_y", ("block_size_y",), "geometry=Geometry(grid_div_y=...)"),
        ("grid_div_z", "block_size_z", "geometry=Geometry(grid_div_z=...)"),
        ("problem_size", (1000, 1000), "geometry=Geometry(problem_size=...)"),
        ("local_size", lambda p: (p["x"],), "geometry=Geometry(local_size=...)"),
        ("compiler_options", ["-cl-fast-relaxed-math"], "autotune.build(context, source, options=[...])"),
        ("compiler_options", ("-O3",), "options=[...]"),
        ("answer", [None, None], "assert"),
        ("answer", None, "assert"),
        ("verify", lambda a, b, atol=None: True, "assert"),
        ("atol", 1e-6, "assert_allclose"),
        ("iterations", [7], "repeat=N"),
        ("lang", "OpenCL", "fixture"),
        ("lang", ["CUDA"], "fixture"),
        ("smem_args", {"sh": 4096}, "geometry=Geometry(local_memory=...)"),
        ("cmem_args", {"c": [1, 2]}, "constant-memory"),
        ("texmem_args", [1, 2], "texture-memory"),
        ("defines", {"N": 4}, "defines="),
        ("max_fevals", [100], "budget=N"),
        ("metrics", ["GFLOP/s"], "autotune.metric"),
        ("kernel_name", ["gemm"], "autotune.build"),
        ("arguments", [1, 2], "autotune.measure"),
    ],
)
def test_kernel_tuner_keywords_are_refused_whatever_their_value(keyword: str, value: Any, hint: str) -> None:
    """A list or tuple once became a tuned parameter (and a #define); every value type now gets the hint."""
    with pytest.raises(PolicyError) as caught:

        @tunable(x=[1, 2], **{keyword: value})
        def test_k(autotune: Any) -> None: ...

    message = str(caught.value)
    assert "test_k" in message
    assert f"keyword {keyword}=" in message
    assert "does not belong on @tunable" in message
    assert hint in message


# -- 15: a source that redefines a tuned define ---------------------------------------------------------
def test_redefined_tuned_defines_are_found_with_their_line() -> None:
    source = textwrap.dedent(
        """\
        #ifndef TILE
        #define TILE 8
        #endif
        #define WIDTH 4096
          # define OTHER 1
        """
    )
    assert redefined_defines({"WIDTH": 512, "TILE": 4}, source) == (("WIDTH", 4),)
    assert redefined_defines({"ORDER": ("k", "i")}, "#define ORDER_0 k\n") == (("ORDER_0", 1),)
    assert redefined_defines({"WIDTH": 512}, "int WIDTH_x;\n") == ()


def test_line_directive_names_the_file_and_escapes_it() -> None:
    assert line_directive(None) == "#line 1\n"
    assert line_directive('k"1\\.cl') == '#line 1 "k\\"1\\\\.cl"\n'
    assert define_source({}, "x", "gemm.cl") == '#line 1 "gemm.cl"\nx'
    assert define_source({}, "x") == "x"
