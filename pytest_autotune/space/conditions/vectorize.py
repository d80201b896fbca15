"""Evaluate constraints over numpy arrays, safely, with scalar calls as the reference.

A constraint is split into *atoms*: the operands of its top-level ``and`` (``lambda B, T, L:
(B // T) % L == 0 and L <= 1024`` gives one atom reading ``B, T, L`` and one reading only ``L``),
so that each condition is checked as soon as the parameters it reads are known. Each atom is then
evaluated over arrays by the first of these plans that passes a cross-check against scalar calls:

1. the expression as written, called with arrays;
2. the expression rewritten into numpy logic (:mod:`pytest_autotune.space.conditions.rewrite`);
3. scalar calls, one per combination (always right, slowest).

Integer inputs are cast to the smallest dtype that a static magnitude bound
(:mod:`pytest_autotune.space.conditions.bounds`) proves free of overflow: int32 (several times faster for
``%`` and ``//``), int64, or Python integers in object arrays when no bound below 2**63 exists.
The cross-check compares the vectorised result with scalar calls on a sample holding the extreme
values of every input (domain ends and the extremes of the actual arguments) plus well-spread
combinations; later calls are spot-checked at a few more positions. Evaluation runs with numpy
division-by-zero and invalid-operation errors raised, never silently wrapped: such a call is
answered by scalar calls (or reported to the caller, who may retry on fewer combinations), so a
constraint that raises in Python raises a :class:`ConstraintError` here too.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.conditions.bounds import INT32_MAX, INT64_MAX, Operand, analyse
from pytest_autotune.space.conditions.constraints import Constraint, is_boolean
from pytest_autotune.space.conditions.rewrite import compile_expression, conjuncts, names_read, rewrite
from pytest_autotune.space.conditions.source import function_namespace, locate, resolve_name
from pytest_autotune.space.errors import ConstraintError, SpaceError
from pytest_autotune.space.params.base import Param

__all__ = ["Atom", "UndefinedValues", "split_constraint"]

_GOLDEN = 0.6180339887498949
#: Spread positions added to the extremes when a plan is cross-checked.
CROSS_CHECK_RANDOM = 24
#: Calls after the first that are spot-checked at a few positions.
SPOT_CHECKED_CALLS = 64
#: Positions spot-checked per call.
SPOT_CHECK_POINTS = 2


class UndefinedValues(Exception):
    """numpy met a division by zero or an invalid operation in a strict evaluation."""


class _NotVectorised(Exception):
    """The plan does not vectorise on these inputs (exception, wrong shape or dtype)."""


@dataclass(frozen=True)
class _Plan:
    """How to evaluate an atom over arrays: a callable and the dtype for integer inputs."""

    name: str
    fn: Callable[..., Any] | None  # None: scalar calls
    int_dtype: Any = None  # np.int32, np.int64, object, or None (leave as is)
    bool_as_int: bool = False


def _cast(array: NDArray[Any], plan: _Plan) -> NDArray[Any]:
    kind = array.dtype.kind
    if plan.int_dtype is None:
        return array
    if kind in "iu" or (kind == "b" and plan.bool_as_int):
        return array.astype(plan.int_dtype, copy=False)
    return array


def _canonical_bool(result: Any) -> NDArray[np.bool_]:
    array = np.asarray(result)
    if array.dtype == bool:
        return array
    if array.dtype == object and all(is_boolean(v) for v in array.ravel().tolist()):
        return array.astype(bool)
    raise _NotVectorised(f"result dtype {array.dtype}")


class Atom:
    """One condition of a constraint (an operand of its top-level ``and``, or all of it).

    ``reads`` are the parameters it reads; ``constraint`` is the constraint it came from (named
    in every error). :meth:`evaluate` takes arrays of parameter values that broadcast together.
    """

    def __init__(
        self,
        constraint: Constraint,
        reads: tuple[str, ...],
        scalar_fn: Callable[..., Any],
        expression: ast.expr | None,
        namespace: Mapping[str, Any],
        operands: Mapping[str, Operand],
        extremes: Mapping[str, NDArray[Any]],
        seed: int = 0,
    ) -> None:
        self.constraint = constraint
        self.reads = reads
        self.scalar_fn = scalar_fn
        self.expression = expression
        self.namespace = namespace
        self.operands = {n: operands[n] for n in reads}
        self.extremes = {n: extremes[n] for n in reads}
        self._draws = seed  # position in the golden-ratio sequence of sample positions
        self._candidates: list[_Plan] | None = None
        self._plan: _Plan | None = None
        self._calls = 0
        self._rewritten_fn: Callable[..., Any] | None = None

    @property
    def label(self) -> str:
        """The constraint's name for error messages."""
        return self.constraint.label

    @property
    def plan_name(self) -> str:
        """Which plan evaluates this atom (``written``/``rewritten`` + dtype, or ``scalar``)."""
        return self._plan.name if self._plan else "unplanned"

    @property
    def text(self) -> str:
        """The condition's source text."""
        return ast.unparse(self.expression) if self.expression is not None else self.constraint.source

    def __repr__(self) -> str:
        return f"Atom({self.text!r} reads {self.reads}, {self.plan_name})"

    # -- scalar reference ----------------------------------------------------------------
    def call_scalar(self, values: Mapping[str, Any]) -> bool:
        """Evaluate on plain Python values; errors and non-booleans raise :class:`ConstraintError`."""
        try:
            result = self.scalar_fn(**values)
        except SpaceError:
            raise
        except Exception as exc:
            raise ConstraintError(
                f"{self.label} raised {type(exc).__name__}: {exc} for {dict(values)!r}",
                parameter=self.constraint.owner,
            ) from exc
        if not is_boolean(result):
            raise ConstraintError(
                f"{self.label} returned {result!r} ({type(result).__name__}), not a boolean, "
                f"for {dict(values)!r}",
                parameter=self.constraint.owner,
            )
        return bool(result)

    def _scalar_or_none(self, values: Mapping[str, Any]) -> bool | None:
        try:
            return self.call_scalar(values)
        except ConstraintError as exc:
            if isinstance(exc.__cause__, Exception):
                return None  # the constraint raised: no reference value here
            raise

    def _scalar_eval(
        self, inputs: Mapping[str, NDArray[Any]], shape: tuple[int, ...], *, strict: bool = False
    ) -> NDArray[np.bool_]:
        """One scalar call per combination; with ``strict``, a raising call is reported as
        :class:`UndefinedValues` (the caller may retry on combinations other conditions allow)."""
        arrays = np.broadcast_arrays(*(np.asarray(inputs[n]) for n in self.reads))
        columns = [np.broadcast_to(a, shape).ravel().tolist() for a in arrays]
        out = np.empty(math.prod(shape), dtype=bool)
        reads = self.reads
        for i, row in enumerate(zip(*columns, strict=True)):
            try:
                out[i] = self.call_scalar(dict(zip(reads, row, strict=True)))
            except ConstraintError as exc:
                if strict and isinstance(exc.__cause__, Exception):
                    raise UndefinedValues(str(exc)) from exc
                raise
        return out.reshape(shape)

    # -- plans -------------------------------------------------------------------------
    def _resolve(self, name: str) -> Any:
        return resolve_name(self.namespace, name)

    def _make_candidates(self) -> list[_Plan]:
        has_ints = any(o.kind in ("int", "bool") for o in self.operands.values())
        int_dtype: Any = object if has_ints else None
        bool_as_int = False
        if self.expression is not None:
            analysis = analyse(self.expression, self.operands, self._resolve)
            if analysis is not None:
                bool_as_int = analysis.bool_arithmetic
                if analysis.largest <= INT32_MAX:
                    int_dtype = np.int32
                elif analysis.largest <= INT64_MAX:
                    int_dtype = np.int64
        dtype_name = getattr(int_dtype, "__name__", str(int_dtype))
        plans = [_Plan(f"written/{dtype_name}", self.scalar_fn, int_dtype, bool_as_int)]
        if self.expression is not None:
            plans.append(_Plan(f"rewritten/{dtype_name}", self._rewritten, int_dtype, bool_as_int))
        return plans

    def _rewritten(self, **args: Any) -> Any:
        """The expression rewritten into numpy logic (compiled on first use)."""
        if self._rewritten_fn is None:
            assert self.expression is not None
            expression = rewrite(self.expression, self._resolve, set(self.reads))
            self._rewritten_fn = compile_expression(self.reads, expression, self.namespace, self.label)
        return self._rewritten_fn(**args)

    def _vector_call(
        self, plan: _Plan, inputs: Mapping[str, NDArray[Any]], shape: tuple[int, ...]
    ) -> NDArray[np.bool_]:
        assert plan.fn is not None
        args = {n: _cast(np.asarray(inputs[n]), plan) for n in self.reads}
        try:
            with np.errstate(divide="raise", invalid="raise", over="ignore", under="ignore"):
                result = plan.fn(**args)
        except (FloatingPointError, ZeroDivisionError) as exc:
            raise UndefinedValues(str(exc)) from exc
        except SpaceError:
            raise
        except Exception as exc:
            raise _NotVectorised(f"{type(exc).__name__}: {exc}") from exc
        array = _canonical_bool(result)
        if array.ndim != len(shape):
            raise _NotVectorised(f"result shape {array.shape}, expected {shape}")
        try:
            return np.broadcast_to(array, shape)
        except ValueError as exc:
            raise _NotVectorised(f"result shape {array.shape}, expected {shape}") from exc

    def _spread(self, total: int, count: int) -> NDArray[np.int64]:
        """``count`` positions in ``range(total)``, well spread and different on every call: the
        golden-ratio sequence (deterministic, and no random generator to load while building)."""
        steps = self._draws + 1 + np.arange(count, dtype=np.float64)
        self._draws += count
        return (np.mod(steps * _GOLDEN, 1.0) * total).astype(np.int64)

    def _sample(self, inputs: Mapping[str, NDArray[Any]], shape: tuple[int, ...]) -> dict[str, NDArray[Any]]:
        """Flat arrays of cross-check points: argument extremes, domain ends, spread positions."""
        positions: list[tuple[int, ...]] = []
        total = math.prod(shape)
        for n in self.reads:
            array = np.asarray(inputs[n])
            for pick in (np.argmin, np.argmax):
                try:
                    flat = int(pick(array))
                except (TypeError, ValueError):
                    continue
                local = np.unravel_index(flat, array.shape) if array.ndim else ()
                full = [
                    int(local[d - (len(shape) - array.ndim)])
                    if d >= len(shape) - array.ndim and array.shape[d - (len(shape) - array.ndim)] > 1
                    else int(self._spread(shape[d], 1)[0])
                    for d in range(len(shape))
                ]
                positions.append(tuple(full))
        for flat in self._spread(total, min(total, CROSS_CHECK_RANDOM)).tolist():
            positions.append(tuple(int(i) for i in np.unravel_index(flat, shape)))
        index = tuple(np.array(axis, dtype=np.int64) for axis in zip(*positions, strict=True))
        sample = {n: np.broadcast_to(np.asarray(inputs[n]), shape)[index] for n in self.reads}
        # Domain ends: all lows, all highs, and each input's ends with the others at a sample point.
        extra: dict[str, list[Any]] = {n: [] for n in self.reads}
        for end in (0, -1):
            for n in self.reads:
                extra[n].append(self.extremes[n][end])
        for n in self.reads:
            for end in (0, -1):
                for m in self.reads:
                    extra[m].append(self.extremes[m][end] if m == n else sample[m][0])
        for n in self.reads:
            if sample[n].dtype == object:  # tuples must stay elements, not become a 2-d array
                ends = np.empty(len(extra[n]), dtype=object)
                ends[:] = extra[n]
            else:
                ends = np.asarray(extra[n])  # concatenate promotes (e.g. to a wider string dtype)
            sample[n] = np.concatenate([sample[n], ends])
        return sample

    def _reference(self, sample: Mapping[str, NDArray[Any]]) -> list[bool | None]:
        columns = [sample[n].tolist() for n in self.reads]
        return [
            self._scalar_or_none(dict(zip(self.reads, row, strict=True)))
            for row in zip(*columns, strict=True)
        ]

    def _agrees(
        self, plan: _Plan, sample: Mapping[str, NDArray[Any]], expected: Sequence[bool | None]
    ) -> bool:
        size = len(expected)
        try:
            got = self._vector_call(plan, sample, (size,))
        except (_NotVectorised, UndefinedValues):
            defined = [i for i, e in enumerate(expected) if e is not None]
            if len(defined) == size or not defined:
                return False
            # Undefined points (the constraint raises there) may poison the batch: retry without them.
            keep = np.array(defined)
            try:
                got = self._vector_call(plan, {n: a[keep] for n, a in sample.items()}, (len(keep),))
            except (_NotVectorised, UndefinedValues):
                return False
            return all(bool(g) == expected[i] for g, i in zip(got.tolist(), defined, strict=True))
        return all(e is None or bool(g) == e for g, e in zip(got.tolist(), expected, strict=True))

    def _choose_plan(self, inputs: Mapping[str, NDArray[Any]], shape: tuple[int, ...]) -> _Plan:
        if self._candidates is None:
            self._candidates = self._make_candidates()
        sample = self._sample(inputs, shape)
        expected = self._reference(sample)
        for plan in self._candidates:
            if self._agrees(plan, sample, expected):
                return plan
        return _Plan("scalar", None)

    def _downgrade(self) -> None:
        assert self._candidates is not None
        assert self._plan is not None
        self._candidates = [p for p in self._candidates if p is not self._plan]
        self._plan = None

    def _spot_check(
        self, inputs: Mapping[str, NDArray[Any]], shape: tuple[int, ...], result: NDArray[np.bool_]
    ) -> bool:
        total = math.prod(shape)
        for flat in self._spread(total, SPOT_CHECK_POINTS).tolist():
            position = tuple(int(i) for i in np.unravel_index(flat, shape))
            values = {n: np.broadcast_to(np.asarray(inputs[n]), shape)[position].item() for n in self.reads}
            expected = self._scalar_or_none(values)
            if expected is not None and expected != bool(result[position]):
                return False
        return True

    # -- evaluation ------------------------------------------------------------------------
    def evaluate(self, inputs: Mapping[str, NDArray[Any]], *, strict: bool = False) -> NDArray[np.bool_]:
        """The atom on every combination of the broadcast ``inputs`` (one array per read parameter).

        Inputs hold parameter values in their natural dtype (as :meth:`Param.values_at` gives
        them). With ``strict``, a numpy division by zero or invalid operation, or a scalar call
        that raises, is reported as :class:`UndefinedValues` instead of being answered by scalar
        calls (or raised as a :class:`ConstraintError`).
        """
        shape = tuple(np.broadcast_shapes(*(np.shape(inputs[n]) for n in self.reads)))
        if math.prod(shape) == 0:
            return np.zeros(shape, dtype=bool)
        while True:
            if self._plan is None:
                self._plan = self._choose_plan(inputs, shape)
                self._calls = 0
            plan = self._plan
            if plan.fn is None:
                return self._scalar_eval(inputs, shape, strict=strict)
            try:
                result = self._vector_call(plan, inputs, shape)
            except UndefinedValues:
                if strict:
                    raise
                return self._scalar_eval(inputs, shape)
            except _NotVectorised:
                self._downgrade()
                continue
            self._calls += 1
            if (
                self._calls > 1
                and self._calls <= SPOT_CHECKED_CALLS
                and not self._spot_check(inputs, shape, result)
            ):
                self._downgrade()
                continue
            return result


