"""The strategy protocol: ``ask()`` proposes, ``tell()`` learns.

A strategy works in the space's own coordinates (:class:`Points`), never on
dicts, so it can use the vectorised space operations. The tuner owns the
loop, the deduplication record and the abort conditions; a strategy should
still avoid proposing what it has been told about.

Several trials may be under way at once (one test's trials on several devices): before every
``ask()`` the tuner calls :meth:`Strategy.pending` with the configurations asked and not yet told,
in any order they will finish. A strategy must never propose one of them; one that can use them
(``bo``: the kriging believer) plans around them, the others simply leave them out (the default
keeps their keys in :attr:`Strategy.under_way`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Sequence
from typing import Any, ClassVar

import numpy as np

from pytest_autotune.outcome import Outcome
from pytest_autotune.space.base import Points, Space

__all__ = ["SpaceExhausted", "Strategy"]


class SpaceExhausted(Exception):
    """Raised by :meth:`Strategy.ask` when nothing is left to propose."""


class Strategy(ABC):
    """Base class of search strategies.

    Subclasses set ``name`` (the ``--autotune-strategy`` value) and accept
    their tuning knobs as keyword-only arguments with defaults.
    """

    name: ClassVar[str]
    #: Resume by re-asking (exact equality with an uninterrupted run); False: only tell the records.
    resume_by_asking: ClassVar[bool] = True
    #: Keys of the configurations under way (asked, not told), as the last :meth:`pending` gave them.
    under_way: frozenset[Hashable] = frozenset()
    #: What the strategy's model expects its latest proposal to gain over the best value, relative
    #: to it (0.01: 1 %); None while it has no model (its initial design) or none at all.
    expected_gain: float | None = None
    #: The tuner stops (converged) once :attr:`expected_gain`, summed over the budget left, falls
    #: below this fraction of the best value (``pytest_autotune.tuning.abort.converged``); 0: never.
    converge: float = 0.0

    def __init__(self, space: Space, *, rng: np.random.Generator, **options: Any) -> None:
        if options:
            raise TypeError(f"{type(self).__name__}: unknown options {sorted(options)}")
        self.space = space
        self.rng = rng

    @abstractmethod
    def ask(self) -> Points:
        """Propose the next configuration to evaluate (a one-row :class:`Points`)."""

    def tell(self, point: Points, outcome: Outcome) -> None:  # noqa: B027 - optional hook
        """Learn the outcome of ``point`` (also called for trials resumed from a journal)."""

    def pending(self, points: Sequence[Points]) -> None:
        """The configurations under way now (one-row :class:`Points` each, maybe none), before each
        :meth:`ask`: never propose one of them. The default keeps their keys in :attr:`under_way`."""
        self.under_way = frozenset(point.keys()[0] for point in points)
