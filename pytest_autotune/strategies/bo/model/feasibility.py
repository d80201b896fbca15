"""Probability that a configuration is feasible, learnt from every trial.

Hidden constraints (compile errors, launch failures, wrong results) are
learnt by scikit-learn random forests on the features of all trials. As in
tuning-knob search, each failure cause that has enough examples gets its own
"this failure vs. not" forest, rarer causes share one, and the probability
of feasibility is the minimum over the forests of ``1 - P(failure)``.
Failures are never shown to the objective model.

Two settings differ from scikit-learn's defaults, both measured on the
replayed GPU spaces with failures (see the issue note):

* every split considers every feature (``max_features=None``): failures
  usually follow one or two resource parameters, which a random subset of
  features often misses, leaving the forest fooled by the others;
* classes are weighted inversely to their frequency (``balanced``): with a
  few failures among many successes an unweighted forest calls most of the
  failing region "probably feasible", and the acquisition keeps paying for
  that optimism with failed evaluations.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from sklearn.ensemble import RandomForestClassifier

from pytest_autotune.outcome import Label

__all__ = ["FeasibilityModel", "label_groups"]


def label_groups(labels: Sequence[Label], min_per_label: int | None) -> list[frozenset[Label]]:
    """The failure labels of ``labels`` in the groups that get one forest each.

    A label with ``min_per_label`` examples or more gets its own group once another failure label
    exists; the other labels share one group. ``None``: all failures in one group (BaCO).
    """
    counts: Counter[Label] = Counter(label for label in labels if label != "ok")
    if not counts:
        return []
    if min_per_label is None:
        return [frozenset(counts)]
    own = {label for label, n in counts.items() if n >= min_per_label}
    if len(counts) < 2 or not own:
        return [frozenset(counts)]
    groups: list[frozenset[Label]] = [frozenset({label}) for label in sorted(own)]
    rest = frozenset(counts) - own
    if rest:
        groups.append(rest)
    return groups


class FeasibilityModel:
    """Random-forest feasibility classifier(s) over the trials so far.

    ``min_per_label``: a failure label gets its own forest once it has that
    many examples (and another failure label exists; ``None``: one forest
    for all failures, as in BaCO); ``trees``: forest size;
    ``balanced``: weight classes inversely to their frequency;
    ``max_features``: features tried per split (scikit-learn's meaning).
    """

    def __init__(
        self,
        *,
        rng: np.random.Generator,
        trees: int = 32,
        min_per_label: int | None = 5,
        balanced: bool = True,
        max_features: float | str | None = None,
    ) -> None:
        self.rng = rng
        self.trees = trees
        self.min_per_label = min_per_label
        self.balanced = balanced
        self.max_features = max_features
        self._forests: list[RandomForestClassifier] = []

    @property
    def active(self) -> bool:
        """True when some failure was seen (otherwise everything is predicted feasible)."""
        return bool(self._forests)

    def groups(self, labels: Sequence[Label]) -> list[frozenset[Label]]:
        """The failure labels of ``labels`` grouped as :meth:`fit` gives each group its own forest."""
        return label_groups(labels, self.min_per_label)

    def fit(
        self,
        features: NDArray[np.float64],
        labels: Sequence[Label],
        weights: NDArray[np.float64] | None = None,
    ) -> None:
        """Train on all trials: ``features`` rows with their outcome ``labels`` (and ``weights``:
        per-row sample weights, for transfer sources' trials; None: all 1)."""
        self._forests = []
        for group in self.groups(labels):
            target = np.fromiter((label in group for label in labels), dtype=bool, count=len(labels))
            forest = RandomForestClassifier(
                n_estimators=self.trees,
                max_features=self.max_features,
                class_weight="balanced" if self.balanced else None,
                random_state=int(self.rng.integers(2**31 - 1)),
                n_jobs=1,
            )
            forest.fit(features, target, sample_weight=weights)
            self._forests.append(forest)

    def probability(self, features: NDArray[np.float64]) -> NDArray[np.float64]:
        """Probability that each row of ``features`` is feasible (1 where nothing was learnt)."""
        feasible = np.ones(len(features), dtype=np.float64)
        for forest in self._forests:
            failing = forest.predict_proba(features)[:, list(forest.classes_).index(True)]
            feasible = np.minimum(feasible, 1.0 - failing)
        return feasible
