"""``benchmarks/gate/noise.py``: the blocks a slowdown needs at a measured noise, and reading an export."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from benchmarks.gate.noise import _log_ratios, blocks_needed


def test_blocks_needed_follows_the_normal_power_formula_with_the_signed_rank_efficiency() -> None:
    z = NormalDist().inv_cdf(1 - 0.05 / 2 / 3) + NormalDist().inv_cdf(0.8)
    expected = (z * 0.1 / (math.log(1.2) - math.log(1.05))) ** 2 * math.pi / 3
    assert blocks_needed(0.1, 0.20, 0.05) == pytest.approx(expected)
    # four times the blocks for twice the noise, fewer for a larger slowdown, none within tolerance
    assert blocks_needed(0.2, 0.20, 0.05) == pytest.approx(4 * expected)
    assert blocks_needed(0.1, 0.50, 0.05) < blocks_needed(0.1, 0.20, 0.05)
    assert blocks_needed(0.1, 0.05, 0.05) == math.inf


def test_log_ratios_reads_the_blocks_of_a_compare_export() -> None:
    bench = {
        "extra_info": {
            "autotune_compare": {"blocks": 2, "seconds": 3.0},
            "autotune_compare_detail": {"times": {"ref": [1.0, 2.0], "working": [2.0, 2.0]}},
        }
    }
    ratios, per_block = _log_ratios(bench)
    assert ratios == pytest.approx([math.log(2.0), 0.0])
    assert per_block == pytest.approx(1.5)
