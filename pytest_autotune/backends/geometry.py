"""Launch geometry with Kernel Tuner's semantics: from a configuration to global and local sizes.

A :class:`Geometry` says how a kernel's launch follows from its parameters, in Kernel Tuner's
terms (``kernel_tuner.tune_kernel``'s ``problem_size``, ``grid_div_x/y/z`` and
``block_size_names``):

* the **local size** (work-group, thread block) in each dimension is the value of the parameter
  named in ``block_size_names`` (default ``block_size_x``, ``block_size_y``, ``block_size_z``; a
  shorter list is completed with the defaults); a dimension whose name is not in the
  configuration is 256 in x and 1 in y and z, as in Kernel Tuner. ``local_size=`` (a callable of
  the configuration) replaces the names when the work-group is not a parameter (``TILE_X * ROWS``);
* the **problem size** is an int, a parameter name or expression (``"N // WPT"``), a tuple of up to
  three of those, or a callable of the configuration returning one of those;
* the **grid divisor** of each dimension is the product of a list of parameter names, numbers and
  expressions (``["block_size_x", "TILE"]``), a single one of those, or a callable of the
  configuration; by default the block-size parameter of that dimension (with ``local_size=``: the
  local size); ``[]`` divides by 1;
* the **grid** (work-groups per dimension) is ``ceil(problem / divisor)``, and the **global size**
  is ``grid * local``: rounded up, so a block size of 48 over 1000 elements launches 21 groups of 48.

Callables take the configuration as a dict (``lambda p: p["block_size_x"] // 32``) or its
parameters by name (``lambda block_size_x: block_size_x // 32``); see
:mod:`pytest_autotune.space.conditions.config_dict`. Expressions in strings are checked like restriction
strings (:mod:`pytest_autotune.space.conditions.safe_expression`) and truncated to ints, as Kernel Tuner does.
``local_memory=`` declares the bytes of local (shared) memory a work-group uses; it is used, with
the local size, to leave out configurations the device cannot run
(:mod:`pytest_autotune.backends.launch_limits`).

Backend-neutral: it only computes numbers, for OpenCL's ``global_size``/``local_size`` as for
CUDA's grid and block.
"""

from __future__ import annotations

import ast
import math
import numbers
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final, TypeAlias, TypeGuard

from pytest_autotune.space.conditions.config_dict import bind_config_callable, call_with_config
from pytest_autotune.space.conditions.safe_expression import check_restriction, restricted_namespace
from pytest_autotune.space.conditions.source import compile_lambda
from pytest_autotune.space.errors import ConstraintError, SpaceError

__all__ = [
    "DEFAULT_BLOCK_SIZE_NAMES",
    "Geometry",
    "GeometryDeclarationError",
    "GeometryError",
    "GridDivisor",
    "LaunchSizes",
    "ProblemSize",
]

#: Kernel Tuner's names of the block-size (work-group size) parameters.
DEFAULT_BLOCK_SIZE_NAMES: Final = ("block_size_x", "block_size_y", "block_size_z")
#: The size of a block dimension whose parameter is not in the configuration (Kernel Tuner's).
_ABSENT_BLOCK: Final = (256, 1, 1)

ConfigFunction: TypeAlias = Callable[..., Any]
#: One factor of a grid divisor or one dimension of a problem size.
SizeTerm: TypeAlias = int | str
#: ``problem_size=``: a term, up to three terms, or a callable of the configuration.
ProblemSize: TypeAlias = SizeTerm | Sequence[SizeTerm] | ConfigFunction
#: ``grid_div_x=`` and friends: terms (multiplied), one term, or a callable of the configuration.
GridDivisor: TypeAlias = SizeTerm | Sequence[SizeTerm | ConfigFunction] | ConfigFunction | None


_NOT_A_TERM: Final = "not a number, a parameter name or expression, or a callable of the configuration"


class GeometryError(SpaceError):
    """A geometry is declared wrongly or gives no valid sizes for a configuration."""


