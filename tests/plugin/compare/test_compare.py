"""``--autotune-compare=REF`` end to end: a project in a git repository, REF against the working tree.

Nothing is timed for real: the project's ``conftest.py`` (committed, so both sides have it) overrides
``autotune_timer`` with one that reports the seconds the measured function returns, with a small
jitter, so the verdicts hold on a machine under any load. The working tree's ``test_slow`` takes
twice REF's time, so the comparison must fail it (from its first pair of workers) and pass
``test_same``; the statistics themselves are tested in ``tests/timing/``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_autotune.plugin.compare.git_ref import REF_DIR_PREFIX
from pytest_autotune.plugin.compare.pair import (
    BLOCKS_PER_PAIR,
    CALIBRATION_REPEAT,
    MAX_PAIRS,
    MAX_REPEAT,
    MIN_PAIRS,
    PairRun,
    Procedure,
    SideTimes,
    judge_runs,
    max_pairs_for,
    measure_sides,
    run_pairs,
)
from pytest_autotune.plugin.compare.report import JSON_KEYS
from tests.plugin.compare.git_commands import committed_project, git

# The measured function returns the seconds it stands for; a jitter of +-1% cycles through the calls.
TIMER = """
import itertools

import pytest

JITTER = itertools.cycle([1.0, 1.01, 0.99, 1.005, 0.995, 1.0, 0.985])


class WorkTimer:
    def __call__(self, fn, autotune):
        seconds = fn()
        return seconds, seconds * next(JITTER)


@pytest.fixture
def autotune_timer():
    return WorkTimer()
"""

KERNELS = """
from pytest_autotune import Interval, tunable

SECONDS = 1e-3
SLOWDOWN = {slowdown}


@tunable(A=Interval(1, 2, default=1), strategy="exhaustive", finalists=1)
def test_same(autotune):
    autotune.measure(lambda: SECONDS)


@tunable(A=Interval(1, 2, default=1), strategy="exhaustive", finalists=1)
def test_slow(autotune):
    autotune.measure(lambda: SECONDS * SLOWDOWN)
{added}"""

ADDED = """

@tunable(A=Interval(1, 2, default=1))
def test_added(autotune):
    autotune.measure(lambda: SECONDS)
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
    return committed_project(pytester, monkeypatch, TIMER, KERNELS.format(slowdown=1, added=""))


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
            "*test_k.py::test_same  *% [[]*%, *%[]]  * blocks  * pairs  *s  tolerance 30%  pass  "
            "[[]both sides committed {'A': *}[]]",
            "*test_k.py::test_slow  +*% [[]+*%, +*%[]]  * blocks  * pairs  *s  tolerance 30%  regression  "
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
        assert verdict["blocks"] >= BLOCKS_PER_PAIR
        assert 0 < verdict["seconds"] < 60
        assert verdict["low"] <= verdict["ratio"] <= verdict["high"]
    assert verdicts["test_same"]["verdict"] == "pass"
    assert verdicts["test_slow"]["verdict"] == "regression"
    assert 1.5 < verdicts["test_slow"]["ratio"] < 3.0
    assert verdicts["test_slow"]["low"] > 1.3
    detail = benchmarks["test_slow"]["extra_info"]["autotune_compare_detail"]
    assert len(detail["pairs"]) == 1  # a 2x slowdown needs no second pair of workers
    assert all(pair["ratio"] > 1.3 for pair in detail["pairs"])
    assert verdicts["test_slow"]["blocks"] == sum(pair["blocks"] for pair in detail["pairs"])
    # unchanged and tight: within the 30% tolerance even if a process were 20% off, from one pair
    assert verdicts["test_same"]["high"] < 1.3
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


# Each side's measurements (through the fake timer) alternate 2 ms and 8 ms, REF's in the opposite
# phase to the working tree's, so that every block's ratio is 4 or 1/4: an interval that straddles
# any tolerance, every run (random noise would let a few runs decide by chance).
NOISY = f"""
import itertools

from pytest_autotune import Interval, tunable

RUNS = itertools.count()
PHASE = int("{REF_DIR_PREFIX}" in __file__)


@tunable(A=Interval(1, 2, default=1))
def test_noisy(autotune):
    seconds = 0.008 if (next(RUNS) + PHASE) % 2 else 0.002
    autotune.measure(lambda: seconds)
"""


