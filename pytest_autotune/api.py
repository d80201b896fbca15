"""Declaring a tunable test: ``@tunable(**params, **policy)`` and ``@constraint(...)``.

``@tunable`` builds the search space when the decorator runs (at import of the test module), so a
wrong declaration fails collection with the test and the parameter named. ``@constraint`` may be
stacked above or below ``@tunable``. Both attach a :class:`TunableSpec` to the function itself (the
function is returned unchanged, so pytest's fixture introspection and parametrization work as usual);
the plugin finds it on collected items with :func:`get_spec`.

Kernel Tuner's spellings are accepted as they are: a plain list of values is a :class:`Set`
(``block_size_x=[16, 32, 64]``, like ``tune_params``); ``restrictions=[...]`` (strings and
callables, or one callable) and ``@constraint([...])`` take restriction lists; callables may take
the configuration as a dict (``lambda p: p["x"] > 1``); ``block_size_names=[...]`` or
``geometry=Geometry(...)`` declare the launch geometry, from which the device's limits prune the
space when tuning (:mod:`pytest_autotune.backends.launch_limits`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

from pytest_autotune.policy import POLICY_KEYS, PolicyError
from pytest_autotune.tuning.spec import TunableSpec, build_declared_space

if TYPE_CHECKING:
    from pytest_autotune.backends.geometry import Geometry
    from pytest_autotune.space.declaration import ConstraintLike
    from pytest_autotune.space.params import Param

__all__ = ["SPEC_ATTRIBUTE", "TunableSpec", "constraint", "get_spec", "pending_constraints", "tunable"]

F = TypeVar("F", bound=Callable[..., Any])

#: Attribute holding the :class:`TunableSpec` on a decorated test function.
SPEC_ATTRIBUTE: Final = "__pytest_autotune__"
#: Attribute holding constraints declared before ``@tunable`` was applied (``@constraint`` below it).
PENDING_ATTRIBUTE: Final = "__pytest_autotune_constraints__"
#: ``@tunable`` keywords that belong to the declaration but are neither parameters nor policy.
DECLARATION_KEYS: Final = frozenset(
    {"restrictions", "geometry", "block_size_names", "defaults", "kernel", "key"}
)
#: Keywords that belong elsewhere (mostly Kernel Tuner's ``tune_kernel`` arguments) -> where they go.
MISPLACED_KEYS: Final[dict[str, str]] = {
    **{
        key: f"it is a launch-geometry setting: write geometry=Geometry({key}=...) "
        "(from pytest_autotune import Geometry)"
        for key in ("problem_size", "grid_div_x", "grid_div_y", "grid_div_z", "local_size", "local_memory")
    },
    "max_fevals": "the number of evaluations is the budget: write budget=N",
    "time_limit": "a time limit is the budget: write budget='90s' (or budget='100|90s' for either)",
    "iterations": "the calls measured per configuration are repeat=N",
    "objective_higher_is_better": "write maximize=True",
    "tune_params": "declare each parameter as its own keyword: @tunable(block_size_x=[32, 64], ...)",
    "default": "write defaults={'name': value, ...} for several parameters, or Set(..., default=v)",
    "answer": "check the result in the test body with an assert (a failing assert marks the configuration "
    "infeasible)",
    "verify": "check the result in the test body with an assert",
    "atol": "check the result in the test body, e.g. numpy.testing.assert_allclose(..., atol=...)",
    "lang": "the backend follows the fixture the test requests (cl_context/cl_queue for OpenCL)",
    "compiler_options": "pass build options to the build: autotune.build(context, source, options=[...])",
    "compiler": "the backend follows the fixture the test requests; pass build options with "
    "autotune.build(context, source, options=[...])",
    "defines": "autotune.build(..., defines=...) writes the configuration as defines; a dict given there "
    "replaces it (merge: defines={**autotune.config, 'N': N})",
    "smem_args": "declare local (shared) memory per work-group in bytes with "
    "geometry=Geometry(local_memory=...) (from pytest_autotune import Geometry), so configurations beyond "
    "the device's local memory are never tried; allocate it in the launch",
    "cmem_args": "set constant-memory arguments up in the test body before the launch",
    "texmem_args": "set texture-memory arguments up in the test body before the launch",
    "kernel_name": "build the kernel in the test body: autotune.build(context, source) and launch it by name",
    "kernel_source": "build the kernel in the test body: autotune.build(context, source)",
    "arguments": "pass the kernel's arguments in the launch, inside autotune.measure",
    "quiet": "use pytest -q",
    "log": "use pytest's logging options, or --autotune-progress for CI logs",
    "observers": "measure other quantities in the body with autotune.metric(name, fn) or autotune.record",
    "cache": "results are kept in autotune.json (--autotune-cache=PATH to move it)",
    "device": "choose the device with --autotune-device (or PYOPENCL_CTX)",
    "platform": "choose the device with --autotune-device (or PYOPENCL_CTX)",
    "verbose": "use pytest -v",
    "metrics": "declare metrics in the test body with autotune.metric(name, fn) and objective='name'",
    "simulation_mode": "replay a Kernel Tuner cache file with pytest_autotune.Replay (see the docs)",
}
_KINDS: Final = "Interval, Pow2, Set, Categorical, Bool, Real, Permutation"
_CONDITION_SPELLINGS: Final = (
    "a restriction string ('BX * BY <= 1024'), a callable reading parameters by name "
    "(lambda BX, BY: BX * BY <= 1024) or the configuration as a dict (lambda p: p['BX'] * p['BY'] <= 1024), "
    "or a list of those"
)


def _test_name(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


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
    ``Bool``, ``Real``, ``Permutation``) or a plain list of values (a ``Set``, as in Kernel Tuner's
    ``tune_params``: ``block_size_x=[16, 32, 64]``) declare parameters. ``restrictions`` takes
    Kernel Tuner restrictions (a list of strings and callables, or one callable), as
    ``@constraint`` does. ``geometry`` (a :class:`~pytest_autotune.backends.geometry.Geometry`) or
    ``block_size_names`` (Kernel Tuner's list of work-group size parameters) say how the work-group
    size follows from the parameters: tuning then never tries a configuration beyond the device's
    limits, and ``autotune.launch`` gives the global and local sizes. The other keywords are policy
    keys: ``budget`` (evaluations, a ``timedelta``, a duration text such as ``"90s"`` or an abort
    condition), ``strategy``, ``strategy_options``, ``seed``, ``objective`` (``"time"``, the default,
    or the name of an ``autotune.metric``; ``autotune.record`` values are then samples of it too),
    ``maximize``, ``tolerance`` (0.1 or ``"10%"``), ``noise_k``, ``floor`` (seconds or ``"2us"``),
    ``finalists``, ``check``, ``missing``, ``repeat``, ``warmup``, ``isolate`` (``"auto"``,
    ``"process"``, ``"none"``), ``trial_timeout`` (seconds or ``"90s"``, ``"off"``), ``worker_memory``
    (``"1GiB"``, ``"off"``) and ``compare_tolerance`` (0.05 or ``"5%"``: the slowdown over the
    reference that ``--autotune-compare`` accepts)."""
    from pytest_autotune.space.params import Param

    order: list[str] = []  # parameter names in keyword order
    params: dict[str, Param] = {}
    listed: dict[str, Any] = {}  # parameters given as plain lists, made Sets when the test is known
    policy_values: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    problems: list[str] = []  # raised when the test is known, so that the message can name it
    for name, value in declaration.items():
        reserved = name in POLICY_KEYS or name in DECLARATION_KEYS
        if name in MISPLACED_KEYS and not reserved:
            # whatever its value (a list would otherwise become a parameter and a #define)
            problems.append(_unknown_keyword(name, value))
        elif isinstance(value, Param) or (_is_value_list(value) and not reserved):
            if reserved:
                kind = "policy" if name in POLICY_KEYS else "declaration"
                problems.append(f"{name!r} is a {kind} keyword and cannot name a parameter; rename it")
            order.append(name)
            if isinstance(value, Param):
                params[name] = value
            else:
                listed[name] = value
        elif name in DECLARATION_KEYS:
            extras[name] = value
        elif name in POLICY_KEYS:
            policy_values[name] = value
        else:
            problems.append(_unknown_keyword(name, value))

    def decorate(fn: F) -> F:
        _check_function(fn, "@tunable")
        name = _test_name(fn)
        if problems:
            raise PolicyError(f"@tunable on {name}: {problems[0]}")
        if get_spec(fn) is not None:
            raise TypeError(f"@tunable applied twice to {name}")
        if not order:
            raise PolicyError(f"@tunable on {name}: declare at least one parameter")
        defaults = _defaults(name, extras.get("defaults"), order)
        made = {**_with_defaults(name, params, defaults), **_listed_sets(name, listed, defaults)}
        declared = {n: made[n] for n in order}
        from pytest_autotune.tuning.validation import validate_policy

        policy = validate_policy(policy_values, source=f"@tunable on {name}")
        restrictions = _conditions(extras.get("restrictions", ()), f"@tunable on {name}: restrictions=")
        constraints = (*restrictions, *pending_constraints(fn))
        space = build_declared_space(name, declared, constraints)
        geometry = _geometry(name, extras, tuple(declared))
        kernel, key = _kernel_key(name, extras, declared)
        spec = TunableSpec(name, declared, constraints, policy, space, geometry, kernel, key)
        setattr(fn, SPEC_ATTRIBUTE, spec)
        return fn

    return decorate


