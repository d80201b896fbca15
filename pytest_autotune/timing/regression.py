"""The regression rule: when a kernel got slower than its baseline, beyond the noise of measuring it.

The rule (minimised objectives such as time; mirrored for maximised ones): a measurement (the
median of the timed calls of one body call) regressed when ::

    median > baseline_median x (1 + tolerance) + noise_k x spread   and   |median - baseline_median| > floor

where ``spread`` is the larger of the baseline's and the measurement's spread: the interquartile
range measured on the undisturbed half of the samples, ``2 x (median - q1)`` for times
(:func:`robust_spread`; ``2 x (q3 - median)`` when maximising). ``noise_k x spread`` is the *noise
band*. The mirror condition marks a measurement *faster* than its baseline (a hint to refresh the
baseline). Defaults: tolerance 10%, noise_k 1.5, floor 2 us for times (0 for other objectives);
:meth:`Rule.describe` prints the rule with its numbers (``docs/reference/commands.md`` and the
regression report use it).

The tolerance of a baseline that knows its *noise* (:meth:`Rule.tolerance_for`): the larger of the
tolerance and :data:`NOISE_TOLERANCE_K` times that noise, unless the user set the tolerance
(command line, ini, environment, ``@tunable`` or marker), which then wins as it is. A baseline's
noise is the spread between fresh processes (:func:`between_process_noise`): a baseline is
measured in :data:`BASELINE_MIN_PROCESSES` to :data:`BASELINE_PROCESSES` fresh processes, as a plain
run measures (each the least disturbed of :data:`PROCESS_RUNS` measurements), and is the middle one
of them: a further process is measured only while their noise could still decide the tolerance
(:func:`baseline_decided`). A kernel whose
time moves by 25% from one process to the next (page placement of a memory-bound kernel, the
host's other tenants) gets a tolerance that covers it, and a steady kernel keeps 10%. Entries
without noise (older files, ``--autotune-isolate=none``) are judged as before, with the tolerance.

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
again (``python -m benchmarks gate`` judges the same runs by both rules).

This module imports nothing but :mod:`pytest_autotune.values`: the policy takes its defaults from
it, and the timing statistics their spread.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, Protocol

from pytest_autotune.values import format_seconds

__all__ = [
    "BASELINE_MIN_PROCESSES",
    "BASELINE_PROCESSES",
    "BASELINE_RUNS",
    "CONFIRMATIONS",
    "DEFAULT_RULE",
    "NOISE_K",
    "NOISE_TOLERANCE_K",
    "PROCESS_RUNS",
    "TIME_FLOOR",
    "TOLERANCE",
    "Measured",
    "Recorded",
    "Rule",
    "Verdict",
    "baseline_decided",
    "between_process_noise",
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
#: pauses doubling from 0.05 s 0 of 40, from 0.1 s 1 of 40. The single-kernel gate benchmark of the
#: time (retired in issue 35 for ``python -m benchmarks gate``) with these: 1% false alarms, 98% of
#: +20% slowdowns caught.
CONFIRMATIONS: Final = 5
#: Measurements (calls of the body) of a baseline measured in the pytest process (trials not
#: isolated: ``--autotune-isolate=none``); the least disturbed one becomes the baseline.
BASELINE_RUNS: Final = 5
#: Fresh processes that measure a baseline (after tuning, ``--autotune-update-baseline``) when
#: trials are isolated (the default on POSIX systems): about 1-3 s each for the example kernels.
#: Their spread is the baseline's noise. Fewer make it a poor estimate (with 3 processes of a
#: normally distributed speed, max(10%, 2 x noise) fails 1.6% of unchanged runs, with 5: 0.3%);
#: more cost time and still miss a rare slow mode (15% of processes 25% slower: 6.6% false
#: alarms with 5 processes, 4.8% with 7; ``benchmarks/gate/bench.py --calibrate`` resamples).
BASELINE_PROCESSES: Final = 5
#: Fresh processes a baseline measures at least; more (up to :data:`BASELINE_PROCESSES`) only while
#: their noise could still widen the tolerance (:func:`baseline_decided`). A steady kernel's tolerance
#: is the plain one whatever the further processes would measure, so they would cost 1-5 s of CPU
#: each for nothing.
BASELINE_MIN_PROCESSES: Final = 3
#: The expected range of n normal draws in standard deviations (d2 of quality control charts): the
#: noise of n processes, scaled by ``d2(BASELINE_PROCESSES) / d2(n)``, estimates what all of them give.
_EXPECTED_RANGE: Final = {2: 1.128, 3: 1.693, 4: 2.059, 5: 2.326, 6: 2.534, 7: 2.704}
#: Measurements in each of those processes, the first and more after the timer's pauses, as a
#: check confirms; the least disturbed one is that process's value.
PROCESS_RUNS: Final = 3
#: Multiple of a baseline's noise that its tolerance covers (unless the tolerance is set). The
#: noise (range over 5 processes) of a normally distributed speed is about 2.3 standard deviations:
#: k = 1 fails 2.2% of unchanged runs, 1.5 0.9%, 2 0.3% (simulated); on the shared 2-vCPU VM
#: (load 8-13) resampled baselines failed no unchanged check for any k from 1 to 4, and caught
#: almost no +20% slowdown for any (its processes' spread was 22-250%): 2 keeps a margin to 1%.
NOISE_TOLERANCE_K: Final = 2.0


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
    @property
    def noise(self) -> float | None: ...


def between_process_noise(medians: Sequence[float]) -> float:
    """The relative spread between processes: ``(max - min) / |median|`` of their medians (0 for one)."""
    if not medians:
        raise ValueError("no medians to compare")
    middle = abs(statistics.median(medians))
    return (max(medians) - min(medians)) / middle if middle else 0.0


def baseline_decided(medians: Sequence[float], rule: Rule | None = None) -> bool:
    """Whether the baseline processes measured so far (their medians) decide its tolerance.

    At least :data:`BASELINE_MIN_PROCESSES` and at most :data:`BASELINE_PROCESSES` processes. In
    between, more processes are needed only when their noise could still widen the tolerance
    (:meth:`Rule.tolerance_for`): never when the tolerance was set (``rule.noise_scale`` None), else
    while ``noise_scale x`` the noise, scaled up to the range :data:`BASELINE_PROCESSES` processes
    would be expected to show, exceeds the plain tolerance.
    """
    count = len(medians)
    if count >= BASELINE_PROCESSES:
        return True
    if count < BASELINE_MIN_PROCESSES:
        return False
    rule = DEFAULT_RULE if rule is None else rule
    if rule.noise_scale is None:
        return True
    scale = _EXPECTED_RANGE.get(BASELINE_PROCESSES, 2.326) / _EXPECTED_RANGE.get(count, 1.693)
    return rule.noise_scale * between_process_noise(medians) * scale <= rule.tolerance


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
    ``tolerance`` is the one applied (:meth:`Rule.tolerance_for`), ``noise`` the baseline's.
    """

    state: Literal["passed", "regression", "faster"]
    current: float
    baseline: float
    limit: float
    noise_band: float
    settled: bool = True
    tolerance: float = TOLERANCE
    noise: float | None = None

    @property
    def delta(self) -> float:
        """Relative change of the median (+0.3 = 30% larger)."""
        return (self.current - self.baseline) / self.baseline if self.baseline else 0.0


