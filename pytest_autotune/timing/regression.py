"""The regression rule: when a kernel got slower than its baseline, beyond the noise of measuring it.

The rule (minimised objectives such as time; mirrored for maximised ones): a measurement (the
median of the timed calls of one body call) regressed when ::

    median > baseline_median x (1 + tolerance) + noise_k x spread   and   |median - baseline_median| > floor

where ``spread`` is the larger of the baseline's and the measurement's spread: the interquartile
range measured on the undisturbed half of the samples, ``2 x (median - q1)`` for times
(:func:`robust_spread`; ``2 x (q3 - median)`` when maximising). ``noise_k x spread`` is the *noise
band*. The mirror condition marks a measurement *faster* than its baseline (a hint to refresh the
baseline). Defaults: tolerance 10%, noise_k 1.5, floor 2 us for times (0 for other objectives);
:meth:`Rule.describe` prints the rule with its numbers (the README, the regression report and
``benchmarks/regression_gate.py`` use it).

Confirmation: a measurement within ``baseline x (1 + tolerance)`` (or the floor) settles the check
at once (:attr:`Verdict.settled`). Otherwise (a regression, or a pass that needed the noise band)
the body is measured again, up to :data:`CONFIRMATIONS` more times, each after a growing pause
(interference comes in bursts that idle time ends), stopping at the first settled measurement,
and the verdict is that of the least disturbed measurement (the lowest median,
:func:`pytest_autotune.timing.measure.least_disturbed`): a test fails only when even the least
disturbed of six measurements is beyond the limit. Baselines are least disturbed measurements
too, of :data:`BASELINE_RUNS` body calls (after tuning: the final call and more calls, never the
finalist rounds that chose the winner).

Tuning uses the same band to keep the committed configuration: the winner of a new tuning run
replaces it only when it is better by more than ``noise_k x spread + floor`` (:meth:`Rule.beats`).

Why not the plain IQR and "one clean measurement clears it" (the first rule): interference from
other processes only makes kernels slower, in spikes; a few spiked samples inflated the IQR and
so widened the band that on a shared machine a real 20% (even 50%) slowdown mostly passed, and a
measurement whose samples were mostly spiked passed on its huge band without being measured
again (``benchmarks/regression_gate.py`` measures both rules).

This module imports nothing but :mod:`pytest_autotune.values`: the policy takes its defaults from
it, and the timing statistics their spread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, Protocol

from pytest_autotune.values import format_seconds

__all__ = [
    "BASELINE_RUNS",
    "CONFIRMATIONS",
    "DEFAULT_RULE",
    "NOISE_K",
    "TIME_FLOOR",
    "TOLERANCE",
    "Measured",
    "Recorded",
    "Rule",
    "Verdict",
    "robust_spread",
]

#: Default relative tolerance (0.1 = 10%).
TOLERANCE: Final = 0.10
#: Default multiple of the spread that makes the noise band.
NOISE_K: Final = 1.5
#: Default absolute floor of time objectives (seconds); other objectives have none.
TIME_FLOOR: Final = 2e-6
#: Re-measurements that must confirm a regression before the test fails: fresh calls of the body,
#: each after the timer's growing pause (:meth:`DefaultTimer.confirmation_pause`; 3.1 s in all),
#: since interference comes in bursts of up to seconds. Only a failing or borderline test pays for
#: them: a measurement within the tolerance settles the check at once. Plain runs of the five tuned
#: example kernels on a 2-vCPU VM that failed unchanged code: two confirmations back to back 3 of
#: 22; five back to back 2 of 40; two after 0.1/0.2 s 2 of 40, after 0.25/1 s 4 of 40; five after
#: pauses doubling from 0.05 s 0 of 40, from 0.1 s 1 of 40. ``benchmarks/regression_gate.py``
#: with these: 1% false alarms, 98% of +20% slowdowns caught.
CONFIRMATIONS: Final = 5
#: Measurements (calls of the body) of a baseline (after tuning, ``--autotune-update-baseline``);
#: the least disturbed one becomes the baseline.
BASELINE_RUNS: Final = 5


class Measured(Protocol):
    """A measurement's summary (:class:`pytest_autotune.timing.measure.Stats`)."""

    @property
    def median(self) -> float: ...
    @property
    def q1(self) -> float: ...
    @property
    def q3(self) -> float: ...


class Recorded(Protocol):
    """A stored baseline (:class:`pytest_autotune.entry.Baseline`): older entries lack quartiles."""

    @property
    def median(self) -> float: ...
    @property
    def q1(self) -> float | None: ...
    @property
    def q3(self) -> float | None: ...
    @property
    def iqr(self) -> float | None: ...


