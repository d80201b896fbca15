"""Measuring the declared default after the search: just enough to say how many times slower it is.

The 'vs default' figure needs the declared default measured beside the winner, in the finalist
rounds. A default many times slower than the winner used to take most of the phase after the
search (issue 47: a default 17-21x slower than the winner, measured in full rounds of
:data:`~pytest_autotune.timing.measure.MEASURE_REPEAT` calls each). :class:`DefaultMeter` measures
it instead:

* first a probe of :data:`PROBE_REPEAT` calls (fewer when its time in the search says that they
  would not fit in its cap); when even its fastest call is :data:`OUTCLASSED`
  times worse than the best finalist of the round, it is measured no more, and the figure is a
  lower bound (reported ``≥N.Nx``);
* else up to the full round, then further rounds, while the calls fit its time cap
  (:func:`default_cap`: a fifth of the search's time, at least :data:`CAP_FLOOR` and at most
  :data:`CAP_CEILING` seconds, as the clock saw the probe's calls, set-up and warm-up included).
  At least one call is always made: without one there is no figure.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pytest_autotune.plugin.workers.runner import BodyRun
from pytest_autotune.timing.measure import MEASURE_REPEAT, Stats

if TYPE_CHECKING:
    from pytest_autotune.plugin.workers.runner import TrialRunner
    from pytest_autotune.tuning.trials import TuningResult

__all__ = [
    "CAP_CEILING",
    "CAP_FLOOR",
    "CAP_SHARE",
    "OUTCLASSED",
    "PROBE_REPEAT",
    "DefaultMeter",
    "best_median",
    "clearly_outclassed",
    "default_cap",
    "searched_seconds",
]

#: A finalist (the declared default, typically) this many times worse than the best measures no
#: further round: one round (for the default, a probe) says how many times, and it cannot win.
OUTCLASSED: Final = 2.0
#: Calls of the default's first measurement, before it is known whether it is outclassed.
PROBE_REPEAT: Final = 3
#: The default's measurement may take this share of the search's time ...
CAP_SHARE: Final = 0.2
#: ... but no less than this many seconds (a short search still measures a fast default fully) ...
CAP_FLOOR: Final = 1.0
#: ... and no more than this many seconds.
CAP_CEILING: Final = 10.0


def default_cap(search_seconds: float) -> float:
    """Seconds the default's measurement may take after a search of ``search_seconds``."""
    return min(CAP_CEILING, max(CAP_FLOOR, CAP_SHARE * search_seconds))


def clearly_outclassed(samples: Sequence[float], best: float, maximize: bool) -> bool:
    """Whether even the best of ``samples`` is :data:`OUTCLASSED` times worse than ``best``."""
    if best <= 0 or not samples:
        return False
    if maximize:
        top = max(samples)
        return top <= 0 or best / top >= OUTCLASSED
    return min(samples) / best >= OUTCLASSED


def searched_seconds(result: TuningResult, config: dict[str, Any], unit: str, maximize: bool) -> float | None:
    """Seconds a call of ``config`` took in the search (its trial's value), when the objective is a time."""
    if unit != "s" or maximize:
        return None
    for record in result.history:
        if record.config == config and record.outcome.value is not None:
            return record.outcome.value
    return None


def best_median(
    measured: dict[int, list[tuple[float, ...]]], round_index: int, other_than: int, maximize: bool
) -> float | None:
    """The best median of round ``round_index`` among the finalists other than ``other_than``."""
    medians = [
        Stats.of(list(rounds[round_index])).median
        for i, rounds in measured.items()
        if i != other_than and len(rounds) > round_index
    ]
    if not medians:
        return None
    return max(medians) if maximize else min(medians)


@dataclass
class DefaultMeter:
    """Measures the declared default within ``cap`` seconds of ``clock`` (see the module docstring).

    :meth:`round` is called once per finalist round; :attr:`at_least` tells that its figure is a
    lower bound (it was clearly outclassed after the probe).
    """

    trials: TrialRunner
    config: dict[str, Any]
    cap: float
    maximize: bool = False
    #: Seconds one call is expected to take (its time in the search), when known: sizes the probe
    #: so that it too keeps within the cap.
    estimate: float | None = None
    clock: Callable[[], float] = time.perf_counter
    #: Seconds its calls took so far.
    spent: float = 0.0
    #: Calls made so far.
    calls: int = 0
    #: Its figure is a lower bound: the probe showed it clearly outclassed, and it measured no more.
    at_least: bool = False
    #: It measures no further round (outclassed, failed, or its cap is spent).
    done: bool = False

    def _fits(self, wanted: int) -> int:
        """How many of ``wanted`` calls fit in what is left of the cap (the pace so far)."""
        per_call = self.spent / self.calls if self.calls else self.estimate
        if per_call is None:
            return wanted
        if per_call <= 0:
            return wanted
        return max(0, min(wanted, math.floor((self.cap - self.spent) / per_call + 1e-9)))

    def _run(self, repeat: int) -> BodyRun:
        started = self.clock()
        run = self.trials(self.config, repeat)
        self.spent += self.clock() - started
        self.calls += repeat
        return run

    def round(self, best: float | None) -> BodyRun | None:
        """The default's samples of one round, ``best`` the best finalist's median so far (None
        when none was measured); None when it measures no more."""
        if self.done:
            return None
        if self.calls > 0:  # a later round: a full one, if it fits
            if self._fits(MEASURE_REPEAT) < MEASURE_REPEAT:
                self.done = True
                return None
            return self._run(MEASURE_REPEAT)
        probe = self._run(max(1, self._fits(PROBE_REPEAT if best is not None else MEASURE_REPEAT)))
        if not probe.measured:
            self.done = True
            return probe
        if best is not None and clearly_outclassed(probe.samples, best, self.maximize):
            self.at_least = self.done = True
            return probe
        more = self._fits(MEASURE_REPEAT - self.calls)
        if more < MEASURE_REPEAT - self.calls:
            self.done = True  # its cap is spent: this round is all it gets
        if more <= 0:
            return probe
        rest = self._run(more)
        if not rest.measured:
            self.done = True
            return rest
        return BodyRun(probe.config, probe.samples + rest.samples)
