"""What one test's tuning went through, compact enough to travel on its test report.

Tune mode builds a :class:`SearchTrace` from the tuner's history and the finalists'
re-measurement; it travels in the result (:mod:`pytest_autotune.plugin.report.results`, as JSON) to the
process that reports, so a test tuned on an xdist worker is drawn by the controller like any
other. The per-trial list is attached only when ``--autotune-report`` asks for pictures; the rest
(the best trial, the finalists) is always there, because the summary and the progress line need it
to say why the reported time differs from the best trial's: the trial was one short measurement,
picked as the fastest of many (so biased fast), and the finalists were measured again in
interleaved rounds, then the winner's baseline once more after the choice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_autotune.timing.measure import Stats
    from pytest_autotune.tuning.trials import TuningResult

__all__ = ["Finalist", "SearchTrace"]


@dataclass(frozen=True)
class Finalist:
    """A configuration re-measured after the search: its pooled median and why it was a finalist
    (``best``: among the best trials; ``default``: the declared default; ``committed``: the entry in
    ``autotune.json``; ``winner``: the one chosen). ``median`` is None when it failed again."""

    config: dict[str, Any]
    median: float | None
    roles: tuple[str, ...]


@dataclass(frozen=True)
class SearchTrace:
    """The trials (value as measured, or None, and outcome label, in trial order), the best trial's
    value, and the finalists. ``maximize`` says which way is better. ``params`` names the
    parameters and ``configs`` holds each trial's values in that order (for the per-parameter
    picture); ``warm`` the numbers (from 0) of the trials that evaluated a warm start's
    configuration (the sources' best ones)."""

    unit: str
    maximize: bool
    best_trial: float | None
    trials: tuple[tuple[float | None, str], ...] = ()
    finalists: tuple[Finalist, ...] = field(default=())
    params: tuple[str, ...] = ()
    configs: tuple[tuple[Any, ...], ...] = ()
    warm: tuple[int, ...] = ()

    @classmethod
    def of_search(
        cls, result: TuningResult, unit: str, warm_configs: Sequence[Mapping[str, Any]] = ()
    ) -> SearchTrace:
        """The trace of a search before its finalists were re-measured; ``warm_configs`` are the
        configurations a warm start suggested (their trials are marked)."""
        trials = tuple((record.outcome.value, str(record.outcome.label)) for record in result.history)
        params = tuple(result.history[0].config) if result.history else ()
        configs = tuple(tuple(record.config.get(name) for name in params) for record in result.history)
        suggested = [dict(config) for config in warm_configs]
        warm = tuple(i for i, record in enumerate(result.history) if dict(record.config) in suggested)
        return cls(unit, result.maximize, result.best_value, trials, (), params, configs, warm)

    def with_finalists(
        self,
        configs: list[dict[str, Any]],
        stats: dict[int, Stats],
        *,
        default: int | None,
        committed: int | None,
        winner: int,
        best: int,
    ) -> SearchTrace:
        """This trace with the re-measured finalists (``best`` of them came from the best trials)."""
        finalists = []
        for i, config in enumerate(configs):
            roles = [
                role
                for role, chosen in (
                    ("best", i < best),
                    ("default", i == default),
                    ("committed", i == committed),
                    ("winner", i == winner),
                )
                if chosen
            ]
            median = stats[i].median if i in stats else None
            finalists.append(Finalist(dict(config), median, tuple(roles)))
        return replace(self, finalists=tuple(finalists))

    def finalist(self, role: str) -> Finalist | None:
        """The finalist with ``role`` (``default``, ``winner``, ...), or None."""
        return next((f for f in self.finalists if role in f.roles), None)

    def to_json(self, *, trials: bool = True) -> dict[str, Any]:
        """A JSON object; ``trials=False`` leaves the per-trial list out (what the summary needs)."""
        data: dict[str, Any] = {
            "unit": self.unit,
            "maximize": self.maximize,
            "best_trial": self.best_trial,
            "finalists": [
                {"config": f.config, "median": f.median, "roles": list(f.roles)} for f in self.finalists
            ],
        }
        if trials:
            data["trials"] = [list(trial) for trial in self.trials]
            data["params"] = list(self.params)
            data["configs"] = [list(values) for values in self.configs]
            data["warm"] = list(self.warm)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SearchTrace:
        """Inverse of :meth:`to_json`."""
        return cls(
            unit=str(data["unit"]),
            maximize=bool(data["maximize"]),
            best_trial=data.get("best_trial"),
            trials=tuple((value, str(label)) for value, label in data.get("trials", ())),
            finalists=tuple(
                Finalist(dict(f["config"]), f.get("median"), tuple(f.get("roles", ())))
                for f in data.get("finalists", ())
            ),
            params=tuple(str(name) for name in data.get("params", ())),
            configs=tuple(tuple(values) for values in data.get("configs", ())),
            warm=tuple(int(i) for i in data.get("warm", ())),
        )
