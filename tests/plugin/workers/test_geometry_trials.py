"""A ``Geometry`` declared wrongly, through pytest (issue 34): a mistake every configuration shares
fails the test at its first trial with the declaration error, a zero size is refused at collection,
and a configuration whose block size is 0 is a failed trial that never wins.
"""

from __future__ import annotations

import pytest

DECLARED_WRONGLY = """
from pytest_autotune import Geometry, Pow2, tunable


@tunable(BX=Pow2(1, 64), strategy="exhaustive", geometry=Geometry(1024, block_size_names=["BX"],
         grid_div_x=lambda p: str(p["BX"])))
def test_k(autotune):
    global_size, local_size = autotune.launch
    autotune.measure(lambda: None)
"""


def test_the_plugin_fails_the_test_at_its_first_trial(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=DECLARED_WRONGLY)
    result = project.runpytest("--autotune")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "the launch geometry is declared wrongly: grid_div_x callable gave '1' for {'BX': 1}" in output
    assert "runtime" not in output
    assert "TypeError" not in output


def test_the_plugin_refuses_a_zero_size_at_collection(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=DECLARED_WRONGLY.replace("Geometry(1024,", "Geometry(0,"))
    result = project.runpytest("--autotune")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "Geometry: problem_size=0; expected a whole number >= 1" in result.stdout.str()


def test_a_block_size_of_zero_never_wins(project: pytest.Pytester) -> None:
    """The issue's case: the grid does not divide by the block size, so a work-group of 0 items
    "ran" (and, under the fake timer, fastest: it is nearest the bowl's optimum of 3)."""
    project.makepyfile(
        test_k="""
        from pytest_autotune import Geometry, Set, tunable


        @tunable(BX=Set(0, 8, default=8), strategy="exhaustive",
                 geometry=Geometry(64, block_size_names=["BX"], grid_div_x=[]))
        def test_k(autotune):
            global_size, local_size = autotune.launch
            autotune.measure(lambda: None)
        """
    )
    result = project.runpytest("--autotune", "-rA")
    result.assert_outcomes(passed=1)
    assert "{'BX': 8}" in result.stdout.str()
    assert "runtime 1" in result.stdout.str()