def _is_value_list(value: Any) -> bool:
    """A plain list of values (Kernel Tuner's ``tune_params`` style): list, tuple, range, numpy array."""
    if isinstance(value, (list, tuple, range)):
        return True
    return type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 1


def _unknown_keyword(name: str, value: Any) -> str:
    """Why ``name=value`` is refused, with the spellings that are accepted."""
    shown = repr(value) if len(repr(value)) <= 60 else f"{repr(value)[:57]}..."
    if name in MISPLACED_KEYS:
        return f"keyword {name}={shown} does not belong on @tunable: {MISPLACED_KEYS[name]}"
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        spelling = f"write {name}=[{shown}] or {name}=Set({shown}) for a parameter with this one value"
    else:
        spelling = f"write {name}=[v1, v2, ...] or {name}=Set(v1, v2, ...) for a parameter"
    return (
        f"keyword {name}={shown} is neither a parameter kind ({_KINDS}), a list of values, nor a "
        f"policy key; {spelling}; the other keywords are {', '.join(sorted(POLICY_KEYS | DECLARATION_KEYS))}"
    )


def _listed_sets(test: str, listed: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Param]:
    """The plain lists of values as :class:`Set` parameters, with their ``defaults=`` entries (errors
    name the test and parameter)."""
    from pytest_autotune.space.errors import SpaceError
    from pytest_autotune.space.params import NO_DEFAULT, Set

    made: dict[str, Param] = {}
    for name, values in listed.items():
        try:
            made[name] = Set(list(values), default=defaults.get(name, NO_DEFAULT))
        except SpaceError as exc:
            raise SpaceError(f"@tunable on {test}: parameter {name!r}: {exc}", parameter=name) from exc
    return made


