"""pytest-autotune: auto-tune compute kernels from pytest.

Public names are loaded lazily (PEP 562) so that importing the pytest plugin
costs nothing: numpy, torch and friends load only when a name that needs them
is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_autotune._lazy import lazy_exports

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # declaration API
    "tunable": "pytest_autotune.api",
    "constraint": "pytest_autotune.api",
    # the autotune fixture's type and the timer protocol (for annotations and custom timers)
    "Autotune": "pytest_autotune.fixture",
    "Timer": "pytest_autotune.timing.measure",
    "DefaultTimer": "pytest_autotune.timing.measure",
    "AutotuneWarning": "pytest_autotune.warning_types",
    # parameter kinds and spaces
    "Interval": "pytest_autotune.space.params",
    "Pow2": "pytest_autotune.space.params",
    "Set": "pytest_autotune.space.params",
    "Categorical": "pytest_autotune.space.params",
    "Bool": "pytest_autotune.space.params",
    "Real": "pytest_autotune.space.params",
    "Permutation": "pytest_autotune.space.params",
    "build_space": "pytest_autotune.space",
    # launch geometry (Kernel Tuner's problem_size / grid_div / block_size_names)
    "Geometry": "pytest_autotune.backends.geometry",
    # a triton.autotune config list as a declaration
    "from_triton": "pytest_autotune.backends.torch.triton_configs",
    "LaunchSizes": "pytest_autotune.backends.geometry",
    "Space": "pytest_autotune.space.base",
    "SpaceError": "pytest_autotune.space.errors",
    "ConstraintError": "pytest_autotune.space.errors",
    "EmptySpaceError": "pytest_autotune.space.errors",
    # tuning loop and abort conditions
    "Tuner": "pytest_autotune.tuning.tuner",
    "Outcome": "pytest_autotune.outcome",
    "Replay": "pytest_autotune.replay",
    "Evaluations": "pytest_autotune.tuning.abort",
    "ValidEvaluations": "pytest_autotune.tuning.abort",
    "Duration": "pytest_autotune.tuning.abort",
    "Fraction": "pytest_autotune.tuning.abort",
    "Cost": "pytest_autotune.tuning.abort",
    "Speedup": "pytest_autotune.tuning.abort",
}

__all__ = [
    "Autotune",
    "AutotuneWarning",
    "Bool",
    "Categorical",
    "ConstraintError",
    "Cost",
    "DefaultTimer",
    "Duration",
    "EmptySpaceError",
    "Evaluations",
    "Fraction",
    "Geometry",
    "Interval",
    "LaunchSizes",
    "Outcome",
    "Permutation",
    "Pow2",
    "Real",
    "Replay",
    "Set",
    "Space",
    "SpaceError",
    "Speedup",
    "Timer",
    "Tuner",
    "ValidEvaluations",
    "build_space",
    "constraint",
    "from_triton",
    "tunable",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from pytest_autotune.api import constraint, tunable
    from pytest_autotune.backends.geometry import Geometry, LaunchSizes
    from pytest_autotune.backends.torch.triton_configs import from_triton
    from pytest_autotune.fixture import Autotune
    from pytest_autotune.outcome import Outcome
    from pytest_autotune.replay import Replay
    from pytest_autotune.space import build_space
    from pytest_autotune.space.base import Space
    from pytest_autotune.space.errors import ConstraintError, EmptySpaceError, SpaceError
    from pytest_autotune.space.params import Bool, Categorical, Interval, Permutation, Pow2, Real, Set
    from pytest_autotune.timing.measure import DefaultTimer, Timer
    from pytest_autotune.tuning.abort import Cost, Duration, Evaluations, Fraction, Speedup, ValidEvaluations
    from pytest_autotune.tuning.tuner import Tuner
    from pytest_autotune.warning_types import AutotuneWarning
