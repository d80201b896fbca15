"""``--autotune-compare=REF`` end to end: a project in a git repository, REF against the working tree.

The tunable tests time a busy loop on the host (no OpenCL); the working tree's loop of ``test_slow``
is twice as long as REF's, so the comparison must fail it and pass ``test_same``. The tolerance is
wide (30%) so that a loaded machine cannot turn the unchanged test red or the doubled one green;
the statistics themselves are tested in ``tests/timing/test_paired.py``.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_autotune.plugin.compare.git_ref import REF_DIR_PREFIX
from pytest_autotune.plugin.compare.mode import _pooled
from pytest_autotune.plugin.compare.pair import (
    CALIBRATION_REPEAT,
    MAX_BLOCKS,
    MAX_REPEAT,
    MIN_BLOCKS,
    PairRun,
    Procedure,
    SideTimes,
    max_blocks_for,
    measure_sides,
)
from pytest_autotune.plugin.compare.report import JSON_KEYS
from tests.plugin.git_commands import git

KERNELS = """
from pytest_autotune import Interval, tunable

LOOP = 20000
SLOWDOWN = {slowdown}


@tunable(A=Interval(1, 2, default=1), strategy="exhaustive", finalists=1)
def test_same(autotune):
    autotune.measure(lambda: sum(range(LOOP)))


@tunable(A=Interval(1, 2, default=1), strategy="exhaustive", finalists=1)
def test_slow(autotune):
    autotune.measure(lambda: sum(range(LOOP * SLOWDOWN)))
{added}"""

ADDED = """

@tunable(A=Interval(1, 2, default=1))
def test_added(autotune):
    autotune.measure(lambda: sum(range(LOOP)))
"""

NEW_FILE = """
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 2, default=1))
def test_brand_new(autotune):
    autotune.measure(lambda: None)
"""


@pytest.fixture
def repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A git repository: ``test_k.py`` committed, in-process tuning, no autotune settings from outside."""
    for name in list(os.environ):
        if name.startswith("PYTEST_AUTOTUNE"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PYTEST_AUTOTUNE_ISOLATE", "none")
    pytester.makeini("[pytest]\naddopts = -p no:randomly -p no:cacheprovider\n")
    pytester.makepyfile(test_k=KERNELS.format(slowdown=1, added=""))
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-q", "-m", "base")
    return pytester


def my_trees() -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob(f"{REF_DIR_PREFIX}{os.getpid()}-*"))