def _defaults(test: str, given: Any, names: Sequence[str]) -> dict[str, Any]:
    """``defaults={name: value}``: a mapping whose keys are declared parameters."""
    if given is None:
        return {}
    if not isinstance(given, Mapping) or not all(isinstance(k, str) for k in given):
        raise PolicyError(
            f"@tunable on {test}: defaults={given!r} is not a mapping of parameter names to values; "
            "write defaults={'block_size_x': 64}"
        )
    unknown = [k for k in given if k not in names]
    if unknown:
        raise PolicyError(
            f"@tunable on {test}: defaults= names {', '.join(map(repr, unknown))}, which "
            f"{'is not a declared parameter' if len(unknown) == 1 else 'are not declared parameters'} "
            f"(declared: {', '.join(names)})"
        )
    return dict(given)


def _with_defaults(test: str, params: Mapping[str, Param], defaults: Mapping[str, Any]) -> dict[str, Param]:
    """``params`` with the ``defaults=`` entries set on parameter kinds that declare no default."""
    from pytest_autotune.space.errors import SpaceError
    from pytest_autotune.space.params import NO_DEFAULT

    made = dict(params)
    for name, value in defaults.items():
        param = params.get(name)
        if param is None:
            continue  # a listed parameter: see _listed_sets
        if param.default is not NO_DEFAULT:
            raise PolicyError(
                f"@tunable on {test}: parameter {name!r} has default={param.default!r} and "
                f"defaults= gives {value!r}; give its default once"
            )
        try:
            made[name] = param.with_default(value)
        except SpaceError as exc:
            raise SpaceError(f"@tunable on {test}: parameter {name!r}: {exc}", parameter=name) from exc
    return made


