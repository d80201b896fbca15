"""The values of one parameter that pass the conditions reading only that parameter.

A tree level never looks at values its unary conditions reject, so they are filtered once, in
chunks (a domain of 2**24 values is never materialised whole). When every value passes, the
filtered domain stays a description (positions are ranks), costing no memory at all.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.conditions.vectorize import Atom
from pytest_autotune.space.errors import EmptySpaceError, SpaceError
from pytest_autotune.space.params.base import Param
from pytest_autotune.space.params.permutation import MAX_PERMUTATION_ITEMS
from pytest_autotune.space.trees.domain_values import Domain

__all__ = ["MAX_ENUMERATED_DOMAIN", "MAX_PERMUTATION_ITEMS", "Domain", "check_enumerable", "filter_domain"]

#: Largest domain a tree level enumerates (a parameter read by a constraint).
MAX_ENUMERATED_DOMAIN = 2**32
#: Most values a filtered domain may keep (its positions are materialised).
MAX_KEPT_VALUES = 2**27
#: Values per chunk when filtering a domain (bounds the temporary memory: 32 KiB per int64 array).
FILTER_CHUNK = 2**12


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