def test_unchanged_passes_slower_fails_new_is_skipped(
    repo: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # REF commits a tuned entry for test_same; the working tree doubles test_slow's work, tunes it
    # (an uncommitted change of autotune.json) and adds two tests REF does not have.
    assert repo.runpytest("--autotune", "test_k.py::test_same").ret == 0
    git(repo.path, "add", "autotune.json")
    git(repo.path, "commit", "-q", "-m", "tuned")
    repo.makepyfile(test_k=KERNELS.format(slowdown=2, added=ADDED), test_new=NEW_FILE)
    assert repo.runpytest("--autotune", "test_k.py::test_slow").ret == 0
    status = git(repo.path, "status", "--porcelain")
    trees_before = my_trees()
    out = tmp_path_factory.mktemp("reports")

    result = repo.runpytest(
        "--autotune-compare=HEAD",
        "--autotune-compare-tolerance=30%",
        f"--autotune-json={out / 'out.json'}",
        f"--autotune-report-md={out / 'summary.md'}",
        "-rs",
    )

    result.assert_outcomes(passed=1, failed=1, skipped=2)
    output = result.stdout.str()
    assert "performance regression: slower than HEAD (" in output
    result.stdout.fnmatch_lines(
        [
            "*autotune: working tree (B) vs HEAD (*) (A): ratio of times B/A, 95% interval*",
            "note: autotune.json has uncommitted changes: the working tree's side uses them as they are",
            "*test_k.py::test_same  *% [[]*%, *%[]]  * blocks  *s  tolerance 30%  pass  "
            "[[]both sides committed {'A': *}[]]",
            "*test_k.py::test_slow  +*% [[]+*%, +*%[]]  * blocks  *s  tolerance 30%  regression  "
            "[[]REF default (no tuned configuration for this device) {'A': 1}, "
            "working tree committed {'A': *}[]]",
            "*test_k.py::test_added  skipped: new test: REF HEAD: no such test there",
            "*test_new.py::test_brand_new  skipped: new test: test_new.py does not exist at HEAD",
        ],
        consecutive=False,
    )
    benchmarks = {b["name"]: b for b in json.loads((out / "out.json").read_text())["benchmarks"]}
    assert set(benchmarks) == {"test_same", "test_slow"}  # skipped tests measured nothing
    verdicts: dict[str, dict[str, Any]] = {
        n: b["extra_info"]["autotune_compare"] for n, b in benchmarks.items()
    }
    for verdict in verdicts.values():
        assert set(verdict) == set(JSON_KEYS)
        assert verdict["ref"] == "HEAD"
        assert verdict["tolerance"] == pytest.approx(0.3)
        assert verdict["blocks"] >= 8
        assert 0 < verdict["seconds"] < 60
        assert verdict["low"] <= verdict["ratio"] <= verdict["high"]
    assert verdicts["test_same"]["verdict"] == "pass"
    assert verdicts["test_slow"]["verdict"] == "regression"
    assert 1.5 < verdicts["test_slow"]["ratio"] < 3.0
    assert verdicts["test_slow"]["low"] > 1.3
    detail = benchmarks["test_slow"]["extra_info"]["autotune_compare_detail"]
    assert [pair["verdict"] for pair in detail["pairs"]] == ["regression", "regression"]  # confirmed
    assert verdicts["test_slow"]["blocks"] == sum(pair["blocks"] for pair in detail["pairs"])
    assert len(benchmarks["test_same"]["extra_info"]["autotune_compare_detail"]["pairs"]) == 1
    assert detail["commit"] == git(repo.path, "rev-parse", "HEAD")
    assert detail["sides"]["ref"]["state"] == "missing"
    assert detail["sides"]["working"]["state"] == "committed"

    summary = (out / "summary.md").read_text()
    assert "| `test_k.py::test_slow` | compare with `HEAD` | +" in summary
    for verdict in ("❌ regression", "✅ pass", "⏭️ skipped"):
        assert verdict in summary
    assert "### Why" in summary
    assert "- `test_k.py::test_slow` (❌ regression): slower than HEAD" in summary
    assert "autotune.json has uncommitted changes" in summary

    assert git(repo.path, "status", "--porcelain") == status  # the user's checkout is untouched
    assert git(repo.path, "worktree", "list").count("\n") == 0
    assert my_trees() == trees_before  # REF's tree is gone


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--autotune-compare=no-such-ref"],
            "*--autotune-compare=no-such-ref: no commit named 'no-such-ref'*",
        ),
        (["--autotune-compare=HEAD", "--autotune"], "*--autotune-compare and --autotune cannot be combined*"),
        (
            ["--autotune-compare=HEAD", "--autotune-update-baseline"],
            "*--autotune-compare and --autotune-update-baseline cannot be combined*",
        ),
        (["--autotune-compare=HEAD", "-n", "2"], "*--autotune-compare cannot run under pytest-xdist (-n)*"),
        (["--autotune-compare=HEAD", "--autotune-compare-max-time=soon"], "*compare-max-time*'soon'*"),
        (["--autotune-compare=HEAD", "--autotune-compare-tolerance=5"], "*compare_tolerance=*5*percentage*"),
    ],
)
def test_bad_use_is_a_usage_error_at_start(repo: pytest.Pytester, args: list[str], message: str) -> None:
    result = repo.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


# Each side's measurements alternate 2 ms and 8 ms, REF's in the opposite phase to the working
# tree's, so that every block's ratio is 4 or 1/4: an interval that straddles any tolerance, every
# run (random noise would let a few runs decide by chance).
NOISY = f"""
import itertools
import time

from pytest_autotune import Interval, tunable

RUNS = itertools.count()
PHASE = int("{REF_DIR_PREFIX}" in __file__)


@tunable(A=Interval(1, 2, default=1))
def test_noisy(autotune):
    seconds = 0.008 if (next(RUNS) + PHASE) % 2 else 0.002
    autotune.measure(lambda: time.sleep(seconds))
"""


def test_an_inconclusive_comparison_says_how_long_would_decide_it(repo: pytest.Pytester) -> None:
    repo.makepyfile(test_noisy=NOISY)
    git(repo.path, "add", "test_noisy.py")
    git(repo.path, "commit", "-q", "-m", "noisy")
    result = repo.runpytest("--autotune-compare=HEAD", "--autotune-compare-max-time=3", "test_noisy.py")
    assert result.ret == 0  # inconclusive is a warning
    # the advice reads the noise of the blocks measured, or, when the 3 s cap (counted from the
    # workers' start) held fewer than the first look's 8 blocks on a loaded machine, their pace
    output = result.stdout.str()
    assert "inconclusive after " in output
    assert (
        "blocks would decide it: --autotune-compare-max-time=" in output
        or "fewer than the 8 a verdict needs: --autotune-compare-max-time=" in output
    ), output


