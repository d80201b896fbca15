"""The values of one parameter that pass the conditions reading only that parameter.

A tree level never looks at values its unary conditions reject, so they are filtered once, in
chunks (a domain of 2**24 values is never materialised whole). When every value passes, the
filtered domain stays a description (positions are ranks), costing no memory at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.errors import EmptySpaceError, SpaceError
from pytest_autotune.space.params.base import Param
from pytest_autotune.space.params.permutation import MAX_PERMUTATION_ITEMS
from pytest_autotune.space.vectorize import Atom

__all__ = ["MAX_ENUMERATED_DOMAIN", "MAX_PERMUTATION_ITEMS", "Domain", "check_enumerable", "filter_domain"]

#: Largest domain a tree level enumerates (a parameter read by a constraint).
MAX_ENUMERATED_DOMAIN = 2**32
#: Most values a filtered domain may keep (its positions are materialised).
MAX_KEPT_VALUES = 2**27
#: Values per chunk when filtering a domain (bounds the temporary memory: 32 KiB per int64 array).
FILTER_CHUNK = 2**12


class Domain:
    """The filtered values of one parameter, addressed by *rank* (0 .. size-1, ascending position).

    ``positions`` maps ranks to positions in the parameter's full domain; None means every value
    passed and ranks are positions.
    """

    def __init__(self, name: str, param: Param, positions: NDArray[np.int64] | None) -> None:
        self.name = name
        self.param = param
        self.positions = positions
        self.size = param.size if positions is None else len(positions)

    def positions_of(self, ranks: NDArray[np.int64]) -> NDArray[np.int64]:
        """Domain positions of the given ranks."""
        ranks = np.asarray(ranks, dtype=np.int64)
        return ranks if self.positions is None else self.positions[ranks]

    def values_of(self, ranks: NDArray[np.int64]) -> NDArray[Any]:
        """Parameter values of the given ranks (natural dtype)."""
        return self.param.values_at(self.positions_of(ranks))

    def values_between(self, start: int, stop: int) -> NDArray[Any]:
        """Values of ranks ``start .. stop-1`` (contiguous, cheap for an unfiltered domain)."""
        if self.positions is None:
            return self.param.values(start, stop)
        return self.param.values_at(self.positions[start:stop])


def check_enumerable(name: str, param: Param) -> None:
    """Raise when ``param`` is read by a constraint but too large to enumerate (each kind knows
    its limit: :meth:`Param.check_enumerable`; permutations at most ``MAX_PERMUTATION_ITEMS``)."""
    param.check_enumerable(name, MAX_ENUMERATED_DOMAIN)


def filter_domain(name: str, param: Param, atoms: Sequence[Atom]) -> Domain:
    """Apply the unary ``atoms`` (each reads only ``name``) to the domain of ``param``, in chunks."""
    check_enumerable(name, param)
    if not atoms:
        return Domain(name, param, None)
    kept: list[NDArray[np.int64]] = []  # positions kept, once some value was rejected
    total = 0
    all_passed = True
    for start in range(0, param.size, FILTER_CHUNK):
        stop = min(param.size, start + FILTER_CHUNK)
        positions = np.arange(start, stop, dtype=np.int64)
        values = param.values(start, stop)
        for atom in atoms:
            mask = atom.evaluate({name: values})
            positions, values = positions[mask], values[mask]
            if len(positions) == 0:
                break
        total += len(positions)
        if all_passed and len(positions) == stop - start:
            continue  # everything passed so far: nothing to store
        if total > MAX_KEPT_VALUES:
            raise SpaceError(
                f"parameter {name!r}: more than {MAX_KEPT_VALUES} values of {param.describe()} pass "
                f"{' and '.join(sorted({a.label for a in atoms}))}; narrow the range (or use a step)",
                parameter=name,
            )
        if all_passed:
            all_passed = False
            kept.append(np.arange(0, start, dtype=np.int64))
        if len(positions):  # most chunks of a sparse filter keep nothing: hold no empty arrays
            kept.append(positions)
    if total == 0:
        labels = sorted({a.label for a in atoms})
        raise EmptySpaceError(
            f"parameter {name!r}: no value of {param.describe()} satisfies {' and '.join(labels)}",
            parameter=name,
        )
    if all_passed:
        return Domain(name, param, None)
    return Domain(name, param, np.concatenate(kept))