def split_constraint(
    constraint: Constraint,
    params: Mapping[str, Param],
    *,
    split: bool = True,
) -> list[Atom]:
    """The atoms of ``constraint``: one per operand of a top-level ``and`` when its source is known.

    With ``split=False`` (constraints on continuous parameters) the constraint stays whole.
    """
    located = None
    if constraint.expression is not None:
        expression: ast.expr | None = constraint.expression.body
        namespace: Mapping[str, Any] = getattr(constraint.fn, "__globals__", {})
    else:
        located = locate(constraint.fn)
        expression = located.expression if located is not None else None
        namespace = function_namespace(constraint.fn)
    operands = {n: params[n].operand() for n in constraint.reads}
    extremes = {n: params[n].ends() for n in constraint.reads}
    parts = conjuncts(expression) if expression is not None and split else []
    if expression is not None and _binds_names(expression):
        parts = []
    if len(parts) <= 1:
        return [Atom(constraint, constraint.reads, constraint.fn, expression, namespace, operands, extremes)]
    atoms = []
    for k, part in enumerate(parts):
        reads = names_read(part, constraint.reads)
        fn = compile_expression(reads, part, namespace, f"{constraint.label} part {k + 1}")
        atoms.append(Atom(constraint, reads, fn, part, namespace, operands, extremes, seed=k))
    return atoms


def _binds_names(expression: ast.expr) -> bool:
    """True when the expression binds names itself (comprehension, walrus, lambda): kept whole."""
    return any(isinstance(n, (ast.comprehension, ast.NamedExpr, ast.Lambda)) for n in ast.walk(expression))