@dataclass(frozen=True)
class Rule:
    """The rule's parameters (see the module docstring); ``unit`` only formats :meth:`describe`.

    ``floor`` is absolute, in the objective's unit; a :class:`pytest_autotune.policy.Policy` gives
    its rule as ``policy.rule``. ``noise_scale`` is the multiple of a baseline's noise that its
    tolerance covers (:meth:`tolerance_for`); None when the tolerance was set explicitly.
    """

    tolerance: float = TOLERANCE
    noise_k: float = NOISE_K
    floor: float = TIME_FLOOR
    maximize: bool = False
    unit: str = "s"
    noise_scale: float | None = NOISE_TOLERANCE_K

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

    def tolerance_for(self, baseline: Recorded) -> float:
        """The tolerance ``baseline`` is judged with: the larger of :attr:`tolerance` and
        ``noise_scale x`` its noise; :attr:`tolerance` alone when it has none or the tolerance was set."""
        noise = baseline.noise
        if self.noise_scale is None or noise is None:
            return self.tolerance
        return max(self.tolerance, self.noise_scale * noise)

    def judge(self, current: Measured, baseline: Recorded) -> Verdict:
        """Apply the rule to ``current`` against ``baseline``."""
        reference = baseline.median
        tolerance = self.tolerance_for(baseline)
        noise_band = self.noise_band(self.baseline_spread(baseline), self.spread(current))
        significant = abs(current.median - reference) > self.floor
        sign = self._sign
        worse_limit = reference + sign * (abs(reference) * tolerance + noise_band)
        better_limit = reference - sign * (abs(reference) * tolerance + noise_band)
        noise = baseline.noise
        if significant and sign * (current.median - worse_limit) > 0:
            return Verdict(
                "regression", current.median, reference, worse_limit, noise_band, False, tolerance, noise
            )
        if significant and sign * (better_limit - current.median) > 0:
            return Verdict(
                "faster", current.median, reference, better_limit, noise_band, True, tolerance, noise
            )
        within_tolerance = sign * (current.median - reference) <= abs(reference) * tolerance
        settled = within_tolerance or not significant
        return Verdict(
            "passed", current.median, reference, worse_limit, noise_band, settled, tolerance, noise
        )

    def beats(self, challenger: Measured, incumbent: Measured) -> bool:
        """Whether ``challenger`` is better than ``incumbent`` by more than the noise band plus the
        floor (tune mode replaces the committed configuration only then)."""
        gain = self._sign * (incumbent.median - challenger.median)
        return gain > self.noise_band(self.spread(challenger), self.spread(incumbent)) + self.floor

    def format(self, value: float) -> str:
        """``value`` in the objective's unit (``"12.3us"`` for times, ``"95.2 GFLOP/s"`` otherwise)."""
        return format_seconds(value) if self.unit == "s" else f"{value:.4g} {self.unit}"

    def describe_tolerance(self, verdict: Verdict) -> str:
        """Where the tolerance of ``verdict`` came from: ``"tolerance 24% (2 x the baseline's noise
        12%, the spread between its fresh processes)"``, ``"tolerance 10% (at least 10%; noise 3%)"``
        or ``"tolerance 30% (set for this test)"``."""
        applied = f"tolerance {verdict.tolerance:.0%}"
        if self.noise_scale is None:
            return f"{applied} (set explicitly)"
        if verdict.noise is None:
            return f"{applied} (the baseline has no noise measured)"
        noise = f"the baseline's noise {verdict.noise:.0%}, the spread between its fresh processes"
        if verdict.tolerance > self.tolerance:
            return f"{applied} ({self.noise_scale:g} x {noise})"
        return f"{applied} (at least {self.tolerance:.0%}; {noise})"

    def describe(self) -> str:
        """The rule with its numbers, one line (the default: ``median > baseline x (1 + 10%) + 1.5 x
        spread (spread = 2 x (median - q1), the larger of the baseline's and the measurement's) and
        more than 2us slower``; with ``noise_scale`` the tolerance reads ``max(10%, 2 x noise)``)."""
        if self.maximize:
            limit, half, worse = "median < baseline x (1 - {}) - {} x spread", "q3 - median", "lower"
        else:
            limit, half, worse = "median > baseline x (1 + {}) + {} x spread", "median - q1", "higher"
            worse = "slower" if self.unit == "s" else worse
        tolerance = f"{self.tolerance:.0%}"
        if self.noise_scale is not None:
            tolerance = f"max({tolerance}, {self.noise_scale:g} x noise)"
        return (
            f"{limit.format(tolerance, f'{self.noise_k:g}')} (spread = 2 x ({half}), the "
            f"larger of the baseline's and the measurement's) and more than {self.format(self.floor)} {worse}"
        )


#: The rule with its default parameters (a time objective).
DEFAULT_RULE: Final = Rule()
