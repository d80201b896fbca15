"""One tuned test's per-parameter picture (PNG): the objective against each parameter's values.

The view a kernel author looks for first: which values of a parameter are fast, which fail, and
how much a parameter matters at all. One panel per parameter; its values are categories along the
x axis in their natural order (numbers by size, others by their text); each trial is a dot over
its value (spread a little sideways so that equal values stay visible), the best trial of each
value is joined by a line, failed trials are red crosses along the top edge, and the winner's
value is a gold star at the winner's own time (its finalist median, or its own trial's time when
it was not re-measured), not on that value's best, which another configuration may have set. One
legend below the panels serves them all.
Drawn on an Agg canvas like :mod:`pytest_autotune.plugin.report.plot`, whose scale and tick
helpers it shares; matplotlib is imported only when a picture is drawn.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pytest_autotune.plugin.report.plot import plain_log_ticks, time_scale, wrapped

if TYPE_CHECKING:
    from pytest_autotune.plugin.report.search_trace import SearchTrace

__all__ = ["draw_parameters", "ordered_values", "winner_time"]

#: Most panels in one row.
COLUMNS: Final = 3


def ordered_values(values: Sequence[Any]) -> list[Any]:
    """The distinct ``values`` in their natural order: numbers (not booleans) by size first, then
    the others by their text."""
    distinct: list[Any] = []
    for value in values:
        if value not in distinct:
            distinct.append(value)
    numbers = sorted(v for v in distinct if isinstance(v, int | float) and not isinstance(v, bool))
    others = sorted((v for v in distinct if v not in numbers), key=str)
    return [*numbers, *others]


def _jitter(i: int) -> float:
    """A small, repeatable sideways offset for trial ``i``."""
    return ((i * 0.6180339887) % 1.0 - 0.5) * 0.3


def draw_parameters(trace: SearchTrace, path: Path, *, title: str) -> Any:
    """Draw ``trace``'s per-parameter picture into the PNG file ``path`` (module docstring); returns
    the matplotlib figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    count = len(trace.params)
    columns = min(count, COLUMNS)
    rows = math.ceil(count / columns)
    figure = Figure(figsize=(4.2 * columns + 0.6, 3.2 * rows + 0.8), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    measured = [value for value, _ in trace.trials if value is not None]
    scale, unit = time_scale(measured, trace.unit)
    low, high = (min(measured), max(measured)) if measured else (0.0, 1.0)
    log = low > 0 and high / low > 20
    winner = trace.finalist("winner")
    own = winner_time(trace)
    for k, name in enumerate(trace.params):
        axes: Any = figure.add_subplot(rows, columns, k + 1)
        chosen = winner.config.get(name) if winner and own is not None else None
        _panel(axes, trace, k, scale, log, chosen, own / scale if own is not None else None)
        axes.set_xlabel(name)
        if k % columns == 0:
            axes.set_ylabel(f"{'time' if trace.unit == 's' else trace.unit} [{unit}]")
    legend: dict[str, Any] = {}
    for axes in figure.axes:
        for handle, label in zip(*axes.get_legend_handles_labels(), strict=True):
            legend.setdefault(label.split(" (")[0], (handle, label))
    handles, labels = zip(*legend.values(), strict=True) if legend else ((), ())
    figure.legend(handles, labels, loc="outside lower center", ncols=len(labels) or 1, fontsize=8)
    figure.suptitle(wrapped(title, 40 * columns), fontsize=9, x=0.01, ha="left")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")
    return figure


def winner_time(trace: SearchTrace) -> float | None:
    """The winner's own time: its finalist median, else the best of its own trials (None when
    neither is known)."""
    winner = trace.finalist("winner")
    if winner is None:
        return None
    if winner.median is not None:
        return winner.median
    own = tuple(winner.config.get(name) for name in trace.params)
    times = [
        t
        for values, (t, _) in zip(trace.configs, trace.trials, strict=True)
        if values == own and t is not None
    ]
    if not times:
        return None
    return max(times) if trace.maximize else min(times)


def _panel(
    axes: Any, trace: SearchTrace, k: int, scale: float, log: bool, chosen: Any, at: float | None
) -> None:
    """One parameter's panel: trials over its values, the best per value, failures, the winner."""
    column = [values[k] for values in trace.configs]
    order = ordered_values(column)
    position = {repr(value): x for x, value in enumerate(order)}
    ok = [
        (position[repr(v)] + _jitter(i), value / scale)
        for i, (v, (value, _)) in enumerate(zip(column, trace.trials, strict=True))
        if value is not None
    ]
    if ok:
        axes.scatter(*zip(*ok, strict=True), s=12, color="tab:blue", alpha=0.5, label="trial")
    pick = max if trace.maximize else min
    best = []
    for x, value in enumerate(order):
        found = [t for v, (t, _) in zip(column, trace.trials, strict=True) if v == value and t is not None]
        if found:
            best.append((x, pick(found) / scale))
    if best:
        axes.plot(
            *zip(*best, strict=True), color="tab:blue", marker="_", markersize=14, label="best per value"
        )
    failed = [
        position[repr(v)] + _jitter(i)
        for i, (v, (t, _)) in enumerate(zip(column, trace.trials, strict=True))
        if t is None
    ]
    if failed and ok:
        top = max(y for _, y in ok) * (1.5 if log else 1.08)
        axes.scatter(
            failed, [top] * len(failed), marker="x", color="tab:red", s=20, label=f"failed ({len(failed)})"
        )
    if chosen is not None and at is not None and repr(chosen) in position:
        axes.scatter(
            [position[repr(chosen)]],
            [at],
            marker="*",
            color="gold",
            edgecolors="black",
            s=140,
            zorder=3,
            label="winner's value (at its own time)",
        )
    axes.set_xticks(range(len(order)), [str(value) for value in order], rotation=45 if len(order) > 8 else 0)
    if log:
        axes.set_yscale("log")
        plain_log_ticks(axes.yaxis)
    axes.grid(True, alpha=0.3)
