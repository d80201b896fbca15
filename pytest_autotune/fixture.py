"""The ``autotune`` fixture object: the configuration under test and the tools to time it.

One :class:`Autotune` exists per tunable test. The plugin sets the configuration before each call
of the test body (once in a normal run, once per trial when tuning) and collects the samples that
:meth:`Autotune.measure` and :meth:`Autotune.record` produced during that call, and the named
metrics of :meth:`Autotune.metric` (:mod:`pytest_autotune.timing.metrics`).

Why a separate ``metric(name, value)`` and not ``record(value, name=...)``: ``record`` gives samples
of the objective, which the tuner minimises and the regression check judges (several calls make a
distribution whose median counts); a metric is one named value per configuration that is shown,
stored and exported but judged by nothing, and may be a function of the measured time. Keeping
them apart keeps "what is optimised and checked" unambiguous: the time, unless the test names
another objective (``@tunable(objective="GFLOP/s", maximize=True)`` then optimises that metric).
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from pytest_autotune.backends.base import Backend, BackendError
from pytest_autotune.outcome import Rejected
from pytest_autotune.timing.clock import read_clocks
from pytest_autotune.timing.measure import MEASURE_REPEAT, TRIAL_REPEAT, Stats, Timer, bad_value, warm_up
from pytest_autotune.timing.metrics import MetricError, RunMetrics

if TYPE_CHECKING:
    from pytest_autotune.backends.geometry import Geometry, LaunchSizes
    from pytest_autotune.policy import Policy
    from pytest_autotune.space.base import Space

__all__ = ["MEASURE_REPEAT", "TRIAL_REPEAT", "Autotune", "Rejected"]

T = TypeVar("T")


class Autotune:
    """What a tunable test sees through its ``autotune`` fixture.

    ``config`` is the configuration under test (a dict by parameter name); ``tuning`` is True while
    ``pytest --autotune`` tunes this test; ``device`` is the key the result is stored under;
    ``timing`` holds the statistics of the last :meth:`measure` call. ``backend`` (given by the
    plugin) is the test's device backend, which :meth:`build` falls back to; ``geometry`` the
    launch geometry the test declared (``@tunable(geometry=...)``), which :attr:`launch` applies.
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
        geometry: Geometry | None = None,
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
        self.geometry = geometry
        self._config: dict[str, Any] = {}
        self._samples: list[float] = []
        self._cpu: list[float] | None = []
        self._times: list[float] = []
        #: The CPU seconds of each sample :meth:`end_run` returned last (one per sample), or ``()``
        #: when those samples are not all times read by :meth:`measure` (``timing.clock``).
        self.ended_cpu: tuple[float, ...] = ()
        self._metrics = RunMetrics()
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

    @property
    def launch(self) -> LaunchSizes:
        """Global and local sizes of the configuration under test, from the declared geometry.

        ``global_size, local_size = autotune.launch``; ``autotune.launch.grid`` is the number of
        work-groups per dimension (see :class:`~pytest_autotune.backends.geometry.Geometry`).
        Without a geometry that has a problem size the test fails (a mistake of the test, not of
        the configuration under test), and so does a geometry declared wrongly for every
        configuration (a divisor callable returning a string, an expression worth infinity): not a
        failed trial, which would spend the budget on the same error.
        """
        if self.geometry is None or self.geometry.problem_size is None:
            import pytest

            given = "declares no problem_size" if self.geometry is not None else "declares no geometry"
            pytest.fail(
                f"{self.nodeid}: autotune.launch needs the test's launch geometry, and the test {given}; "
                "declare @tunable(..., geometry=Geometry(problem_size=N, block_size_names=[...], ...))",
                pytrace=False,
            )
        from pytest_autotune.backends.geometry import GeometryDeclarationError

        try:
            return self.geometry.sizes(self._config)
        except GeometryDeclarationError as exc:
            self._fail(f"the launch geometry is declared wrongly: {exc}")

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
        another objective the timings are only kept in :attr:`timing`. Each timed call is also
        read on the process's CPU clock (``autotune.timing.cpu``; :mod:`pytest_autotune.timing.clock`).
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
        warm_up(self._timer, call)  # a GPU timer's time-based warm-up (clocks rise)
        seconds: list[float] = []
        cpu: list[float] | None = []
        result: Any = None
        for _ in range(repeat):
            result, elapsed, used = read_clocks(self._timer, call, self)
            self._check_value(elapsed, positive=True, what=f"the timer {type(self._timer).__name__} returned")
            seconds.append(float(elapsed))
            if used is None or cpu is None or bad_value(used, positive=False) is not None:
                cpu = None  # the timer reads no CPU time
            else:  # a call below the clock's resolution reads 0, which no time may be
                cpu.append(max(float(used), _CPU_RESOLUTION))
        self.timing = Stats.of(seconds, cpu)
        self._times.extend(seconds)
        if self.policy.objective == "time":
            self._samples.extend(seconds)
            self._cpu = None if cpu is None or self._cpu is None else [*self._cpu, *cpu]
        return result  # type: ignore[no-any-return]

    def record(self, value: float) -> None:
        """Record one value of the objective (seconds for ``"time"``, else in the objective's unit).

        The objective is what tuning optimises and plain runs check; to show, store and export
        another number beside it, use :meth:`metric`.
        """
        self._check_value(value, positive=self.policy.objective == "time", what="autotune.record got")
        self._samples.append(float(value))
        self._cpu = None  # a recorded value has no CPU time: the samples are judged on one clock

    def metric(self, name: str, value: float | Callable[[float], float]) -> None:
        """Record a named metric of this configuration, beside its time (e.g. ``"GFLOP/s"``).

        ``value`` is a finite number, or a function of the median time in seconds that
        :meth:`measure` took in this call (``lambda seconds: 2 * n**3 / seconds / 1e9``), evaluated
        when the call ends and again on the median the summary reports, so both agree. Metrics are
        shown in the summary, stored with the tuned entry and exported in ``--autotune-json``
        (``extra_info``); the time stays the objective and the checked value, unless
        ``@tunable(objective=name)`` makes this metric the objective (add ``maximize=True`` for
        rates). Setting a name again in the same call replaces its value.
        """
        try:
            self._metrics.define(name, value)
        except MetricError as exc:
            self._fail(f"autotune.metric: {exc}")

    def metric_values(self, seconds: float | None = None) -> dict[str, float]:
        """The metrics of the last call of the body, functions evaluated on ``seconds`` (by default
        the median of that call's measured times); the test fails naming a metric that cannot be
        evaluated."""
        if seconds is None:
            seconds = statistics.median(self._times) if self._times else None
        try:
            return self._metrics.evaluate(seconds)
        except MetricError as exc:
            self._fail(str(exc))

    def _fail(self, message: str) -> NoReturn:
        import pytest

        pytest.fail(f"{self.nodeid}: {message} (configuration {self._config})", pytrace=False)

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
        source: str | os.PathLike[str],
        *,
        defines: Mapping[str, Any] | None = None,
        options: Sequence[str] = (),
        define_style: str | None = None,
        source_name: str | None = None,
        **backend_options: Any,
    ) -> Any:
        """Build a program for ``context`` with ``defines`` (default: the configuration), cached.

        ``source`` is the kernel's text, or the path of its file (a ``pathlib.Path``): then the file
        is read and compiler messages name it and its lines (``gemm.cl:20:5``) instead of the
        driver's temporary file; ``source_name`` names a text source the same way. ``defines``
        *replaces* the configuration: to add a fixed define, write
        ``defines={**autotune.config, "EXTRA": 7}``. The defines become ``#define NAME VALUE``
        lines at the top of the source (OpenCL's default, as in Kernel Tuner: any identifier
        works, ``read_only`` included), or ``-D`` options with ``define_style="options"``. The
        backend that owns ``context`` builds it (OpenCL: a ``pyopencl.Context``), else the test's
        own backend; a clear error when that one builds no programs (the host).
        ``backend_options`` go to the backend as they are (CUDA: ``name_expressions=["gemm<float, 64>"]``
        names template instances).
        """
        from pytest_autotune.backends import backend_for_object

        if isinstance(source, os.PathLike):
            path = os.fspath(source)
            try:
                source = _read_kernel_file(path)
            except OSError as exc:
                raise BackendError(
                    f"{self.nodeid}: autotune.build cannot read the kernel file {path}: {exc}"
                ) from exc
            source_name = source_name or _shown_path(path)

        backend = backend_for_object(context) or self._backend
        if backend is None:
            raise BackendError(
                f"{self.nodeid}: autotune.build got a {type(context).__name__!r}, which no loaded "
                "backend owns, and the test has no backend"
            )
        chosen = self._config if defines is None else defines
        style: dict[str, Any] = {} if define_style is None else {"define_style": define_style}
        if source_name is not None:
            style["source_name"] = source_name
        try:
            return backend.build(context, source, chosen, options, **style, **backend_options)
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
        self._cpu = []
        self.ended_cpu = ()
        self._times = []
        self._metrics = RunMetrics()
        self._repeat_default = repeat_default
        self._warmup_default = warmup_default
        self.timing = None

    def end_run(self, *, completed: bool = True) -> list[float]:
        """The samples the body produced since :meth:`begin_run` (``completed``: it returned).

        Metric functions are checked here, once the body measured something (a broken one fails
        the test, naming it); a metric named as the objective adds its value as a sample. A body
        that returned after timing with :meth:`measure` but recorded no value of a declared
        objective fails the test, saying so: that is wrong for every configuration.
        """
        values = self.metric_values() if self._times else {}  # functions need a measured time
        objective = self.policy.objective
        if objective not in values and objective in self._metrics and not self._metrics.needs_time():
            values = self.metric_values()
        if objective in values:
            self._samples.append(values[objective])
            self._cpu = None
        cpu = self._cpu or []
        self.ended_cpu = tuple(cpu) if len(cpu) == len(self._samples) else ()
        samples, self._samples, self._cpu = self._samples, [], []
        if completed and not samples and self._times and objective != "time":
            self._fail(
                f"the test called autotune.measure() but never recorded its objective {objective!r}; "
                f"record it with autotune.metric({objective!r}, value) (a number, or a function of "
                "the measured seconds) or autotune.record(value)"
            )
        return samples

    def __repr__(self) -> str:
        return f"<autotune {self.nodeid} device={self.device!r} config={self._config!r}>"


#: The least CPU time a timed call is given (seconds): a call shorter than the CPU clock's
#: resolution reads 0, which no time may be.
_CPU_RESOLUTION = 1e-9


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


#: The largest kernel file ``autotune.build`` reads (a kernel source is kilobytes; this bounds a mistake).
KERNEL_FILE_LIMIT = 16 * 1024 * 1024


def _read_kernel_file(path: str) -> str:
    """The text of the kernel file at ``path``: a regular file of at most :data:`KERNEL_FILE_LIMIT` bytes."""
    from pytest_autotune.input_file import read_bounded

    try:
        return read_bounded(path, limit=KERNEL_FILE_LIMIT).decode("utf-8")
    except ValueError as exc:  # not a regular file, too large, or not UTF-8 text
        raise OSError(str(exc)) from exc


def _shown_path(path: str) -> str:
    """``path`` relative to the working directory when it lies below it, else as given."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute)
    return absolute if relative.startswith("..") else relative