class GeometryDeclarationError(GeometryError):
    """A geometry mistake that no configuration can avoid: a callable or expression that returns no
    number (a string, None, infinity), or the wrong number of dimensions. ``autotune.launch`` fails
    the test with it at its first trial instead of labelling every configuration a failure."""


@dataclass(frozen=True)
class LaunchSizes:
    """Sizes of one launch: ``global_size`` (work-items), ``local_size`` (work-group) and ``grid``
    (work-groups) per dimension. Unpacks as ``global_size, local_size``."""

    global_size: tuple[int, ...]
    local_size: tuple[int, ...]
    grid: tuple[int, ...]

    def __iter__(self) -> Iterator[tuple[int, ...]]:
        return iter((self.global_size, self.local_size))


@lru_cache(maxsize=256)
def _compiled(text: str, names: tuple[str, ...]) -> tuple[tuple[str, ...], Callable[..., Any]]:
    tree = check_restriction(text, names)
    used = {getattr(node, "id", None) for node in ast.walk(tree)}
    reads = tuple(n for n in names if n in used)
    return reads, compile_lambda(reads, tree.body, restricted_namespace(), f"<size {text.strip()[:80]!r}>")


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


class Geometry:
    """How a kernel's global and local sizes follow from its configuration (module docstring).

    ``Geometry(problem_size=(N, M), block_size_names=["BX", "BY"], grid_div_x=["BX", "TX"])``;
    ``geometry.sizes(config)`` (or ``geometry(config)``) gives :class:`LaunchSizes`. Given to
    ``@tunable(geometry=...)``, it also tells the plugin the work-group size (and ``local_memory``)
    of each configuration, so that configurations beyond the device's limits are never tried.
    """

    def __init__(
        self,
        problem_size: ProblemSize | None = None,
        *,
        block_size_names: Sequence[str] | None = None,
        grid_div_x: GridDivisor = None,
        grid_div_y: GridDivisor = None,
        grid_div_z: GridDivisor = None,
        local_size: ConfigFunction | None = None,
        local_memory: int | str | ConfigFunction | None = None,
    ) -> None:
        if block_size_names is not None and local_size is not None:
            raise GeometryError("Geometry: give block_size_names or local_size, not both")
        if isinstance(block_size_names, str) or not all(
            isinstance(n, str) and n.isidentifier() for n in block_size_names or ()
        ):
            raise GeometryError(
                f"Geometry: block_size_names={block_size_names!r}; expected a list of up to three "
                "parameter names, e.g. block_size_names=['BX', 'BY']"
            )
        if len(block_size_names or ()) > 3:
            raise GeometryError(
                f"Geometry: block_size_names={block_size_names!r} names more than 3 dimensions"
            )
        if len(set(block_size_names or ())) != len(block_size_names or ()):
            raise GeometryError(f"Geometry: block_size_names={block_size_names!r} names a parameter twice")
        _check_declared(problem_size, (grid_div_x, grid_div_y, grid_div_z), local_memory)
        if local_size is not None and not callable(local_size):
            raise GeometryError(
                f"Geometry: local_size={local_size!r}; expected a callable of the configuration, "
                "e.g. local_size=lambda p: (p['TILE_X'] * p['ROWS'], 1)"
            )
        self.problem_size = problem_size
        self.explicit_names = tuple(block_size_names or ())
        self.block_size_names = (*self.explicit_names, *DEFAULT_BLOCK_SIZE_NAMES[len(self.explicit_names) :])
        self.grid_div = (grid_div_x, grid_div_y, grid_div_z)
        self.local_size = local_size
        self.local_memory = local_memory

    def __repr__(self) -> str:
        parts = [f"problem_size={self.problem_size!r}"] if self.problem_size is not None else []
        if self.local_size is not None:
            parts.append("local_size=...")
        else:
            parts.append(f"block_size_names={list(self.block_size_names)!r}")
        parts += [
            f"grid_div_{axis}={d!r}" for axis, d in zip("xyz", self.grid_div, strict=True) if d is not None
        ]
        if self.local_memory is not None:
            parts.append("local_memory=...")
        return f"Geometry({', '.join(parts)})"

    # -- sizes ------------------------------------------------------------------------------------------
    def local_size_of(self, config: Mapping[str, Any]) -> tuple[int, int, int]:
        """The work-group size in x, y and z."""
        if self.local_size is not None:
            sizes = [*_dims(call_with_config(self.local_size, config), "local_size", config), 1, 1]
        else:
            sizes = [
                _whole(config[name], f"block size {name!r}", config, minimum=1) if name in config else absent
                for name, absent in zip(self.block_size_names, _ABSENT_BLOCK, strict=True)
            ]
        return sizes[0], sizes[1], sizes[2]

    def problem_size_of(self, config: Mapping[str, Any]) -> tuple[int, ...]:
        """The problem size (one entry per dimension given, at most three)."""
        if self.problem_size is None:
            raise GeometryError("this Geometry has no problem_size; declare Geometry(problem_size=...)")
        size: Any = self.problem_size
        if callable(size):
            size = call_with_config(size, config)
        terms = [size] if isinstance(size, (str, numbers.Real)) else size
        if not isinstance(terms, (list, tuple)) or not 1 <= len(terms) <= 3:
            raise GeometryDeclarationError(
                f"problem_size {size!r}: expected an int or a parameter name or expression, a tuple "
                "of 1 to 3 of those, or a callable of the configuration returning one of those"
            )
        return tuple(
            _whole(_term(t, config, "problem_size"), "problem_size", config, minimum=1) for t in terms
        )

    def grid_of(self, config: Mapping[str, Any]) -> tuple[int, ...]:
        """Work-groups per dimension of the problem: ``ceil(problem / divisor)``."""
        problem = self.problem_size_of(config)
        local = self.local_size_of(config)
        grid = []
        for axis, size in enumerate(problem):
            divisor = self._divisor(axis, config, local)
            if divisor <= 0:
                raise GeometryError(
                    f"grid_div_{'xyz'[axis]} is {divisor!r} for {dict(config)}; it must be > 0"
                )
            whole = _is_int(divisor) or (isinstance(divisor, float) and divisor.is_integer())
            grid.append(-(-size // int(divisor)) if whole else math.ceil(size / divisor))
        return tuple(grid)

    def sizes(self, config: Mapping[str, Any]) -> LaunchSizes:
        """Global size, local size and grid of ``config`` (module docstring)."""
        grid = list(self.grid_of(config))
        local = self.local_size_of(config)
        dims = max(len(grid), self._block_dims(config))
        grid += [1] * (dims - len(grid))
        local_used = local[:dims]
        return LaunchSizes(
            tuple(g * b for g, b in zip(grid, local_used, strict=True)), local_used, tuple(grid)
        )

    __call__ = sizes

    def local_memory_of(self, config: Mapping[str, Any]) -> int | None:
        """Bytes of local memory a work-group of ``config`` uses, None when not declared."""
        if self.local_memory is None:
            return None
        return _whole(_term(self.local_memory, config, "local_memory"), "local_memory", config, minimum=0)

    # -- declaration checks -----------------------------------------------------------------------------
    def local_size_reads(self, names: Collection[str]) -> tuple[str, ...]:
        """The parameters (of ``names``) that the local size depends on."""
        if self.local_size is not None:
            return bind_config_callable(self.local_size, names, where="Geometry local_size").reads
        return tuple(n for n in names if n in self.block_size_names)

    def local_memory_reads(self, names: Collection[str]) -> tuple[str, ...]:
        """The parameters (of ``names``) that the declared local memory depends on."""
        return _reads(self.local_memory, names, "Geometry local_memory")

    def check(self, names: Collection[str]) -> None:
        """Raise :class:`GeometryError` when the declaration reads names that are not parameters."""
        missing = [n for n in self.explicit_names if n not in names]
        if missing:
            raise GeometryError(
                f"block_size_names: {missing[0]!r} is not a parameter (parameters: {', '.join(names)})"
            )
        try:
            self.local_size_reads(names)
            self.local_memory_reads(names)
            for axis, divisor in enumerate(self.grid_div):
                terms = divisor if isinstance(divisor, (list, tuple)) else [divisor]
                for term in terms:
                    _reads(term, names, f"grid_div_{'xyz'[axis]}")
            size = self.problem_size
            for term in size if isinstance(size, (list, tuple)) else [size]:
                _reads(term, names, "problem_size")
        except ConstraintError as exc:
            raise GeometryError(f"Geometry: {exc}") from exc
        self._check_constant_strings()

    def _check_constant_strings(self) -> None:
        """Evaluate the expressions that read no parameter ("1e400", "0", "64 * 4") now: their value is
        that of every configuration."""
        terms: list[tuple[Any, str, int]] = []
        size = self.problem_size
        terms += [(t, "problem_size", 1) for t in (size if isinstance(size, (list, tuple)) else [size])]
        for axis, divisor in enumerate(self.grid_div):
            for term in divisor if isinstance(divisor, (list, tuple)) else [divisor]:
                terms.append((term, f"grid_div_{'xyz'[axis]}", 1))
        terms.append((self.local_memory, "local_memory", 0))
        for term, what, minimum in terms:
            if isinstance(term, str) and _constant(term):
                try:
                    _whole(_term(term, {}, what), what, {}, minimum=minimum)
                except GeometryError as exc:
                    raise GeometryError(f"Geometry: {exc}") from None

    # -- internals --------------------------------------------------------------------------------------
    def _divisor(self, axis: int, config: Mapping[str, Any], local: tuple[int, int, int]) -> float:
        spec = self.grid_div[axis]
        if spec is None:
            if self.local_size is not None:
                return local[axis]
            return _whole(config.get(self.block_size_names[axis], 1), "grid divisor", config, minimum=1)
        terms = spec if isinstance(spec, (list, tuple)) else [spec]
        product: float = 1
        for term in terms:
            product *= _term(term, config, f"grid_div_{'xyz'[axis]}")
        if not math.isfinite(product):
            raise GeometryError(
                f"grid_div_{'xyz'[axis]} is {product!r} for {dict(config)}; it must be finite"
            )
        return product

    def _block_dims(self, config: Mapping[str, Any]) -> int:
        if self.local_size is not None:
            return len(_dims(call_with_config(self.local_size, config), "local_size", config))
        present = [i for i, name in enumerate(self.block_size_names) if name in config]
        return max(present, default=0) + 1


def _term(term: Any, config: Mapping[str, Any], what: str) -> Any:
    """The value of one size term: a number, a parameter name or expression, or a callable."""
    if isinstance(term, str):
        names = tuple(config)
        try:
            reads, fn = _compiled(term, names)
        except ConstraintError as exc:
            raise GeometryError(f"{what} {term!r}: {exc}") from exc
        try:
            value = fn(**{n: config[n] for n in reads})
        except ArithmeticError as exc:  # a division by a parameter that is 0 in this configuration
            raise GeometryError(f"{what} {term!r} for {dict(config)}: {type(exc).__name__}: {exc}") from None
        return int(_number(value, f"{what} {term!r}", config))
    if callable(term):
        return _number(call_with_config(term, config), f"{what} callable", config)
    if isinstance(term, numbers.Real) and not isinstance(term, bool):
        return term
    raise GeometryError(f"{what}: {term!r} is {_NOT_A_TERM}")


def _number(value: Any, what: str, config: Mapping[str, Any]) -> float:
    """``value`` when it is a finite number; a :class:`GeometryDeclarationError` otherwise (a string,
    None, infinity: returned for one configuration, it is returned for every one)."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value):
        return value  # type: ignore[return-value]
    raise GeometryDeclarationError(
        f"{what} gave {value!r} for {dict(config)}; expected a finite number "
        "(the geometry is declared wrongly)"
    )


def _reads(term: Any, names: Collection[str], what: str) -> tuple[str, ...]:
    """The parameters one term reads (checking that they exist)."""
    if term is None or (isinstance(term, numbers.Real) and not isinstance(term, bool)):
        return ()
    if isinstance(term, str):
        try:
            tree = check_restriction(term, names)
        except ConstraintError as exc:  # worded for a restriction: name the geometry field instead
            field = what.removeprefix("Geometry ")
            reason = str(exc).removeprefix(f"constraint {term!r}: ")
            hint = (
                f"; a string is an expression of the parameters: give a size of your own as a number "
                f"({field}=4096, not {field}={term!r})"
                if "unknown name" in reason
                else ""
            )
            raise GeometryError(f"Geometry {field}={term!r}: {reason}{hint}") from exc
        used = {getattr(node, "id", None) for node in ast.walk(tree)}
        return tuple(n for n in names if n in used)
    if callable(term):
        return bind_config_callable(term, names, where=what).reads
    raise GeometryError(f"{what}: {term!r} is {_NOT_A_TERM}")


def _whole(value: Any, what: str, config: Mapping[str, Any], *, minimum: int = 1) -> int:
    """``value`` as an int of at least ``minimum``: a number out of range is a
    :class:`GeometryError` of this configuration, anything else a :class:`GeometryDeclarationError`."""
    if _is_int(value) or (isinstance(value, float) and value.is_integer()):
        if value >= minimum:
            return int(value)
        raise GeometryError(f"{what} is {value!r} for {dict(config)}; expected a whole number >= {minimum}")
    if isinstance(value, float) and math.isfinite(value):
        raise GeometryError(f"{what} is {value!r} for {dict(config)}; expected a whole number >= {minimum}")
    raise GeometryDeclarationError(
        f"{what} is {value!r} for {dict(config)}; expected a whole number >= {minimum} "
        "(the geometry is declared wrongly)"
    )


def _dims(value: Any, what: str, config: Mapping[str, Any]) -> tuple[int, ...]:
    items = [value] if _is_int(value) else list(value) if isinstance(value, (list, tuple)) else None
    if items is None or not 1 <= len(items) <= 3:
        raise GeometryDeclarationError(
            f"{what} gave {value!r} for {dict(config)}; expected 1 to 3 whole numbers"
        )
    return tuple(_whole(v, what, config, minimum=1) for v in items)


def _is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _constant(text: str) -> bool:
    """Whether the expression ``text`` reads no name (its value is every configuration's)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return False
    return not any(isinstance(node, ast.Name) for node in ast.walk(tree))


def _check_declared(problem_size: Any, divisors: Sequence[GridDivisor], local_memory: Any) -> None:
    """Check the constant parts of a declaration: problem sizes (whole, >= 1, at most three),
    grid divisor factors (finite, > 0) and the local memory (whole, >= 0)."""
    sizes = list(problem_size) if isinstance(problem_size, (list, tuple)) else [problem_size]
    if not 1 <= len(sizes) <= 3:
        raise GeometryError(
            f"Geometry: problem_size={problem_size!r} has {len(sizes)} dimensions; expected 1 to 3"
        )
    for size in sizes:
        if size is not None and not (isinstance(size, str) or _is_number(size) or callable(size)):
            raise GeometryError(f"Geometry: problem_size: {size!r} is {_NOT_A_TERM}")
        if _is_number(size):
            _declared_number(size, "problem_size", 1)
    for axis, divisor in enumerate(divisors):
        for term in divisor if isinstance(divisor, (list, tuple)) else [divisor]:
            if _is_number(term) and not (math.isfinite(term) and term > 0):
                raise GeometryError(f"Geometry: grid_div_{'xyz'[axis]}: {term!r} must be a finite number > 0")
    if _is_number(local_memory):
        _declared_number(local_memory, "local_memory", 0)


def _declared_number(value: Any, what: str, minimum: int) -> None:
    try:
        _whole(value, what, {}, minimum=minimum)
    except GeometryError:
        raise GeometryError(f"Geometry: {what}={value!r}; expected a whole number >= {minimum}") from None
