"""``--autotune-compare`` when each worker process carries a bias of its own (issue 36).

On an H200 the blocks of one pair of workers sat in one performance state for the whole compare
(5-10% away from another pair's), and the single-pair gate passed a +5% change with a narrow
interval. Here the workers' timer is a fake (a ``conftest.py`` override of ``autotune_timer``):
each worker process draws a multiplicative bias at its first measurement, so nothing sleeps and
the only real cost is starting the workers. The gate must never pass a true +5% change under such
biases (regression or inconclusive are both honest), and must still pass an unchanged test whose
workers carry none.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_autotune.plugin.compare.git_ref import REF_DIR_PREFIX
from pytest_autotune.plugin.compare.pair import (
    MIN_PAIRS,
    PairRun,
    Procedure,
    measure_sides,
    run_pairs,
)
from pytest_autotune.timing.paired import SequentialPlan, measure_until_decided
from tests.plugin.compare.git_commands import git

# The n-th worker process of a side (REF or the working tree) for a test takes the n-th bias of
# its list (cycling); the first pair's biases make a +5% change look 7% faster, the others do not.
CONFTEST = f"""
import itertools
import os
from pathlib import Path

import numpy as np
import pytest

SIDE = "ref" if "{REF_DIR_PREFIX}" in __file__ else "working"
BIASES = {{
    "test_changed": {{"ref": [1.06, 0.94, 1.0, 1.03], "working": [0.94, 1.06, 1.0, 0.97]}},
    "test_same": {{"ref": [1.0], "working": [1.0]}},
}}
WORK = {{"test_changed": 1.05 if SIDE == "working" else 1.0, "test_same": 1.0}}
_drawn = {{}}


def _draw(name):
    # at the first measurement of this process: the parent process collects but never measures
    if name not in _drawn:
        folder = Path(os.environ["BIAS_DIR"])
        index = len(list(folder.glob(f"{{SIDE}}-{{name}}-*")))
        (folder / f"{{SIDE}}-{{name}}-{{index}}").touch()
        bias = BIASES[name][SIDE][index % len(BIASES[name][SIDE])]
        _drawn[name] = (bias, np.random.default_rng(index + (SIDE == "ref") * 1000))
    return _drawn[name]


class BiasedTimer:
    def __call__(self, fn, autotune):
        name = autotune.nodeid.rsplit("::", 1)[-1]
        bias, rng = _draw(name)
        return fn(), 1e-3 * WORK[name] * bias * float(np.exp(rng.normal(0.0, 0.003)))


@pytest.fixture
def autotune_timer():
    return BiasedTimer()
"""

TESTS = """
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 2, default=1))
def test_changed(autotune):
    autotune.measure(lambda: None)


@tunable(A=Interval(1, 2, default=1))
def test_same(autotune):
    autotune.measure(lambda: None)
"""


def test_a_per_process_bias_never_passes_a_true_slowdown_and_unbiased_workers_still_pass(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in list(os.environ):
        if name.startswith("PYTEST_AUTOTUNE"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PYTEST_AUTOTUNE_ISOLATE", "none")
    biases = tmp_path / "biases"
    biases.mkdir()
    monkeypatch.setenv("BIAS_DIR", str(biases))
    pytester.makeini("[pytest]\naddopts = -p no:randomly -p no:cacheprovider\n")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_k=TESTS)
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-q", "-m", "base")
    out = tmp_path / "out.json"

    result = pytester.runpytest(
        "--autotune-compare=HEAD",
        "--autotune-compare-tolerance=2%",
        f"--autotune-json={out}",
    )

    benchmarks = {b["name"]: b["extra_info"] for b in json.loads(out.read_text())["benchmarks"]}
    changed = benchmarks["test_changed"]["autotune_compare"]
    detail = benchmarks["test_changed"]["autotune_compare_detail"]
    # the first pair alone sees the change 7% faster (the single-pair gate passed it)
    assert detail["pairs"][0]["ratio"] < 0.95
    # the pairs disagree: the gate says it cannot tell, it does not pass
    assert changed["verdict"] == "inconclusive", changed
    assert len(detail["pairs"]) >= 2
    assert changed["low"] < 1.0 < 1.05 < changed["high"]
    assert math.isfinite(detail["spread"])
    assert detail["spread"] > 0.05
    same = benchmarks["test_same"]["autotune_compare"]
    assert same["verdict"] == "pass", same
    assert len(benchmarks["test_same"]["autotune_compare_detail"]["pairs"]) >= MIN_PAIRS
    result.stdout.fnmatch_lines(["*test_changed*inconclusive*each pair of workers found -*"])
    assert result.ret == 0  # inconclusive is a warning


# -- the same with simulated pairs: many draws of the biases, no processes at all ----------------------
class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def simulated(seed: int, change: float, bias: float, *, tolerance: float = 0.02) -> tuple[Any, list[PairRun]]:
    """``run_pairs`` over fake pairs: each side's worker draws a bias uniform in ``1 +- bias`` at start,
    each measurement has 0.5% noise; starting a pair takes 1 s and a measurement 0.25 s."""
    rng = np.random.default_rng(seed)
    clock = Clock()

    def one(procedure: Procedure | None, deadline: float | None) -> PairRun:
        clock.now += 1.0
        deadline = clock.now + 20.0 if deadline is None else deadline
        bias_a, bias_b = rng.uniform(1 - bias, 1 + bias, 2)

        def side(seconds: float) -> Any:
            def measure(repeat: int, warmup: int) -> list[float]:
                clock.now += 0.25
                return [seconds * float(np.exp(rng.normal(0.0, 0.005)))]

            return measure

        got = measure_sides(
            side(1e-3 * bias_a),
            side(1e-3 * change * bias_b),
            seconds=deadline - clock.now,
            procedure=procedure,
            clock=clock,
        )
        return PairRun((None, None), got.times, got.procedure, got.scale, deadline)  # type: ignore[arg-type]

    return run_pairs(one, tolerance=tolerance, seconds=20.0, clock=clock)


def one_pair(seed: int, change: float, bias: float, *, tolerance: float = 0.02) -> str:
    """The single-pair gate of before: one pair's blocks until decided (8, 16, 32 blocks), judged alone."""
    rng = np.random.default_rng(seed)
    bias_a, bias_b = rng.uniform(1 - bias, 1 + bias, 2)

    def block(index: int) -> tuple[float, float]:
        a, b = np.exp(rng.normal(0.0, 0.005, 2))
        return float(1e-3 * bias_a * a), float(1e-3 * change * bias_b * b)

    plan = SequentialPlan(8, 32, 60.0)
    return measure_until_decided(block, plan, tolerance=tolerance, clock=Clock()).state


def test_simulated_biased_workers_never_pass_a_true_slowdown_where_one_pair_often_did() -> None:
    for seed in range(200):
        verdict, runs = simulated(seed, 1.05, 0.06)
        assert verdict.state != "pass", (seed, verdict.describe())
        assert len(runs) >= MIN_PAIRS
    # the trap is real: judged alone, one pair of such workers passes a +5% change often
    assert sum(one_pair(seed, 1.05, 0.06) == "pass" for seed in range(200)) >= 40


def test_simulated_unbiased_workers_pass_the_same_code_and_catch_a_slowdown() -> None:
    same = [simulated(seed, 1.0, 0.0)[0] for seed in range(50)]
    assert sum(v.state == "pass" for v in same) >= 48
    assert all(v.pairs >= MIN_PAIRS for v in same)
    slower = [simulated(seed, 1.10, 0.0)[0] for seed in range(50)]
    assert all(v.state == "regression" for v in slower)