def robust_spread(median: float, q1: float, q3: float, maximize: bool = False) -> float:
    """``2 x (median - q1)`` (minimised objectives) or ``2 x (q3 - median)`` (maximised ones).

    Interference (preemption by other processes, interrupts, clock changes) only ever makes a
    kernel slower, so it lands in the other half: while fewer than half of the samples are hit
    it inflates the plain IQR but not this spread, which equals the IQR for symmetric noise.
    """
    return max(2.0 * (q3 - median if maximize else median - q1), 0.0)


@dataclass(frozen=True)
class Verdict:
    """How the current measurement compares with the baseline.

    ``settled`` is True when the measurement is within the tolerance (or the floor) of the
    baseline, or faster beyond the band: no further measurement could change the outcome.
    """

    state: Literal["passed", "regression", "faster"]
    current: float
    baseline: float
    limit: float
    noise_band: float
    settled: bool = True

    @property
    def delta(self) -> float:
        """Relative change of the median (+0.3 = 30% larger)."""
        return (self.current - self.baseline) / self.baseline if self.baseline else 0.0


@dataclass(frozen=True)
class Rule:
    """The rule's parameters (see the module docstring); ``unit`` only formats :meth:`describe`.

    ``floor`` is absolute, in the objective's unit; a :class:`pytest_autotune.policy.Policy` gives
    its rule as ``policy.rule``.
    """

    tolerance: float = TOLERANCE
    noise_k: float = NOISE_K
    floor: float = TIME_FLOOR
    maximize: bool = False
    unit: str = "s"

    @property
    def _sign(self) -> float:
        return -1.0 if self.maximize else 1.0

    def spread(self, stats: Measured) -> float:
        """The spread of a measurement (:func:`robust_spread`)."""
        return robust_spread(stats.median, stats.q1, stats.q3, self.maximize)

    def baseline_spread(self, baseline: Recorded) -> float:
        """The spread of a stored baseline (its quartiles; the plain IQR for entries without them)."""
        if baseline.q1 is not None and baseline.q3 is not None:
            return robust_spread(baseline.median, baseline.q1, baseline.q3, self.maximize)
        return baseline.iqr or 0.0

    def noise_band(self, *spreads: float) -> float:
        """``noise_k x`` the largest of ``spreads``."""
        return self.noise_k * max(spreads)

    def judge(self, current: Measured, baseline: Recorded) -> Verdict:
        """Apply the rule to ``current`` against ``baseline``."""
        reference = baseline.median
        noise_band = self.noise_band(self.baseline_spread(baseline), self.spread(current))
        significant = abs(current.median - reference) > self.floor
        sign = self._sign
        worse_limit = reference + sign * (abs(reference) * self.tolerance + noise_band)
        better_limit = reference - sign * (abs(reference) * self.tolerance + noise_band)
        if significant and sign * (current.median - worse_limit) > 0:
            return Verdict("regression", current.median, reference, worse_limit, noise_band, settled=False)
        if significant and sign * (better_limit - current.median) > 0:
            return Verdict("faster", current.median, reference, better_limit, noise_band)
        within_tolerance = sign * (current.median - reference) <= abs(reference) * self.tolerance
        settled = within_tolerance or not significant
        return Verdict("passed", current.median, reference, worse_limit, noise_band, settled=settled)

    def beats(self, challenger: Measured, incumbent: Measured) -> bool:
        """Whether ``challenger`` is better than ``incumbent`` by more than the noise band plus the
        floor (tune mode replaces the committed configuration only then)."""
        gain = self._sign * (incumbent.median - challenger.median)
        return gain > self.noise_band(self.spread(challenger), self.spread(incumbent)) + self.floor

    def format(self, value: float) -> str:
        """``value`` in the objective's unit (``"12.3us"`` for times, ``"95.2 GFLOP/s"`` otherwise)."""
        return format_seconds(value) if self.unit == "s" else f"{value:.4g} {self.unit}"

    def describe(self) -> str:
        """The rule with its numbers, one line (the default: ``median > baseline x (1 + 10%) + 1.5 x
        spread (spread = 2 x (median - q1), the larger of the baseline's and the measurement's) and
        more than 2us slower``)."""
        if self.maximize:
            limit, half, worse = "median < baseline x (1 - {}) - {} x spread", "q3 - median", "lower"
        else:
            limit, half, worse = "median > baseline x (1 + {}) + {} x spread", "median - q1", "higher"
            worse = "slower" if self.unit == "s" else worse
        return (
            f"{limit.format(f'{self.tolerance:.0%}', f'{self.noise_k:g}')} (spread = 2 x ({half}), the "
            f"larger of the baseline's and the measurement's) and more than {self.format(self.floor)} {worse}"
        )


#: The rule with its default parameters (a time objective).
DEFAULT_RULE: Final = Rule()
