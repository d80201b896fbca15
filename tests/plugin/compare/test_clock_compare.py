"""``--autotune-compare`` judges the blocks on the test's clock and reports the other one.

The working tree's side of ``test_k`` takes 50% more wall time but the same CPU time (a busy
machine, as far as the fake timer says): on the host (a CPU device) the comparison judges on the
CPU time and passes it, and with ``--autotune-clock=wall`` it finds the regression. Both runs report
the clock that judged and the other clock's ratio.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_autotune.plugin.compare.git_ref import REF_DIR_PREFIX
from tests.plugin.compare.git_commands import committed_project

CONFTEST = f"""
import pytest

from pytest_autotune.testing import FakeTimer

SIDE = "ref" if "{REF_DIR_PREFIX}" in __file__ else "working"


class Wobbly(FakeTimer):
    # a spread of 0.2% between calls, the same on both clocks; the working tree's wall time +50%
    def seconds(self, autotune):
        return 1e-3 * (1 + 0.002 * (self.calls % 3)) * (1.5 if SIDE == "working" else 1.0)

    def cpu_seconds(self, autotune, seconds):
        return 1e-3 * (1 + 0.002 * (self.calls % 3))


@pytest.fixture
def autotune_timer():
    return Wobbly(lambda config: 1e-3)
"""

TESTS = """
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 2, default=1))
def test_k(autotune):
    autotune.measure(lambda: None)
"""


@pytest.fixture
def repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    return committed_project(pytester, monkeypatch, CONFTEST, TESTS)


@pytest.mark.parametrize(
    ("option", "clock", "verdict"), [((), "cpu", "pass"), (("--autotune-clock=wall",), "wall", "regression")]
)
def test_the_comparison_judges_on_the_chosen_clock_and_reports_the_other(
    repo: pytest.Pytester, tmp_path: Path, option: tuple[str, ...], clock: str, verdict: str
) -> None:
    out = tmp_path / "out.json"
    result = repo.runpytest("--autotune-compare=HEAD", f"--autotune-json={out}", *option)
    (bench,) = json.loads(out.read_text())["benchmarks"]
    compare = bench["extra_info"]["autotune_compare"]
    detail = bench["extra_info"]["autotune_compare_detail"]
    assert compare["verdict"] == verdict
    assert detail["clock"] == clock
    other = detail["other_clock"]
    assert other["clock"] == ("wall" if clock == "cpu" else "cpu")
    assert other["ratio"] == pytest.approx(1.5 if clock == "cpu" else 1.0, rel=0.01)
    expected = "+50.0%" if clock == "cpu" else "+0.0%"
    result.stdout.fnmatch_lines([f"    judged on {clock} time ({other['clock']} {expected})"])
