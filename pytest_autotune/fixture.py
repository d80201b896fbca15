"""The ``autotune`` fixture object: the configuration under test and the tools to time it.

One :class:`Autotune` exists per tunable test. The plugin sets the configuration before each call
of the test body (once in a normal run, once per trial when tuning) and collects the samples that
:meth:`Autotune.measure` and :meth:`Autotune.record` produced during that call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NoReturn, TypeVar

from pytest_autotune.backends.base import Backend, BackendError
from pytest_autotune.outcome import Rejected
from pytest_autotune.timing.measure import Stats, Timer, bad_value

if TYPE_CHECKING:
    from pytest_autotune.policy import Policy
    from pytest_autotune.space.base import Space

__all__ = ["MEASURE_REPEAT", "TRIAL_REPEAT", "Autotune", "Rejected"]

T = TypeVar("T")

#: Timed calls per :meth:`Autotune.measure` during a tuning trial, unless the test says otherwise.
TRIAL_REPEAT: Final = 5
#: Timed calls per :meth:`Autotune.measure` otherwise (checks, baselines, finalists).
MEASURE_REPEAT: Final = 10


class Autotune:
    """What a tunable test sees through its ``autotune`` fixture.

    ``config`` is the configuration under test (a dict by parameter name); ``tuning`` is True while
    ``pytest --autotune`` tunes this test; ``device`` is the key the result is stored under;
    ``timing`` holds the statistics of the last :meth:`measure` call. ``backend`` (given by the
    plugin) is the test's device backend, which :meth:`build` falls back to.
    """

    def __init__(
        self,
        *,
        nodeid: str,
        space: Space,
        policy: Policy,
        device: str,
        timer: Timer,
        tuning: bool,
        sync: Callable[[], Any] | None = None,
        backend: Backend | None = None,
    ) -> None:
        self.nodeid = nodeid
        self.space = space
        self.policy = policy
        self.device = device
        self.tuning = tuning
        self.timing: Stats | None = None
        self._timer = timer
        self._sync = sync
        self._backend = backend
        self._config: dict[str, Any] = {}
        self._samples: list[float] = []
        self._repeat_default = MEASURE_REPEAT
        self._warmup_default: int | None = None

    @property
    def timer(self) -> Timer:
        """The timer that measures this test (the ``autotune_timer`` fixture)."""
        return self._timer

    @property
    def config(self) -> dict[str, Any]:
        """The configuration under test, by parameter name."""
        return self._config

    # -- used by test bodies --------------------------------------------------------------------------
    def measure(
        self,
        fn: Callable[[], T],
        *,
        warmup: int | None = None,
        repeat: int | None = None,
        sync: Callable[[], Any] | None = None,
    ) -> T:
        """Time ``fn`` (``warmup`` untimed calls, then ``repeat`` timed ones) and return its last result.

        When ``fn`` returns something the test's device can time (a ``pyopencl.Event`` or a list of
        them) that device time is used; otherwise the wall-clock time, after ``sync()`` (and the
        backend's synchronisation, e.g. ``cl_queue.finish()`` when the test uses ``cl_queue``).
        With the default objective ``"time"`` each timed call is one sample of the objective; with
        another objective the timings are only kept in :attr:`timing`.
        """
        if warmup is None:
            run_default = self._warmup_default  # a mode's choice: the test's own setting wins
            set_by_test = "warmup" in self.policy.explicit
            warmup = self.policy.warmup if set_by_test or run_default is None else run_default
        if repeat is None:
            repeat = self.policy.repeat or self._repeat_default
        if warmup < 0 or repeat < 1:
            raise ValueError(f"{self.nodeid}: autotune.measure needs warmup >= 0 and repeat >= 1")
        call = fn if sync is None else _with_sync(fn, sync)
        for _ in range(warmup):
            call()
            if self._sync is not None:
                self._sync()
        seconds: list[float] = []
        result: Any = None
        for _ in range(repeat):
            result, elapsed = self._timer(call, self)
            self._check_value(elapsed, positive=True, what=f"the timer {type(self._timer).__name__} returned")
            seconds.append(float(elapsed))
        self.timing = Stats.of(seconds)
        if self.policy.objective == "time":
            self._samples.extend(seconds)
        return result  # type: ignore[no-any-return]

    def record(self, value: float) -> None:
        """Record one value of the objective (seconds for ``"time"``, else in the objective's unit)."""
        self._check_value(value, positive=self.policy.objective == "time", what="autotune.record got")
        self._samples.append(float(value))

    def _check_value(self, value: object, *, positive: bool, what: str) -> None:
        """Fail the test (not just this configuration) when a measured value is unusable.

        A bad value is the timer's or the test's error, not a property of the configuration, so
        it must not become an infeasible trial, a winner or a baseline: the test fails, naming
        itself, the configuration and the value (in a trial worker the failure reaches the
        parent as the body's ``pytest.fail``).
        """
        problem = bad_value(value, positive=positive)
        if problem is not None:
            import pytest

            pytest.fail(
                f"{self.nodeid}: {what} {problem} for configuration {self._config}; "
                "a measured value must be a finite number" + (" of seconds above zero" if positive else ""),
                pytrace=False,
            )

    def reject(self, reason: str) -> NoReturn:
        """Declare the current configuration infeasible (trial label ``constraints``) and stop the body."""
        raise Rejected(reason)

    def build(
        self,
        context: Any,
        source: str,
        *,
        defines: Mapping[str, Any] | None = None,
        options: Sequence[str] = (),
    ) -> Any:
        """Build a program for ``context`` with one ``-D`` per define (default: the configuration), cached.

        The backend that owns ``context`` builds it (OpenCL: a ``pyopencl.Context``), else the
        test's own backend; a clear error when that one builds no programs (the host).
        """
        from pytest_autotune.backends import backend_for_object

        backend = backend_for_object(context) or self._backend
        if backend is None:
            raise BackendError(
                f"{self.nodeid}: autotune.build got a {type(context).__name__!r}, which no loaded "
                "backend owns, and the test has no backend"
            )
        try:
            return backend.build(context, source, self._config if defines is None else defines, options)
        except BackendError as exc:
            raise BackendError(f"{self.nodeid}: autotune.build: {exc}; {_builders_hint()}") from exc

    # -- used by the plugin ---------------------------------------------------------------------------
    def begin_run(
        self, config: Mapping[str, Any], *, repeat_default: int, warmup_default: int | None = None
    ) -> None:
        """Prepare one call of the test body with ``config``; ``warmup_default`` (None: the policy's)
        replaces the policy's warm-up calls unless the test set them."""
        self._config = dict(config)
        self._samples = []
        self._repeat_default = repeat_default
        self._warmup_default = warmup_default
        self.timing = None

    def end_run(self) -> list[float]:
        """The samples the body produced since :meth:`begin_run`."""
        samples, self._samples = self._samples, []
        return samples

    def __repr__(self) -> str:
        return f"<autotune {self.nodeid} device={self.device!r} config={self._config!r}>"


def _builders_hint() -> str:
    """Which fixtures put a test on a backend (those can build programs)."""
    from pytest_autotune.backends import available_backends, backend_entry

    choices = [
        f"{name} ({', '.join(sorted(backend_entry(name).fixtures))})"
        for name in available_backends()
        if backend_entry(name).fixtures
    ]
    return "request the fixtures of a backend that builds: " + "; ".join(choices)


def _with_sync(fn: Callable[[], T], sync: Callable[[], Any]) -> Callable[[], T]:
    def call() -> T:
        result = fn()
        sync()
        return result

    return call
