"""Test helpers for pytest-autotune and for projects that extend it (public API).

Three kinds of helpers, the ones pytest-autotune's own tests use:

* **Fake timers** (:class:`FakeTimer`, :class:`ConstantTimer`, the cost :func:`bowl`): overrides of
  the ``autotune_timer`` fixture that report a time computed from the configuration instead of
  measuring one, so that tuning runs, regression checks and reports can be tested
  deterministically, without a device::

      # conftest.py
      import pytest
      from pytest_autotune.testing import FakeTimer, bowl

      @pytest.fixture
      def autotune_timer():
          return FakeTimer(bowl)  # best configuration: every integer parameter 3

  To model a disturbed machine, subclass :class:`FakeTimer` and override :meth:`FakeTimer.seconds`
  (it sees :attr:`FakeTimer.calls`, the number of timed calls so far). The fake timers report a CPU
  time too (:mod:`pytest_autotune.timing.clock`), equal to the wall time unless ``parallelism``
  (CPU seconds per wall second) or ``wall_slowdown`` (wall time only: a busy machine, a kernel
  that lost its parallelism) say otherwise.
* **BruteForceSpace**: the reference implementation of :class:`~pytest_autotune.space.base.Space`
  that enumerates the product and answers every operation the obvious way. Tests compare the real
  (chain of trees) space against it; it is kept out of the library proper, which never uses it.
* **StrategyConformance**: the contract every search strategy must meet (ask/tell on ``Points``,
  seeding, exhaustion, failures, journal resume, options), as a pytest test class that a strategy
  (built-in or a user's) runs against itself::

      from pytest_autotune.testing import StrategyConformance

      class TestMyStrategy(StrategyConformance):
          strategy = "mypackage.strategies:MyStrategy"  # or the class, or a registered name
          options = {"population": 8}

  See :class:`~pytest_autotune.testing.conformance.StrategyConformance` for the checks, the
  class attributes that size them, and how to opt out of one. Its main space, :func:`toy_space`
  with :func:`toy_objective` (constraints, failing configurations, a known optimum), suits tests
  of a tuning loop as well.

Importing this module is light (the standard library only), so a conftest can import the timers
without loading numpy into a plain ``pytest`` run; the space oracle and the suite load on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pytest_autotune._lazy import lazy_exports

__all__ = [
    "BruteForceSpace",
    "ConstantTimer",
    "FakeTimer",
    "StrategyConformance",
    "StrategyUnderTest",
    "bowl",
    "toy_objective",
    "toy_space",
]

#: A cost model: seconds for a configuration (a dict by parameter name).
Cost = Callable[[Mapping[str, Any]], float]


def bowl(config: Mapping[str, Any], *, centre: int = 3, unit: float = 1e-4) -> float:
    """``unit x (1 + sum((v - centre)**2))`` over the configuration's integer values, in seconds.

    A smooth cost whose optimum sets every integer parameter to ``centre`` (booleans, strings and
    floats are ignored); with the defaults the optimum takes 100 us.
    """
    return unit * (1 + sum((value - centre) ** 2 for value in config.values() if type(value) is int))


class FakeTimer:
    """An ``autotune_timer`` that runs the function and reports ``cost(config)`` seconds.

    ``cost`` receives the configuration under test (``autotune.config``). ``slowdown`` maps a part of
    a test's node id to a factor: the time of every test whose node id contains it is multiplied by
    it (an injected slowdown, without touching the test's code). It may also be given as a string
    ``"part=factor,part=factor"``, e.g. read from an environment variable that a test sets before
    running pytest in a subprocess. :attr:`calls` counts the timed calls; :meth:`seconds` is the
    hook to override for time that changes from call to call.

    Both clocks (:meth:`time_both`): the CPU time of a call is its wall time divided by the
    ``wall_slowdown`` factors and multiplied by the ``parallelism`` factors of the node (both maps
    like ``slowdown``, default 1: CPU time equals wall time). ``slowdown`` is more work (both clocks
    grow); ``wall_slowdown`` is wall time only (a busy machine; with ``parallelism`` 2 in the
    baseline, ``wall_slowdown`` 2 is a kernel that lost its parallelism).
    """

    def __init__(
        self,
        cost: Cost,
        *,
        slowdown: Mapping[str, float] | str | None = None,
        wall_slowdown: Mapping[str, float] | str | None = None,
        parallelism: Mapping[str, float] | str | None = None,
    ) -> None:
        self.cost = cost
        self.slowdown = _factors(slowdown)
        self.wall_slowdown = _factors(wall_slowdown)
        self.parallelism = _factors(parallelism)
        #: Timed calls so far (including the current one, inside :meth:`seconds`).
        self.calls = 0

    def __call__(self, fn: Callable[[], Any], autotune: Any) -> tuple[Any, float]:
        result, seconds, _ = self.time_both(fn, autotune)
        return result, seconds

    def time_both(self, fn: Callable[[], Any], autotune: Any) -> tuple[Any, float, float]:
        """``(result, wall seconds, CPU seconds)`` of one call (:mod:`pytest_autotune.timing.clock`)."""
        result = fn()
        self.calls += 1
        seconds = self.seconds(autotune)
        return result, seconds, self.cpu_seconds(autotune, seconds)

    def factor(self, nodeid: str, factors: Mapping[str, float] | None = None) -> float:
        """The product of the ``slowdown`` factors (or of ``factors``) whose key is part of
        ``nodeid`` (1 if none)."""
        product = 1.0
        for part, factor in (self.slowdown if factors is None else factors).items():
            if part in nodeid:
                product *= factor
        return product

    def seconds(self, autotune: Any) -> float:
        """The time of the current call: ``cost(autotune.config)`` times the node's slowdown factors
        (``slowdown`` and ``wall_slowdown``)."""
        nodeid = str(autotune.nodeid)
        return (
            float(self.cost(autotune.config)) * self.factor(nodeid) * self.factor(nodeid, self.wall_slowdown)
        )

    def cpu_seconds(self, autotune: Any, seconds: float) -> float:
        """The CPU time of the current call whose wall time is ``seconds`` (class docstring)."""
        nodeid = str(autotune.nodeid)
        return seconds / self.factor(nodeid, self.wall_slowdown) * self.factor(nodeid, self.parallelism)


class ConstantTimer(FakeTimer):
    """A :class:`FakeTimer` whose every configuration takes ``seconds`` (default 100 us)."""

    def __init__(
        self,
        seconds: float = 1e-4,
        *,
        slowdown: Mapping[str, float] | str | None = None,
        wall_slowdown: Mapping[str, float] | str | None = None,
        parallelism: Mapping[str, float] | str | None = None,
    ) -> None:
        self.constant = float(seconds)
        super().__init__(
            self._constant, slowdown=slowdown, wall_slowdown=wall_slowdown, parallelism=parallelism
        )

    def _constant(self, config: Mapping[str, Any]) -> float:
        return self.constant


def _factors(given: Mapping[str, float] | str | None) -> dict[str, float]:
    return _parse_slowdown(given) if isinstance(given, str) else dict(given or {})


def _parse_slowdown(text: str) -> dict[str, float]:
    """``"part=factor,part=factor"`` as a dict (an empty string: no slowdown)."""
    slowdown: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        part, _, factor = item.partition("=")
        try:
            value = float(factor)
        except ValueError:
            value = 0.0
        if not value > 0 or value == float("inf"):
            raise ValueError(
                f"slowdown {text!r}: expected 'part=factor' with a positive factor, got {item!r}"
            )
        slowdown[part] = value
    return slowdown


# -- lazily loaded names: they need numpy and the space package ----------------------------------------
_LAZY: dict[str, str] = {
    "BruteForceSpace": "pytest_autotune.testing.bruteforce",
    "StrategyConformance": "pytest_autotune.testing.conformance",
    "StrategyUnderTest": "pytest_autotune.testing.conformance",
    "toy_space": "pytest_autotune.testing.conformance",
    "toy_objective": "pytest_autotune.testing.conformance",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from pytest_autotune.testing.bruteforce import BruteForceSpace
    from pytest_autotune.testing.conformance import (
        StrategyConformance,
        StrategyUnderTest,
        toy_objective,
        toy_space,
    )