def test_outside_a_git_repository_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_k=KERNELS.format(slowdown=1, added=""))
    result = pytester.runpytest("--autotune-compare=HEAD", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--autotune-compare=HEAD: * is not in a git repository*"])


# -- the pieces ---------------------------------------------------------------------------------------
def test_each_measurement_aims_at_a_quarter_second() -> None:
    assert Procedure.for_calls(0.4) == Procedure(1, warmup=0)  # long calls: one, no warm-up call
    assert Procedure.for_calls(0.05) == Procedure(5, warmup=1)
    assert Procedure.for_calls(1e-6) == Procedure(MAX_REPEAT, warmup=1)
    assert Procedure.for_calls(float("nan")) == Procedure(1, warmup=1)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_sides_are_measured_in_abba_blocks_after_a_calibrating_warm_up() -> None:
    clock, calls = Clock(), []

    def side(name: str, seconds: float) -> Any:
        def measure(repeat: int, warmup: int) -> list[float]:
            calls.append((name, repeat))
            clock.now += 0.5
            return [seconds] * repeat

        return measure

    verdict, times, procedure = measure_sides(
        side("A", 0.025), side("B", 0.05), tolerance=0.05, seconds=60, clock=clock
    )
    assert procedure == Procedure(5)  # from the slower side's 50 ms in the warm-up block
    assert calls[:2] == [("A", CALIBRATION_REPEAT), ("B", CALIBRATION_REPEAT)]  # warm-up, dropped
    order = "".join(name for name, _ in calls[2:])
    assert order == "BAAB" * 4  # the judged blocks continue ABBA after the warm-up block
    assert {repeat for _, repeat in calls[2:]} == {5}
    assert (verdict.state, verdict.blocks, verdict.ratio) == ("regression", MIN_BLOCKS, pytest.approx(2.0))
    assert times.a == [0.025] * MIN_BLOCKS
    assert times.b == [0.05] * MIN_BLOCKS
    # a maximised objective (throughput) is judged the other way round: B's higher value is better
    better, _, _ = measure_sides(
        side("A", 1.0),
        side("B", 2.0),
        tolerance=0.05,
        seconds=60,
        maximize=True,
        calibrate=False,
        clock=clock,
    )
    assert (better.state, better.ratio) == ("pass", pytest.approx(0.5))


def test_a_noisy_comparison_stops_at_the_time_cap_as_inconclusive() -> None:
    clock = Clock()
    noise = iter([1.0, 1.3, 0.8, 1.25, 0.9, 1.2] * 40)

    def measure(repeat: int, warmup: int) -> list[float]:
        clock.now += 1.0
        return [next(noise)]

    verdict, times, _ = measure_sides(measure, measure, tolerance=0.05, seconds=20, clock=clock)
    assert verdict.state == "inconclusive"
    assert verdict.blocks == len(times.a) == 9  # past 18 s after the warm-up block: one last look


def test_a_longer_time_cap_buys_more_blocks_and_a_narrower_interval() -> None:
    def noisy(seconds: float) -> Any:
        clock = Clock()
        rng = np.random.default_rng(5)

        def measure(repeat: int, warmup: int) -> list[float]:
            clock.now += 0.5
            return [float(np.exp(rng.normal(0.0, 0.15)))]

        verdict, _, _ = measure_sides(measure, measure, tolerance=0.05, seconds=seconds, clock=clock)
        return verdict

    short, long = noisy(20), noisy(200)
    assert short.state == "inconclusive"
    assert long.blocks > 64  # more than the old fixed cap of 32 blocks: the time decides
    assert long.high / long.low < short.high / short.low
    assert max_blocks_for(20, 1.0) == 30  # the margin: 1.5 times what fits
    assert max_blocks_for(1, 1.0) == MIN_BLOCKS
    assert max_blocks_for(1e6, 0.01) == MAX_BLOCKS


@pytest.mark.parametrize(("layer", "expected"), [({}, 0), ({"warmup": 2}, 2)])
def test_a_run_may_drop_warm_up_calls_unless_the_test_set_them(layer: dict[str, Any], expected: int) -> None:
    from pytest_autotune import Interval, build_space
    from pytest_autotune.fixture import Autotune
    from pytest_autotune.policy import merge_policy
    from pytest_autotune.testing import ConstantTimer

    calls: list[int] = []
    fixture = Autotune(
        nodeid="test_x.py::test_k",
        space=build_space({"A": Interval(1, 4, default=2)}),
        policy=merge_policy([layer]),
        device="d",
        timer=ConstantTimer(),
        tuning=False,
    )
    fixture.begin_run({"A": 2}, repeat_default=3, warmup_default=0)
    fixture.measure(lambda: calls.append(1))
    assert len(calls) == 3 + expected


def _pair(state: str, a: list[float], b: list[float]) -> PairRun:
    from pytest_autotune.timing.paired import judge

    verdict = replace(judge(a, b, tolerance=0.05), state=state)
    return PairRun((None, None), verdict, SideTimes(a, b), Procedure(1))  # type: ignore[arg-type]


def test_a_regression_counts_only_when_a_fresh_pair_of_workers_finds_it_too() -> None:
    slow = _pair("regression", [1.0] * 8, [1.3, 1.31, 1.29, 1.3, 1.32, 1.28, 1.3, 1.3])
    also_slow = _pair("regression", [1.0] * 8, [1.25, 1.26, 1.24, 1.25, 1.27, 1.23, 1.25, 1.25])
    same = _pair("pass", [1.0] * 8, [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.0])
    verdict, times = _pooled([slow, also_slow], 0.05, maximize=False)
    assert (verdict.state, verdict.blocks, len(times.a)) == ("regression", 16, 16)
    assert 1.25 <= verdict.ratio <= 1.3
    verdict, _ = _pooled([slow, same], 0.05, maximize=False)
    assert verdict.state == "inconclusive"
    assert not verdict.faster
