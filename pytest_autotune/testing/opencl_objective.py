"""Run a ``@tunable`` OpenCL test outside pytest: one configuration in, one measured trial out.

Benchmarks, notebooks and the OpenCL tests tune the example kernels with the library
:class:`~pytest_autotune.tuning.tuner.Tuner` and no pytest session. :class:`KernelTestObjective` supplies
the fixtures a kernel test asks for (``autotune``, ``cl_context``, ``cl_queue``; nothing else) and
turns one call of the test body into a trial exactly as the plugin's tune mode does: it reuses the
plugin's ``autotune`` fixture object, its timer and its exception classification, so an
objective here and a trial under ``pytest --autotune`` measure the same thing.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyopencl as cl

from pytest_autotune.api import get_spec
from pytest_autotune.backends import get_backend
from pytest_autotune.backends.errors import classify_exception
from pytest_autotune.backends.opencl import create_context, create_queue, device_key, select_device
from pytest_autotune.fixture import Autotune
from pytest_autotune.outcome import Outcome
from pytest_autotune.policy import merge_policy
from pytest_autotune.space.base import Space
from pytest_autotune.timing.measure import DefaultTimer, Stats

__all__ = ["KernelTestObjective", "KernelTrial", "load_test_function"]

_SUPPLIED_FIXTURES = frozenset({"autotune", "cl_context", "cl_queue"})


@dataclass(frozen=True)
class KernelTrial:
    """One call of a kernel test body with one configuration.

    ``samples`` are the timed runs (seconds), ``outcome`` their median or the failure,
    ``build_seconds`` the time spent building programs and ``seconds`` the wall time of the call.
    """

    config: dict[str, Any]
    outcome: Outcome
    samples: tuple[float, ...]
    build_seconds: float
    seconds: float


class _TimedBuildAutotune(Autotune):
    """The plugin's ``autotune`` object, also adding up the time spent in :meth:`build`."""

    build_seconds = 0.0

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
        start = time.perf_counter()
        try:
            return super().build(
                context,
                source,
                defines=defines,
                options=options,
                define_style=define_style,
                source_name=source_name,
                **backend_options,
            )
        finally:
            self.build_seconds += time.perf_counter() - start


def load_test_function(path: str | Path, name: str) -> Callable[..., Any]:
    """Import the test module at ``path`` (under a private module name) and return its ``name``."""
    file = Path(path).resolve()
    if not file.is_file():
        raise FileNotFoundError(f"no test module at {file}")
    module_name = f"_pytest_autotune_tests_.{file.stem}_{abs(hash(str(file))):x}"
    module = sys.modules.get(module_name)
    if module is None:
        spec = importlib.util.spec_from_file_location(module_name, file)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {file}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[module_name]
            raise
    function = getattr(module, name, None)
    if not callable(function):
        raise AttributeError(f"{file} has no test function {name!r}")
    return function  # type: ignore[no-any-return]


class KernelTestObjective:
    """The objective of a ``@tunable`` OpenCL test: configuration -> :class:`Outcome`.

    ``device`` is a device spec as for :func:`~pytest_autotune.backends.opencl.select_device` (None: the
    default device). ``warmup`` and ``repeat`` are the untimed and timed calls of each
    ``autotune.measure`` (the test's own policy applies when they are None).
    """

    def __init__(
        self,
        test_function: Callable[..., Any],
        *,
        device: str | None = None,
        warmup: int | None = None,
        repeat: int | None = None,
    ) -> None:
        spec = get_spec(test_function)
        if spec is None:
            raise TypeError(f"{getattr(test_function, '__name__', test_function)!r} is not a @tunable test")
        wanted = list(inspect.signature(test_function).parameters)
        unknown = [name for name in wanted if name not in _SUPPLIED_FIXTURES]
        if unknown:
            raise TypeError(
                f"{spec.test_name}: fixture(s) {', '.join(unknown)} cannot be supplied outside pytest "
                f"(only {', '.join(sorted(_SUPPLIED_FIXTURES))})"
            )
        self.test_function = test_function
        self.name = spec.test_name
        self.space: Space = spec.space
        self.device = select_device(device)
        self.context: cl.Context = create_context(self.device)
        self.queue: cl.CommandQueue = create_queue(self.context, self.device)
        layers: list[Mapping[str, Any]] = [spec.policy]
        if warmup is not None:
            layers.append({"warmup": warmup})
        if repeat is not None:
            layers.append({"repeat": repeat})
        self._autotune = _TimedBuildAutotune(
            nodeid=self.name,
            space=self.space,
            policy=merge_policy(layers),
            device=device_key(self.device),
            timer=DefaultTimer(sync=self.queue.finish),
            tuning=True,
            sync=self.queue.finish,
            backend=get_backend("opencl"),
            geometry=spec.geometry,
        )
        fixtures = {"autotune": self._autotune, "cl_context": self.context, "cl_queue": self.queue}
        self._arguments = {name: fixtures[name] for name in wanted}

    def run(self, config: Mapping[str, Any]) -> KernelTrial:
        """Call the test body once with ``config`` and return what happened."""
        autotune = self._autotune
        autotune.build_seconds = 0.0
        autotune.begin_run(dict(config), repeat_default=5)
        start = time.perf_counter()
        try:
            self.test_function(**self._arguments)
        except Exception as exc:  # pytest outcomes and interrupts are BaseExceptions: they propagate
            label, detail = classify_exception(exc)
            outcome = Outcome.failed(label, detail)
            samples: tuple[float, ...] = tuple(autotune.end_run(completed=False))
        else:
            samples = tuple(autotune.end_run())
            if not samples:
                outcome = Outcome.failed("runtime", f"{self.name} never called autotune.measure")
            else:
                outcome = Outcome.ok(Stats.of(samples).median)
        finally:
            self.queue.finish()
        return KernelTrial(
            dict(config), outcome, samples, autotune.build_seconds, time.perf_counter() - start
        )

    def __call__(self, config: Mapping[str, Any]) -> Outcome:
        """The outcome of one trial (the interface :meth:`Tuner.run` expects)."""
        return self.run(config).outcome
