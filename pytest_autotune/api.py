"""Declaring a tunable test: ``@tunable(**params, **policy)`` and ``@constraint(...)``.

``@tunable`` builds the search space when the decorator runs (at import of the test module), so a
wrong declaration fails collection with the test and the parameter named. ``@constraint`` may be
stacked above or below ``@tunable``. Both attach a :class:`TunableSpec` to the function itself (the
function is returned unchanged, so pytest's fixture introspection and parametrization work as usual);
the plugin finds it on collected items with :func:`get_spec`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

from pytest_autotune.policy import POLICY_KEYS, PolicyError

if TYPE_CHECKING:
    from pytest_autotune.space.base import Space
    from pytest_autotune.space.declaration import ConstraintLike
    from pytest_autotune.space.params import Param

__all__ = ["SPEC_ATTRIBUTE", "TunableSpec", "constraint", "get_spec", "pending_constraints", "tunable"]

F = TypeVar("F", bound=Callable[..., Any])

#: Attribute holding the :class:`TunableSpec` on a decorated test function.
SPEC_ATTRIBUTE: Final = "__pytest_autotune__"
#: Attribute holding constraints declared before ``@tunable`` was applied (``@constraint`` below it).
PENDING_ATTRIBUTE: Final = "__pytest_autotune_constraints__"


@dataclass(frozen=True)
class TunableSpec:
    """Everything ``@tunable``/``@constraint`` declared on one test function.

    ``policy`` holds the validated policy keywords of ``@tunable`` (budget, strategy, ...);
    ``space`` is built from ``params`` and ``constraints``.
    """

    test_name: str
    params: Mapping[str, Param]
    constraints: tuple[ConstraintLike, ...]
    policy: Mapping[str, Any]
    space: Space

    def with_constraints(self, extra: Sequence[ConstraintLike]) -> TunableSpec:
        """A copy with ``extra`` constraints first (they sit above, in source order), space rebuilt."""
        constraints = (*extra, *self.constraints)
        space = _build(self.test_name, self.params, constraints)
        return TunableSpec(self.test_name, self.params, constraints, self.policy, space)


def _test_name(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def _build(test_name: str, params: Mapping[str, Param], constraints: Sequence[ConstraintLike]) -> Space:
    from pytest_autotune.space import build_space
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


def _check_function(fn: Any, decorator: str) -> None:
    if not callable(fn) or isinstance(fn, type):
        raise TypeError(f"{decorator} decorates a test function, got {fn!r}")


def get_spec(obj: Any) -> TunableSpec | None:
    """The :class:`TunableSpec` of a test function (or bound method), or None when it is not tunable."""
    spec = getattr(obj, SPEC_ATTRIBUTE, None)
    return spec if isinstance(spec, TunableSpec) else None


def pending_constraints(obj: Any) -> tuple[ConstraintLike, ...]:
    """Constraints attached by ``@constraint`` to a function that has no ``@tunable`` (yet)."""
    return tuple(getattr(obj, PENDING_ATTRIBUTE, ()))


def tunable(**declaration: Any) -> Callable[[F], F]:
    """Declare a tunable test: parameters (in keyword order) and its tuning/checking policy.

    Keywords whose value is a parameter kind (``Interval``, ``Pow2``, ``Set``, ``Categorical``,
    ``Bool``, ``Real``, ``Permutation``) declare parameters; the others are policy keys: ``budget``
    (evaluations, a ``timedelta``, a duration text such as ``"90s"`` or an abort condition),
    ``strategy``, ``strategy_options``, ``seed``, ``objective`` (``"time"`` or the name of a value
    given to ``autotune.record``), ``maximize``, ``tolerance`` (0.1 or ``"10%"``), ``noise_k``,
    ``floor`` (seconds or ``"2us"``), ``finalists``, ``check``, ``missing``, ``repeat``, ``warmup``,
    ``isolate`` (``"auto"``, ``"process"``, ``"none"``), ``trial_timeout`` (seconds or ``"90s"``,
    ``"off"``), ``worker_memory`` (``"1GiB"``, ``"off"``) and ``compare_tolerance`` (0.05 or
    ``"5%"``: the slowdown over the reference that ``--autotune-compare`` accepts)."""
    from pytest_autotune.space.params import Param

    params: dict[str, Param] = {}
    policy_values: dict[str, Any] = {}
    problems: list[str] = []  # raised when the test is known, so that the message can name it
    for name, value in declaration.items():
        if isinstance(value, Param):
            if name in POLICY_KEYS:
                problems.append(f"{name!r} is a policy keyword and cannot name a parameter; rename it")
            params[name] = value
        elif name in POLICY_KEYS:
            policy_values[name] = value
        else:
            problems.append(
                f"keyword {name}={value!r} is neither a parameter kind (Interval, Pow2, Set, "
                f"Categorical, Bool, Real, Permutation) nor a policy key ({', '.join(sorted(POLICY_KEYS))})"
            )

    def decorate(fn: F) -> F:
        _check_function(fn, "@tunable")
        name = _test_name(fn)
        if problems:
            raise PolicyError(f"@tunable on {name}: {problems[0]}")
        if get_spec(fn) is not None:
            raise TypeError(f"@tunable applied twice to {name}")
        if not params:
            raise PolicyError(f"@tunable on {name}: declare at least one parameter")
        from pytest_autotune.tuning.validation import validate_policy

        policy = validate_policy(policy_values, source=f"@tunable on {name}")
        constraints = pending_constraints(fn)
        spec = TunableSpec(name, params, constraints, policy, _build(name, params, constraints))
        setattr(fn, SPEC_ATTRIBUTE, spec)
        return fn

    return decorate


def constraint(*conditions: ConstraintLike) -> Callable[[F], F]:
    """Add configuration-level constraints (callables reading parameters by name, or restriction strings).

    Stack it above or below ``@tunable``; several conditions in one call and several ``@constraint``
    lines are all required.
    """
    if not conditions:
        raise TypeError("@constraint needs at least one condition (a callable or a restriction string)")
    for condition in conditions:
        if not (callable(condition) or isinstance(condition, str)):
            raise TypeError(f"@constraint: {condition!r} is neither a callable nor a restriction string")

    def decorate(fn: F) -> F:
        _check_function(fn, "@constraint")
        spec = get_spec(fn)
        if spec is not None:
            setattr(fn, SPEC_ATTRIBUTE, spec.with_constraints(conditions))
        else:
            # Applied before @tunable (listed below it): decorators apply bottom-up, so keep source order.
            setattr(fn, PENDING_ATTRIBUTE, (*conditions, *pending_constraints(fn)))
        return fn

    return decorate
