"""A ``triton.autotune`` config list as a ``@tunable`` declaration: a one-line migration.

``@tunable(**from_triton(configs))`` declares the parameters a list of ``triton.Config`` (or of
plain dicts) uses: each kwarg (``BLOCK_SIZE_M``, ...) and ``num_warps``/``num_stages``/
``num_ctas``/``maxnreg`` becomes a ``Set`` of the values the list holds, its default the value of
the first config. The test launches with ``kernel[grid](..., **autotune.config)``: Triton takes
constexprs and ``num_warps``/``num_stages`` as launch keywords alike.

A ``triton.Config`` cannot tell a launch option the user set from its own default
(``num_warps=4, num_stages=3, num_ctas=1, maxnreg=None``). An option that every config leaves at
that default is not declared: the configurations shown and stored hold only what the list varies
or sets otherwise, and a launch without the option gets Triton's own default, which is the same
on NVIDIA GPUs (on AMD GPUs Triton's ``num_stages`` default is 2: to keep 3 there, write the
configs as plain dicts). A plain dict declares exactly what it holds.

* ``exact=True`` (the default) keeps exactly the listed configurations (a restriction on the
  tuple of values), which is what ``triton.autotune`` tries; the search then needs fewer than all
  of them, and its result persists in ``autotune.json``.
* ``exact=False`` searches the product of the values: a larger space that contains the list,
  where a strategy such as ``bo`` can find configurations the list never had. ``extra=`` adds
  values per parameter (``extra={"BLOCK_SIZE_K": [128]}``).

``pre_hook``/``post_hook`` of a config are not carried over (a test does that work itself, e.g.
zeroing an output before each launch): a config that has one is named in an
:class:`~pytest_autotune.warning_types.AutotuneWarning`, since a result can depend on it. A kwarg
named like one of the plugin's fixtures (``torch_device``, ``autotune``, ...) is refused: in a test
that requests the fixture, ``autotune.config[name]`` and the fixture would be two things of one name.
Duck-typed: importing this module imports no triton.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from pytest_autotune.space.conditions.constraints import Constraint
from pytest_autotune.space.params import Set
from pytest_autotune.warning_types import AutotuneWarning

__all__ = ["PLUGIN_FIXTURES", "config_dicts", "from_triton"]

#: The fixtures the plugin provides; a config kwarg may not take one of their names.
PLUGIN_FIXTURES: Final = frozenset(
    {
        "autotune",
        "autotune_timer",
        "autotune_l2_flush",
        "torch_device",
        "cl_context",
        "cl_queue",
        "cuda_device",
        "cuda_stream",
    }
)
_HOOKS: Final = ("pre_hook", "post_hook")

#: Launch options of a ``triton.Config`` besides its kwargs, with ``triton.Config``'s defaults.
_OPTIONS: Final[dict[str, Any]] = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": None}


def config_dicts(configs: Iterable[Any]) -> list[dict[str, Any]]:
    """Each config as one flat dict: its kwargs, then the launch options it sets; an option every
    ``triton.Config`` of the list leaves at ``triton.Config``'s default is left out (module docstring)."""
    flat: list[dict[str, Any]] = []
    options: list[dict[str, Any] | None] = []  # per config: a triton.Config's launch options, or None
    for position, config in enumerate(configs):
        if isinstance(config, Mapping):
            flat.append(dict(config))
            options.append(None)
            continue
        kwargs = getattr(config, "kwargs", None)
        if not isinstance(kwargs, Mapping):
            raise TypeError(
                f"config {position}: a {type(config).__name__}; expected a triton.Config or a dict"
            )
        hooks = [hook for hook in _HOOKS if getattr(config, hook, None) is not None]
        if hooks:
            shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
            warnings.warn(
                AutotuneWarning(
                    f"from_triton: config {position} ({shown}) has a {' and a '.join(hooks)}, which is "
                    "not carried over: call it in the test before (or after) each launch yourself"
                ),
                stacklevel=3,
            )
        flat.append(dict(kwargs))
        options.append({option: getattr(config, option, None) for option in _OPTIONS})
    in_dicts = {name for entry, values in zip(flat, options, strict=True) if values is None for name in entry}
    kept = [
        option
        for option, default in _OPTIONS.items()
        if option in in_dicts or any(values[option] != default for values in options if values is not None)
    ]
    for entry, values in zip(flat, options, strict=True):
        if values is not None:
            entry.update({option: values[option] for option in kept if values[option] is not None})
    return flat


class _OneOf:
    """True when a configuration's values of ``names`` are one of the listed tuples."""

    def __init__(self, names: Sequence[str], allowed: Iterable[tuple[Any, ...]]) -> None:
        self.names = tuple(names)
        self.allowed = frozenset(allowed)

    def __call__(self, **values: Any) -> bool:
        if any(getattr(value, "ndim", 0) for value in values.values()):
            raise TypeError("checked one configuration at a time")
        return tuple(values[name] for name in self.names) in self.allowed


def from_triton(
    configs: Iterable[Any],
    *,
    exact: bool = True,
    extra: Mapping[str, Iterable[Any]] | None = None,
) -> dict[str, Any]:
    """The ``@tunable`` keywords declaring ``configs`` (module docstring): parameters, and with
    ``exact=True`` a ``restrictions`` entry keeping only the listed configurations."""
    flat = config_dicts(configs)
    if not flat:
        raise ValueError("from_triton: the config list is empty")
    names = list(dict.fromkeys(name for entry in flat for name in entry))
    clashes = [name for name in names if name in PLUGIN_FIXTURES]
    if clashes:
        raise ValueError(
            f"from_triton: the config keyword {clashes[0]!r} has the name of the plugin's fixture "
            f"{clashes[0]}; a test requesting the fixture would see two things of one name: rename "
            "the kernel's argument"
        )
    missing = [(i, n) for i, entry in enumerate(flat) for n in names if n not in entry]
    if missing:
        position, name = missing[0]
        raise ValueError(f"from_triton: config {position} does not set {name!r}, which other configs set")
    extra = dict(extra or {})
    unknown = sorted(set(extra) - set(names))
    if unknown:
        raise ValueError(f"from_triton: extra values for {unknown}, which no config sets")
    if exact and extra:
        raise ValueError("from_triton: extra= widens the space; use it with exact=False")
    declaration: dict[str, Any] = {}
    for name in names:
        values = list(dict.fromkeys([*(entry[name] for entry in flat), *extra.get(name, ())]))
        declaration[name] = Set(*values, default=flat[0][name])
    if exact:
        allowed = {tuple(entry[name] for name in names) for entry in flat}
        check = _OneOf(names, allowed)
        declaration["restrictions"] = [
            Constraint(check, tuple(names), f"one of the {len(allowed)} listed configs")
        ]
    return declaration
