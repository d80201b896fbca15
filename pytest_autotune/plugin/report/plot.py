"""One tuned test's convergence plot (PNG), drawn with matplotlib's Agg backend.

matplotlib is imported inside :func:`draw_convergence` only, which runs only for
``--autotune-report``: a plain run, and a tuning run without pictures, never load it. The figure
is drawn on its own Agg canvas, not through pyplot, so the test session's matplotlib backend and
pyplot state are left alone.

What the plot shows, left to right: every trial's objective value (dots) and the best so far (a
step line); failed trials as markers along the top edge, one marker per failure label; then,
past a dotted line, the finalists as they were re-measured after the search (the winner as a
star). The declared default's re-measured value is a dashed horizontal line. Times are shown in
the unit that suits the best one (s, ms, us, ns); a range wider than 20x gets a log scale.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pytest_autotune.plugin.report.summary_text import format_value

if TYPE_CHECKING:
    from pytest_autotune.plugin.report.search_trace import SearchTrace

__all__ = ["draw_convergence", "time_scale"]

#: Marker of each failure label (Kernel Tuner's labels).
_FAILURE_MARKERS: Final = {
    "correctness": "X",
    "compile": "s",
    "runtime": "^",
    "timeout": "v",
    "constraints": "D",
}


def time_scale(values: list[float], unit: str) -> tuple[float, str]:
    """(divisor, unit name) that shows ``values`` readably: seconds as s/ms/us/ns, others unchanged."""
    if unit != "s" or not values:
        return 1.0, unit
    typical = sorted(abs(v) for v in values)[len(values) // 2]
    for name, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if typical >= scale:
            return scale, name
    return 1e-9, "ns"


def _best_so_far(values: list[float | None], maximize: bool) -> list[float | None]:
    best: float | None = None
    trail = []
    for value in values:
        if value is not None and (best is None or (value > best if maximize else value < best)):
            best = value
        trail.append(best)
    return trail


def draw_convergence(trace: SearchTrace, path: Path, *, title: str, subtitle: str) -> None:
    """Draw ``trace`` into the PNG file ``path`` (see the module docstring)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # no pyplot: no global backend state
    from matplotlib.figure import Figure

    values = [value for value, _ in trace.trials]
    measured = [v for v in values if v is not None] + [
        f.median for f in trace.finalists if f.median is not None
    ]
    scale, unit = time_scale(measured, trace.unit)
    figure = Figure(figsize=(9, 4.8), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    axes: Any = figure.add_subplot()
    numbers = list(range(1, len(values) + 1))
    ok = [(n, v / scale) for n, v in zip(numbers, values, strict=True) if v is not None]
    if ok:
        axes.scatter(*zip(*ok, strict=True), s=14, color="tab:blue", alpha=0.6, label="trial")
        trail = _best_so_far(values, trace.maximize)
        steps = [(n, b / scale) for n, b in zip(numbers, trail, strict=True) if b is not None]
        axes.step(*zip(*steps, strict=True), where="post", color="tab:blue", label="best trial so far")
    scaled = [v / scale for v in measured]
    top = max(scaled) if scaled else 1.0
    bottom = min(scaled) if scaled else 0.0
    log = bottom > 0 and top / bottom > 20
    fail_y = top * (1.6 if log else 1.08) if scaled else 1.0
    labels = sorted({label for value, label in trace.trials if value is None})
    for label in labels:
        xs = [
            n for n, (value, lab) in zip(numbers, trace.trials, strict=True) if value is None and lab == label
        ]
        axes.scatter(
            xs,
            [fail_y] * len(xs),
            marker=_FAILURE_MARKERS.get(label, "o"),
            color="tab:red",
            s=30,
            label=f"failed: {label} ({len(xs)})",
        )
    _draw_finalists(axes, trace, scale, start=len(values) + 1)
    if log:
        axes.set_yscale("log")
    _trial_ticks(axes, len(values))
    axes.set_xlabel("trial")
    axes.set_ylabel(f"{'time' if trace.unit == 's' else trace.unit} [{unit}]")
    axes.set_title(f"{title}\n{subtitle}", fontsize=9, loc="left")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8, loc="best")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")


def _trial_ticks(axes: Any, trials: int) -> None:
    """Integer ticks under the trials only (the finalists right of them are no trial numbers)."""
    from matplotlib.ticker import FixedLocator, MaxNLocator

    ticks = MaxNLocator(integer=True).tick_values(1, max(trials, 1))
    axes.xaxis.set_major_locator(FixedLocator([t for t in ticks if 1 <= t <= trials]))


def _draw_finalists(axes: Any, trace: SearchTrace, scale: float, *, start: int) -> None:
    """The default's line and the re-measured finalists right of the trials."""
    default = trace.finalist("default")
    if default is not None and default.median is not None:
        axes.axhline(
            default.median / scale,
            color="tab:gray",
            linestyle="--",
            label=f"default, re-measured {format_value(default.median, trace.unit)}",
        )
    remeasured = [(f.median / scale, f.roles) for f in trace.finalists if f.median is not None]
    if not remeasured:
        return
    axes.axvline(start, color="black", linestyle=":", linewidth=1)
    axes.annotate(
        "re-measured\nfinalists", (start, 1.0), xycoords=("data", "axes fraction"), xytext=(4, -4),
        textcoords="offset points", va="top", fontsize=8,
    )  # fmt: skip
    points = [(start + 1 + i, value, roles) for i, (value, roles) in enumerate(remeasured)]
    others = [(x, value) for x, value, roles in points if "winner" not in roles]
    if others:
        axes.scatter(
            *zip(*others, strict=True), marker="D", facecolors="none", edgecolors="tab:green", s=40,
            label="finalist, re-measured",
        )  # fmt: skip
    for x, value, roles in points:
        if "winner" in roles:
            axes.scatter(
                [x], [value], marker="*", color="gold", edgecolors="black", s=160, zorder=3,
                label=f"winner, re-measured {format_value(value * scale, trace.unit)}",
            )  # fmt: skip
