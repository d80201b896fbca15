"""Brute-force search space: enumerate the product, keep the valid configurations.

This is the test oracle for the chain of trees, public as
:class:`pytest_autotune.testing.BruteForceSpace` and never used by the library
itself: every operation is written the obvious way, with scalar constraint
calls, so its answers can be trusted. It refuses products larger than
``max_product`` configurations.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.base import Config, FeatureBlock, Points, Space
from pytest_autotune.space.declaration import Declaration
from pytest_autotune.space.errors import EmptySpaceError, SpaceError
from pytest_autotune.space.features import feature_layout
from pytest_autotune.space.params import Param, to_python

__all__ = ["BruteForceSpace", "encode_value"]

REAL_STEP = 0.1
GOLDEN = 0.6180339887498949
REAL_REPAIR_ROUNDS = 1000


def _numeric_bounds(p: Param) -> tuple[float, float]:
    if p.is_continuous:
        return p.bounds()
    values = p.values()
    return float(values.min()), float(values.max())


def encode_value(p: Param, value: Any) -> list[float]:
    """Features of one value of parameter ``p`` (reference encoding)."""
    if p.feature_kind == "permutation":
        items = list(p.values(0, 1)[0])  # rank 0 is the identity order: the items as declared
        positions = [0.0] * len(items)
        for pos, item in enumerate(value):
            positions[items.index(item)] = float(pos)
        return positions
    if p.is_numeric:
        lo, hi = _numeric_bounds(p)
        if hi == lo:
            return [0.0]
        if p.log_scale:
            return [(math.log(float(value)) - math.log(lo)) / (math.log(hi) - math.log(lo))]
        return [(float(value) - lo) / (hi - lo)]
    index = p.index_of(value)
    assert index is not None
    return [float(index)]


class BruteForceSpace(Space):
    """Reference implementation of :class:`Space` by full enumeration."""

    def __init__(self, declaration: Declaration, *, max_product: int = 2_000_000) -> None:
        super().__init__(declaration)
        self.declaration: Declaration = declaration  # the full declaration, not only the contract's view
        self._discrete = [n for n, p in self.params.items() if not p.is_continuous]
        self._reals = [n for n, p in self.params.items() if p.is_continuous]
        product = math.prod(self.params[n].size for n in self._discrete)
        if product > max_product:
            raise SpaceError(f"brute force refuses a product of {product} configurations")
        real_set = set(self._reals)
        self._discrete_constraints = [c for c in declaration.constraints if not real_set & set(c.reads)]
        self._real_constraints = [c for c in declaration.constraints if real_set & set(c.reads)]
        domains = [[to_python(v) for v in self.params[n].values()] for n in self._discrete]
        self._domains = domains
        self._valid: list[tuple[Any, ...]] = []
        for combo in itertools.product(*domains):
            config = dict(zip(self._discrete, combo, strict=True))
            if all(c(config) for c in self._discrete_constraints):
                self._valid.append(combo)
        if not self._valid:
            raise EmptySpaceError(
                "no valid configuration", parameter=self._discrete[-1] if self._discrete else None
            )
        self._lookup: dict[Hashable, int] = {combo: i for i, combo in enumerate(self._valid)}
        self._blocks = feature_layout(self.params)

    # -- description -----------------------------------------------------------------
    @property
    def size(self) -> int:
        return len(self._valid)

    # -- helpers ---------------------------------------------------------------------
    def _config(self, code: int, reals: NDArray[np.float64]) -> Config:
        config = dict(zip(self._discrete, self._valid[code], strict=True))
        for name, value in zip(self._reals, reals.tolist(), strict=True):
            config[name] = float(value)
        return {n: config[n] for n in self.names}

    def _reals_ok(self, config: Mapping[str, Any]) -> bool:
        return all(c(config) for c in self._real_constraints)

    def _draw_reals(self, code: int, rng: np.random.Generator) -> NDArray[np.float64]:
        for _ in range(10_000):
            u = rng.random(len(self._reals))
            reals = np.array(
                [self.params[n].values_from_unit(u[i : i + 1])[0] for i, n in enumerate(self._reals)]
            )
            if self._reals_ok(self._config(code, reals)):
                return reals
        raise SpaceError("could not draw real values satisfying the constraints")

    # -- conversions -----------------------------------------------------------------
    def configs(self, points: Points) -> list[Config]:
        return [self._config(int(c[0]), r) for c, r in zip(points.codes, points.reals, strict=True)]

    def contains(self, configs: Sequence[Mapping[str, Any]]) -> NDArray[np.bool_]:
        return np.array([self.declaration.is_valid(c) for c in configs], dtype=bool)

    def to_points(self, configs: Sequence[Mapping[str, Any]]) -> Points:
        codes = np.zeros((len(configs), 1), dtype=np.int64)
        reals = np.zeros((len(configs), len(self._reals)))
        for i, config in enumerate(configs):
            if not self.declaration.is_valid(config):
                raise SpaceError(f"configuration {dict(config)!r} is not valid in this space")
            key = tuple(to_python(config[n]) for n in self._discrete)
            codes[i, 0] = self._lookup[key]
            reals[i] = [float(config[n]) for n in self._reals]
        return Points(codes, reals)

    # -- operations ------------------------------------------------------------------
    def sample(self, n: int, rng: np.random.Generator) -> Points:
        codes = rng.integers(0, self.size, size=(n, 1))
        reals = np.zeros((n, len(self._reals)))
        if self._reals:
            for i in range(n):
                reals[i] = self._draw_reals(int(codes[i, 0]), rng)
        return Points(codes.astype(np.int64), reals)

    def index_of(self, points: Points) -> list[int]:
        if self.is_continuous:
            raise SpaceError("a space with Real parameters has no index bijection")
        return [int(c) for c in points.codes[:, 0]]

    def at_index(self, indices: Sequence[int]) -> Points:
        if self.is_continuous:
            raise SpaceError("a space with Real parameters has no index bijection")
        codes = np.array([[int(i)] for i in indices], dtype=np.int64).reshape(-1, 1)
        if len(codes) and (codes.min() < 0 or codes.max() >= self.size):
            raise IndexError("index out of range")
        return Points(codes, np.zeros((len(codes), 0)))

    def neighbours(self, point: Points) -> Points:
        base = self.configs(point)[0]
        found: list[Config] = []
        for name, p in self.params.items():
            if p.is_continuous:
                lo = p.unit_from_values(np.array([base[name]]))[0]
                for u in (lo - REAL_STEP, lo + REAL_STEP):
                    if 0.0 <= u <= 1.0:
                        cand = dict(base, **{name: float(p.values_from_unit(np.array([u]))[0])})
                        if self.declaration.is_valid(cand):
                            found.append(cand)
                continue
            valid_values = []
            domain = [to_python(v) for v in p.values()]
            for v in domain:
                if v == base[name] and type(v) is type(base[name]):
                    continue
                cand = dict(base, **{name: v})
                if self.declaration.is_valid(cand):
                    valid_values.append(v)
            if p.feature_kind == "permutation":
                current = list(base[name])
                swaps = set()
                for i, j in itertools.combinations(range(len(current)), 2):
                    swapped = list(current)
                    swapped[i], swapped[j] = swapped[j], swapped[i]
                    swaps.add(tuple(swapped))
                found.extend(dict(base, **{name: v}) for v in valid_values if v in swaps)
            elif p.is_ordered:
                here = p.index_of(base[name])
                assert here is not None
                below = [v for v in valid_values if p.index_of(v) < here]  # type: ignore[operator]
                above = [v for v in valid_values if p.index_of(v) > here]  # type: ignore[operator]
                if below:
                    found.append(dict(base, **{name: below[-1]}))
                if above:
                    found.append(dict(base, **{name: above[0]}))
            else:
                found.extend(dict(base, **{name: v}) for v in valid_values)
        if not found:
            return Points(np.zeros((0, 1), dtype=np.int64), np.zeros((0, len(self._reals))))
        return self.to_points(found)

    def from_unit(self, coords: NDArray[np.float64]) -> Points:
        coords = np.asarray(coords, dtype=np.float64)
        codes = np.zeros((len(coords), 1), dtype=np.int64)
        reals = np.zeros((len(coords), len(self._reals)))
        for row, u in enumerate(coords):
            candidates = list(range(self.size))
            for i, name in enumerate(self.names):
                if name in self._reals:
                    continue
                j = self._discrete.index(name)
                values = sorted({self._valid[c][j] for c in candidates}, key=self.params[name].index_of)  # type: ignore[arg-type]
                k = min(len(values) - 1, max(0, math.ceil(u[i] * len(values)) - 1))
                candidates = [c for c in candidates if self._valid[c][j] == values[k]]
            codes[row, 0] = candidates[0]
            reals[row] = self._reals_at(codes[row, 0], [u[self.names.index(name)] for name in self._reals])
        return Points(codes, reals)

    def _reals_at(self, code: int, unit: list[float]) -> NDArray[np.float64]:
        """Real values for unit coordinates; when they violate a constraint, the coordinates are
        shifted by multiples of the golden ratio (mod 1) until they do not."""
        for shift in range(REAL_REPAIR_ROUNDS + 1):
            u = [(x + shift * GOLDEN) % 1.0 if shift else x for x in unit]
            reals = np.array(
                [self.params[n].values_from_unit(np.array([u[r]]))[0] for r, n in enumerate(self._reals)]
            )
            if self._reals_ok(self._config(code, reals)):
                return reals
        raise SpaceError("could not map coordinates to real values satisfying the constraints")

    def to_unit(self, points: Points) -> NDArray[np.float64]:
        out = np.zeros((len(points), self.n_dims))
        for row, config in enumerate(self.configs(points)):
            candidates = list(range(self.size))
            for i, name in enumerate(self.names):
                if name in self._reals:
                    out[row, i] = self.params[name].unit_from_values(np.array([config[name]]))[0]
                    continue
                j = self._discrete.index(name)
                values = sorted({self._valid[c][j] for c in candidates}, key=self.params[name].index_of)  # type: ignore[arg-type]
                k = values.index(config[name])
                out[row, i] = (k + 0.5) / len(values)
                candidates = [c for c in candidates if self._valid[c][j] == config[name]]
        return out

    @property
    def feature_blocks(self) -> tuple[FeatureBlock, ...]:
        return self._blocks

    def features(self, points: Points) -> NDArray[np.float64]:
        rows = []
        for config in self.configs(points):
            row: list[float] = []
            for name, p in self.params.items():
                row.extend(encode_value(p, config[name]))
            rows.append(row)
        width = sum(b.width for b in self._blocks)
        return np.array(rows, dtype=np.float64).reshape(len(points), width)

    def default_config(self) -> Config:
        declared = self.declaration.declared_defaults()
        best: tuple[Any, ...] | None = None
        best_key: tuple[int, ...] | None = None
        for combo in self._valid:
            config = dict(zip(self._discrete, combo, strict=True))
            if any(n in config and config[n] != v for n, v in declared.items()):
                continue
            key = tuple(self.params[n].index_of(config[n]) or 0 for n in self._discrete)
            if best_key is None or key < best_key:
                best, best_key = combo, key
        if best is None:
            raise SpaceError(f"the declared defaults {declared!r} are not jointly valid")
        config = dict(zip(self._discrete, best, strict=True))
        for name in self._reals:
            p = self.params[name]
            config[name] = declared.get(name, p.bounds()[0])
        return {n: config[n] for n in self.names}
