"""What ``@tunable``/``@constraint`` declare on one test (:class:`TunableSpec`), and building its space.

It is the value the decorators of :mod:`pytest_autotune.api` attach to a test function and the
plugin plans from; it sits here, below both, so that the plugin's modules that only read a plan
do not sit on the decorators and the policy validation they run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_autotune.backends.geometry import Geometry
    from pytest_autotune.space.base import Space
    from pytest_autotune.space.declaration import ConstraintLike
    from pytest_autotune.space.params import Param

__all__ = ["KernelKeyError", "TunableSpec", "build_declared_space"]


class KernelKeyError(ValueError):
    """A test's problem-size key (``@tunable(key=...)``) cannot be read from its parametrization."""


@dataclass(frozen=True)
class TunableSpec:
    """Everything ``@tunable``/``@constraint`` declared on one test function.

    ``policy`` holds the validated policy keywords of ``@tunable`` (budget, strategy, ...);
    ``space`` is built from ``params`` and ``constraints``. ``geometry`` is the launch geometry
    (``geometry=`` or ``block_size_names=``, or Kernel Tuner's default names when some parameter is
    called ``block_size_x/y/z``), None when the test declares none: it is not part of the space
    (nor of its ``space_hash``); the plugin derives the device's limits from it when tuning.
    """

    test_name: str
    params: Mapping[str, Param]
    constraints: tuple[ConstraintLike, ...]
    policy: Mapping[str, Any]
    space: Space
    geometry: Geometry | None = None
    #: The kernel's stable name (``kernel=``) its entries carry, None when the test names none.
    kernel: str | None = None
    #: The names of the problem-size key (``key=``), read from the test's parametrization.
    key: tuple[str, ...] = ()

    def key_values(self, params: Mapping[str, Any]) -> dict[str, Any] | None:
        """The key's values from a test's parametrization (``params``: argument name to value), in
        declared order; None when the test declares no key. Raises :class:`KernelKeyError` naming
        the key that is not parametrized or whose value is no number, string or boolean."""
        if not self.key:
            return None
        values: dict[str, Any] = {}
        for name in self.key:
            if name not in params:
                given = ", ".join(params) or "none"
                raise KernelKeyError(
                    f"key {name!r} of kernel {self.kernel!r} is not an argument of the test's "
                    f"parametrization (parametrized: {given}); parametrize the test by it, e.g. "
                    f"@pytest.mark.parametrize({name!r}, [256, 512])"
                )
            value = params[name]
            if hasattr(value, "item") and type(value).__module__ == "numpy":
                value = value.item()
            finite = not isinstance(value, float) or math.isfinite(value)
            if not isinstance(value, str | int | float | bool) or not finite:
                raise KernelKeyError(
                    f"key {name!r} of kernel {self.kernel!r} is {value!r}; a key value must be a "
                    "finite number, a string or a boolean"
                )
            values[name] = value
        return values

    def with_constraints(self, extra: Sequence[ConstraintLike]) -> TunableSpec:
        """A copy with ``extra`` constraints first (they sit above, in source order), space rebuilt."""
        constraints = (*extra, *self.constraints)
        space = build_declared_space(self.test_name, self.params, constraints)
        return replace(self, constraints=constraints, space=space)


def build_declared_space(
    test_name: str, params: Mapping[str, Param], constraints: Sequence[ConstraintLike]
) -> Space:
    """The space of ``test_name``'s declaration; a declaration error names the test."""
    from pytest_autotune.space.chain import build_space
    from pytest_autotune.space.errors import SpaceError

    try:
        return build_space(params, constraints)
    except SpaceError as exc:
        message = f"@tunable on {test_name}: {exc}"
        try:
            error = type(exc)(message, parameter=exc.parameter)
        except TypeError:
            error = SpaceError(message, parameter=exc.parameter)
        raise error from exc
    except Exception as exc:
        raise SpaceError(
            f"@tunable on {test_name}: building the search space failed: {type(exc).__name__}: {exc}"
        ) from exc
