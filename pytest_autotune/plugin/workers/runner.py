"""Calling a tunable test's body once with a configuration, and naming what happened.

:func:`run_trial` turns the exceptions of one call into a trial outcome
(:func:`pytest_autotune.backends.errors.classify_exception` names them).
``pytest.skip``/``fail``/``xfail``, ``KeyboardInterrupt`` and ``SystemExit`` derive from
``BaseException`` and are not caught: they end the tuning loop exactly as they would end a plain
test (so does ``pytest.exit``, although it derives from ``Exception``). :func:`run_final` calls the
body as the real test, letting every exception through. A :class:`TrialRunner` is what tune mode
calls per trial: in this process (:class:`InProcessTrials`) or in a worker
(:mod:`pytest_autotune.plugin.workers.parent`).

If the test also uses pytest-benchmark's ``benchmark`` fixture, the configuration goes into its
``extra_info``; during tuning trials the fixture is switched off and re-armed before each call (it
may only be used once per test), and switched back on for the final call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from pytest_autotune.backends.errors import classify_exception
from pytest_autotune.fixture import Autotune
from pytest_autotune.outcome import Label, Outcome, Rejected
from pytest_autotune.timing.measure import Stats

if TYPE_CHECKING:
    import pytest

__all__ = ["BodyRun", "InProcessTrials", "TrialRunner", "run_final", "run_trial"]

_BENCHMARK_ENABLED: Final = "_pytest_autotune_enabled"


@dataclass(frozen=True)
class BodyRun:
    """One call of the test body: its configuration, the samples it produced and how it ended."""

    config: dict[str, Any]
    samples: tuple[float, ...]
    label: Label = "ok"
    detail: str = ""
    #: The CPU seconds of each sample (:mod:`pytest_autotune.timing.clock`), ``()`` when the
    #: samples are not times read by ``autotune.measure``.
    cpu: tuple[float, ...] = ()

    @property
    def measured(self) -> bool:
        """True when the body ran to completion and produced at least one sample."""
        return self.label == "ok" and bool(self.samples)

    @property
    def stats(self) -> Stats | None:
        """Statistics of the samples (None when there are none), with their CPU times' (:attr:`Stats.cpu`)."""
        return Stats.of(self.samples, self.cpu or None) if self.samples else None

    def outcome(self) -> Outcome:
        """The trial outcome: the median sample when measured, else the failure."""
        if self.label != "ok":
            return Outcome.failed(self.label, self.detail)
        stats = self.stats
        if stats is None:
            raise ValueError("a run without samples has no outcome")
        return Outcome.ok(stats.median)


def _call_test_function(item: pytest.Function) -> None:
    # As pytest's own pytest_pyfunc_call: the test's arguments are its direct fixtures.
    testargs = {name: item.funcargs[name] for name in item._fixtureinfo.argnames}
    item.obj(**testargs)


def _prepare_benchmark(item: pytest.Function, config: dict[str, Any], *, trial: bool) -> None:
    benchmark = item.funcargs.get("benchmark")
    if benchmark is None or not hasattr(benchmark, "extra_info"):
        return
    benchmark.extra_info["autotune_config"] = dict(config)
    if not hasattr(benchmark, _BENCHMARK_ENABLED):
        setattr(benchmark, _BENCHMARK_ENABLED, not getattr(benchmark, "disabled", False))
    if hasattr(benchmark, "_mode"):
        benchmark._mode = None  # re-arm the single-use fixture for this call
    if hasattr(benchmark, "disabled"):
        benchmark.disabled = trial or not getattr(benchmark, _BENCHMARK_ENABLED)


def run_trial(
    item: pytest.Function,
    autotune: Autotune,
    config: dict[str, Any],
    *,
    repeat: int,
    warmup: int | None = None,
) -> BodyRun:
    """Call the body with ``config``; return its samples and outcome label (see module docstring).

    ``warmup`` replaces the policy's warm-up calls per ``autotune.measure`` unless the test set them.
    """
    from _pytest.outcomes import Exit

    autotune.begin_run(config, repeat_default=repeat, warmup_default=warmup)
    _prepare_benchmark(item, config, trial=True)
    try:
        _call_test_function(item)
    except Exit:  # pytest.exit() derives from Exception but ends the session, as in a plain test
        raise
    except Exception as exc:  # BaseException subclasses (pytest outcomes, interrupts) propagate
        label, detail = classify_exception(exc)
        samples = tuple(autotune.end_run(completed=False))
        return BodyRun(dict(config), samples, label, detail, autotune.ended_cpu)
    return _ended(autotune, config)


def _ended(autotune: Autotune, config: dict[str, Any]) -> BodyRun:
    samples = tuple(autotune.end_run())
    return BodyRun(dict(config), samples, cpu=autotune.ended_cpu)


class TrialRunner(Protocol):
    """Calls a tunable test's body once per trial: ``runner(config, repeat) -> BodyRun``.

    :class:`InProcessTrials` calls it in the pytest process;
    :class:`pytest_autotune.plugin.workers.parent.IsolatedTrials` in a worker process.
    """

    def __call__(self, config: dict[str, Any], repeat: int) -> BodyRun: ...


@dataclass(frozen=True)
class InProcessTrials:
    """Trials in the pytest process (``--autotune-isolate=none``): :func:`run_trial` on the item."""

    item: pytest.Function
    autotune: Autotune

    def __call__(self, config: dict[str, Any], repeat: int) -> BodyRun:
        """Run one trial."""
        return run_trial(self.item, self.autotune, config, repeat=repeat)


def run_final(
    item: pytest.Function, autotune: Autotune, config: dict[str, Any], *, repeat: int, benchmark: bool = True
) -> BodyRun:
    """Call the body with ``config`` as the real test: every exception propagates.

    ``autotune.reject`` of this configuration fails the test with the reason. ``benchmark=False``
    (a re-measurement) keeps pytest-benchmark's fixture from recording this call.
    """
    import pytest

    autotune.begin_run(config, repeat_default=repeat)
    _prepare_benchmark(item, config, trial=not benchmark)
    try:
        _call_test_function(item)
    except Rejected as exc:
        autotune.end_run(completed=False)
        pytest.fail(f"autotune.reject() of configuration {config}: {exc.reason}", pytrace=False)
    return _ended(autotune, config)
