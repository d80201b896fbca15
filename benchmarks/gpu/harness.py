"""A ``@tunable`` example's test body as an objective, outside pytest, on any backend.

:class:`BodyObjective` calls the body with the fixtures it is given (``cuda_device``,
``torch_device``, ...) and the plugin's own ``autotune`` object, timer and exception
classification, exactly as one trial of ``pytest --autotune`` does (the OpenCL harness,
:mod:`pytest_autotune.testing.opencl_objective`, does the same for OpenCL). It keeps every trial
(:attr:`BodyObjective.trials`), so the check can count failures by where they were caught.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_autotune.api import get_spec
from pytest_autotune.backends import get_backend
from pytest_autotune.backends.errors import classify_exception
from pytest_autotune.fixture import Autotune
from pytest_autotune.outcome import Outcome
from pytest_autotune.policy import merge_policy
from pytest_autotune.timing.measure import Stats

__all__ = ["BodyObjective", "Trial", "where_caught"]


@dataclass(frozen=True)
class Trial:
    """One call of the body: the configuration, its outcome and the seconds it took."""

    config: dict[str, Any]
    outcome: Outcome
    seconds: float


def where_caught(outcome: Outcome) -> str:
    """``ok``, ``build`` (compile label), ``before launch`` (refused by a launch check) or
    ``launch`` (any other runtime failure), for the CUDA table's failure columns."""
    if outcome.label == "ok":
        return "ok"
    if outcome.label == "compile":
        return "build"
    if outcome.label == "runtime" and "before launch" in outcome.detail:
        return "before launch"
    return "launch"


class BodyObjective:
    """``config -> Outcome`` of a ``@tunable`` body on ``backend`` with ``fixtures`` supplied."""

    def __init__(
        self,
        test_function: Callable[..., Any],
        *,
        backend: str,
        device_key: str,
        fixtures: Mapping[str, Any],
        timer: Any,
        repeat: int = 10,
        warmup: int = 2,
    ) -> None:
        spec = get_spec(test_function)
        if spec is None:
            raise TypeError(f"{test_function!r} is not a @tunable test")
        self.spec = spec
        self.test_function = test_function
        self.autotune = Autotune(
            nodeid=spec.test_name,
            space=spec.space,
            policy=merge_policy([spec.policy, {"warmup": warmup, "repeat": repeat}]),
            device=device_key,
            timer=timer,
            tuning=True,
            backend=get_backend(backend),
            geometry=spec.geometry,
        )
        supplied = {"autotune": self.autotune, **fixtures}
        wanted = list(inspect.signature(test_function).parameters)
        missing = [name for name in wanted if name not in supplied]
        if missing:
            raise TypeError(f"{spec.test_name}: no value for fixture(s) {', '.join(missing)}")
        self.arguments = {name: supplied[name] for name in wanted}
        self.trials: list[Trial] = []

    def __call__(self, config: Mapping[str, Any]) -> Outcome:
        """Run the body once with ``config``; the median of its timed calls, or the failure."""
        started = time.perf_counter()
        self.autotune.begin_run(dict(config), repeat_default=10)
        try:
            self.test_function(**self.arguments)
        except Exception as exc:
            label, detail = classify_exception(exc)
            self.autotune.end_run()
            outcome = Outcome.failed(label, detail)
        else:
            samples = self.autotune.end_run()
            outcome = (
                Outcome.ok(Stats.of(samples).median)
                if samples
                else Outcome.failed("runtime", "the body measured nothing")
            )
        self.trials.append(Trial(dict(config), outcome, time.perf_counter() - started))
        return outcome
