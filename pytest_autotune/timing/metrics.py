"""Named metrics of one call of a test body (``autotune.metric("GFLOP/s", ...)``), beside its time.

A metric is either a number the body computed (an error norm, bytes moved) or a function of the
time, ``lambda seconds: flops / seconds / 1e9``, which is evaluated on the median of the times that
``autotune.measure`` took during that call. Kernel Tuner's ``metrics`` are functions of the
measured values in the same way; there they receive a dict holding ``"time"`` in milliseconds,
here the median in seconds (a function written the Kernel Tuner way gets an error saying so).

Functions are kept, not only their values, so the plugin can evaluate them again on the median it
reports (the baseline measured after tuning, or the least disturbed of a check's measurements):
the time and the GFLOP/s shown side by side then agree.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Final

__all__ = ["RESERVED_NAMES", "MetricError", "MetricValue", "RunMetrics", "check_metric_name"]

#: A metric: a number, or a function of the median measured seconds.
MetricValue = float | Callable[[float], float]

#: Names a metric cannot take: the built-in objective and the keys of the ``--autotune-json``
#: export's ``extra_info`` that the plugin writes itself (metrics sit beside them there).
RESERVED_NAMES: Final = frozenset({"time", "device", "mode", "state", "unit"})


class MetricError(ValueError):
    """A metric has a bad name or gave a value that is not a finite number."""


def check_metric_name(name: object) -> str:
    """``name`` when it can name a metric (a non-empty string, not reserved); else :class:`MetricError`."""
    if not isinstance(name, str) or not name.strip():
        raise MetricError(f"a metric name must be a non-empty string, got {name!r}")
    if name in RESERVED_NAMES or name.startswith("autotune_"):
        raise MetricError(
            f"{name!r} cannot name a metric: reserved for the time objective and the export's own keys "
            f"({', '.join(sorted(RESERVED_NAMES))}, autotune_*)"
        )
    return name


def _number(name: str, value: object, source: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise MetricError(f"metric {name!r}: {source} {value!r}, which is not a finite number")
    return float(value)


class RunMetrics:
    """The metrics one call of the body defined, in the order it defined them (the last value of a
    name wins, as an assignment would)."""

    def __init__(self) -> None:
        self._defined: dict[str, MetricValue] = {}

    def define(self, name: str, value: object) -> None:
        """Record ``value`` (a finite number or a one-argument function) under ``name``."""
        check_metric_name(name)
        if callable(value):
            self._defined[name] = value
        else:
            self._defined[name] = _number(name, value, "got")

    def __contains__(self, name: object) -> bool:
        return name in self._defined

    def __bool__(self) -> bool:
        return bool(self._defined)

    def needs_time(self) -> bool:
        """True when some metric is a function of the time."""
        return any(callable(value) for value in self._defined.values())

    def evaluate(self, seconds: float | None) -> dict[str, float]:
        """Every metric's value, functions evaluated on ``seconds`` (the median measured time).

        Raises :class:`MetricError` naming the metric when a function is given no time (the body
        never measured), raises, or returns something other than a finite number.
        """
        return {name: self.value(name, seconds) for name in self._defined}

    def value(self, name: str, seconds: float | None) -> float:
        """The value of one metric (see :meth:`evaluate`)."""
        defined = self._defined[name]
        if not callable(defined):
            return defined
        if seconds is None:
            raise MetricError(
                f"metric {name!r} is a function of the time, but the body never timed anything "
                "with autotune.measure()"
            )
        try:
            result = defined(seconds)
        except (TypeError, KeyError, IndexError) as exc:
            raise MetricError(
                f"metric {name!r}: calling it with the median time in seconds ({seconds!r}) raised "
                f"{type(exc).__name__}: {exc}; the function receives seconds as a float, not Kernel "
                "Tuner's dict with 'time' in ms: write e.g. lambda seconds: flops / seconds / 1e9"
            ) from exc
        except ZeroDivisionError as exc:
            raise MetricError(f"metric {name!r}: division by zero for {seconds!r} seconds") from exc
        return _number(name, result, f"its function returned for {seconds!r} seconds")