def _conditions(given: Any, where: str) -> tuple[ConstraintLike, ...]:
    """Restrictions as a tuple: one string or callable, or a list (or tuple) of them."""
    listed = isinstance(given, list) or (
        isinstance(given, tuple) and all(callable(i) or isinstance(i, str) for i in given)
    )
    items = list(given) if listed else [given]
    for item in items:
        if not (callable(item) or isinstance(item, str)) or isinstance(item, type):
            raise TypeError(f"{where} {item!r} is not a condition; write {_CONDITION_SPELLINGS}")
    return tuple(items)


def _geometry(test: str, extras: Mapping[str, Any], names: tuple[str, ...]) -> Geometry | None:
    """The declared launch geometry (``geometry=`` or ``block_size_names=``), checked against ``names``."""
    from pytest_autotune.backends.geometry import DEFAULT_BLOCK_SIZE_NAMES, Geometry

    given, block_names = extras.get("geometry"), extras.get("block_size_names")
    if given is not None and block_names is not None:
        raise PolicyError(f"@tunable on {test}: give geometry= or block_size_names=, not both")
    if given is not None and not isinstance(given, Geometry):
        raise PolicyError(
            f"@tunable on {test}: geometry={given!r} is not a Geometry; write "
            "geometry=Geometry(problem_size=N, block_size_names=['BX'], grid_div_x=['BX', 'WPT'])"
        )
    try:
        if block_names is not None:
            given = Geometry(block_size_names=block_names)
        elif given is None:
            if not set(DEFAULT_BLOCK_SIZE_NAMES) & set(names):
                return None
            given = Geometry()  # Kernel Tuner's convention: block_size_x/y/z are the work-group size
        given.check(names)
    except ValueError as exc:  # GeometryError is a SpaceError, a ValueError
        raise type(exc)(f"@tunable on {test}: {exc}") from exc
    return given


def _kernel_key(
    test: str, extras: Mapping[str, Any], params: Mapping[str, Any]
) -> tuple[str | None, tuple[str, ...]]:
    """``kernel=`` (a non-empty name) and ``key=`` (names of the parametrization, not parameters)."""
    kernel, key = extras.get("kernel"), extras.get("key", ())
    if kernel is not None and (not isinstance(kernel, str) or not kernel.strip() or "::" in kernel):
        raise PolicyError(
            f"@tunable on {test}: kernel={kernel!r} is not a kernel name; write kernel='matmul' "
            "(a non-empty name without '::')"
        )
    names = (key,) if isinstance(key, str) else key
    if not isinstance(names, list | tuple) or not all(isinstance(n, str) and n.isidentifier() for n in names):
        raise PolicyError(
            f"@tunable on {test}: key={key!r} is not a list of names; write key=('M', 'N', 'K'), the "
            "arguments of the test's parametrization that give the problem size"
        )
    if names and kernel is None:
        raise PolicyError(f"@tunable on {test}: key= needs kernel= (the name the application looks it up by)")
    if len(set(names)) != len(names):
        raise PolicyError(f"@tunable on {test}: key={key!r} names an argument twice")
    tuned = [n for n in names if n in params]
    if tuned:
        raise PolicyError(
            f"@tunable on {test}: key name {tuned[0]!r} is a tuned parameter; the key names the "
            "problem size (arguments of the test's parametrization), not what is tuned"
        )
    return kernel, tuple(names)


def constraint(*given: ConstraintLike | Sequence[ConstraintLike]) -> Callable[[F], F]:
    """Add configuration-level constraints: restriction strings, callables reading parameters by
    name or the configuration as a dict, or lists of those (Kernel Tuner's ``restrictions``).

    Stack it above or below ``@tunable``; several conditions in one call and several ``@constraint``
    lines are all required.
    """
    if not given:
        raise TypeError(f"@constraint needs at least one condition: {_CONDITION_SPELLINGS}")
    conditions = tuple(c for item in given for c in _conditions(item, "@constraint:"))
    if not conditions:
        raise TypeError(f"@constraint got an empty list; write {_CONDITION_SPELLINGS}")

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