def test_an_inconclusive_comparison_says_how_long_would_decide_it(repo: pytest.Pytester) -> None:
    repo.makepyfile(test_noisy=NOISY)
    git(repo.path, "add", "test_noisy.py")
    git(repo.path, "commit", "-q", "-m", "noisy")
    result = repo.runpytest("--autotune-compare=HEAD", "--autotune-compare-max-time=3", "test_noisy.py")
    assert result.ret == 0  # inconclusive is a warning
    # the advice reads the noise of the blocks measured, or, when the 3 s cap (counted from the
    # workers' start) held fewer pairs than their spread is read from on a loaded machine, their pace
    output = result.stdout.str()
    assert "inconclusive after " in output
    assert "likely regression" not in output
    assert (
        "would decide it: --autotune-compare-max-time=" in output
        or f"fewer than {MIN_PAIRS} decide only a change beyond the tolerance by more than the 20% two "
        "processes may differ: --autotune-compare-max-time="
        in output
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

    measured = measure_sides(side("A", 0.025), side("B", 0.05), seconds=60, clock=clock)
    assert measured.procedure == Procedure(5)  # from the slower side's 50 ms in the warm-up block
    assert calls[:2] == [("A", CALIBRATION_REPEAT), ("B", CALIBRATION_REPEAT)]  # warm-up, dropped
    order = "".join(name for name, _ in calls[2:])
    assert order == "BAAB" * (BLOCKS_PER_PAIR // 2)  # the judged blocks continue ABBA after the warm-up
    assert {repeat for _, repeat in calls[2:]} == {5}
    assert measured.times.a == [0.025] * BLOCKS_PER_PAIR
    assert measured.times.b == [0.05] * BLOCKS_PER_PAIR
    # a later pair takes the first pair's procedure as it is: its warm-up block only warms
    calls.clear()
    later = measure_sides(side("A", 0.5), side("B", 0.5), seconds=60, procedure=Procedure(5), clock=clock)
    assert later.procedure == Procedure(5)
    assert {repeat for _, repeat in calls[2:]} == {5}


def fake_pairs(
    a: float, b: float, *, pair_seconds: float = 1.0, noise: Any = None, cap: float = 60.0
) -> tuple[Any, list[PairRun], list[Procedure | None]]:
    """``run_pairs`` over pairs whose sides measure ``a`` and ``b`` (times ``noise()``), each pair
    taking ``pair_seconds`` of a fake clock; also the procedure each pair was given."""
    clock, given = Clock(), []

    def one(procedure: Procedure | None, deadline: float | None) -> PairRun:
        given.append(procedure)
        clock.now += pair_seconds
        deadline = clock.now + cap if deadline is None else deadline
        factor = noise or (lambda: 1.0)
        times = SideTimes([a * factor() for _ in range(4)], [b * factor() for _ in range(4)])
        return PairRun((None, None), times, procedure or Procedure(3), 1.0, deadline)  # type: ignore[arg-type]

    verdict, runs = run_pairs(one, tolerance=0.05, seconds=cap, clock=clock)
    return verdict, runs, given


def test_pairs_of_workers_follow_one_another_until_the_verdict_is_decided() -> None:
    # +10% against a 5% tolerance: within what two processes may differ, so the pairs' spread decides
    verdict, runs, given = fake_pairs(0.025, 0.0275)
    assert (verdict.state, verdict.pairs, len(runs)) == ("regression", MIN_PAIRS, MIN_PAIRS)
    assert verdict.ratio == pytest.approx(1.1)
    assert verdict.blocks == 4 * MIN_PAIRS
    assert given == [None] + [Procedure(3)] * (MIN_PAIRS - 1)  # the first calibrates, the others reuse it
    assert "from 4 pairs of workers" in verdict.describe()
    # a maximised objective (throughput) is judged the other way round: B's higher value is better
    faster = judge_runs(runs, tolerance=0.05, confidence=0.95, maximize=True)
    assert (faster.state, faster.ratio) == ("pass", pytest.approx(1 / 1.1))


def test_a_2x_slowdown_is_decided_by_the_first_pair_when_its_blocks_agree() -> None:
    verdict, runs, _ = fake_pairs(0.025, 0.05)
    assert (verdict.state, verdict.pairs, len(runs)) == ("regression", 1, 1)
    assert verdict.ratio == pytest.approx(2.0)
    assert verdict.low > 1.05 * 1.2  # beyond the tolerance by more than a process may be off


def test_a_noisy_comparison_stops_at_the_time_cap_as_inconclusive() -> None:
    noise = iter([1.0, 1.3, 0.8, 1.25, 0.9, 1.2] * 100)
    verdict, runs, _ = fake_pairs(1.0, 1.0, pair_seconds=2.0, noise=lambda: next(noise), cap=20)
    assert verdict.state == "inconclusive"
    # the cap starts when the first pair is ready (2 s), and no pair starts with less time left
    # than a pair takes: the first, then ten more in the 20 s
    assert verdict.pairs == len(runs) == 11


def test_a_time_cap_too_short_for_the_pairs_spread_decides_only_a_change_far_beyond_the_tolerance() -> None:
    # the cap holds two pairs: too few to read how pairs differ
    verdict, runs, _ = fake_pairs(0.025, 0.0275, pair_seconds=5.0, cap=6.0)
    assert len(runs) == 2
    assert verdict.state == "inconclusive"  # +10% at a 5% tolerance: a process could be 20% off
    assert verdict.ratio == pytest.approx(1.1)
    doubled, runs, _ = fake_pairs(0.025, 0.05, pair_seconds=5.0, cap=6.0)
    assert (doubled.state, len(runs)) == ("regression", 1)  # a 2x slowdown: no count of pairs holds it back


def test_a_longer_time_cap_buys_more_pairs_and_a_narrower_interval() -> None:
    rng = np.random.default_rng(5)

    def noise() -> float:
        return float(np.exp(rng.normal(0.0, 0.3)))

    short, _, _ = fake_pairs(1.0, 1.0, noise=noise, cap=10)
    long, _, _ = fake_pairs(1.0, 1.0, noise=noise, cap=100)
    assert short.state == "inconclusive"
    assert long.pairs > 2 * short.pairs
    assert long.high / long.low < short.high / short.low
    assert max_pairs_for(20, 1.0) == 30  # the margin: 1.5 times what fits
    assert max_pairs_for(1, 1.0) == MIN_PAIRS
    assert max_pairs_for(1e6, 0.01) == MAX_PAIRS


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
