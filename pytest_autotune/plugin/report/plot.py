"""One tuned test's convergence plot (PNG), drawn with matplotlib's Agg backend.

matplotlib is imported inside :func:`draw_convergence` only, which runs only for
``--autotune-report``: a plain run, and a tuning run without pictures, never load it. The figure
is drawn on its own Agg canvas, not through pyplot, so the test session's matplotlib backend and
pyplot state are left alone.

What the plot shows, left to right: every trial's objective value (dots; a warm start's trials,
the sources' best configurations, ringed) and the best so far (a step line); failed trials as
markers along the top edge, one marker per failure label; then, past a dotted line, the finalists
as they were re-measured after the search in interleaved rounds (the winner as a star); last, the
reported time (the winner's new baseline, the one time the summary and the JSON report too), a
gold bar. The declared default's value in the finalist rounds is a dashed horizontal line. Times
are shown in the unit that suits the best one (s, ms, us, ns); a range wider than 20x gets a log
scale, whose ticks read as plain numbers (``2``, ``5``, ``10``, not ``2x10^0``). The title is
wrapped to the figure's width.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pytest_autotune.plugin.report.summary_text import format_value

if TYPE_CHECKING:
    from pytest_autotune.plugin.report.search_trace import SearchTrace

__all__ = ["draw_convergence", "plain_log_ticks", "time_scale", "wrapped"]

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


#: Characters per title line that fit the figure's width at the title's font size.
TITLE_WIDTH: Final = 110


def wrapped(text: str, width: int = TITLE_WIDTH) -> str:
    """``text`` with every line wrapped to ``width`` characters (breaking after ``, `` where it can)."""
    import textwrap

    return "\n".join(
        "\n".join(textwrap.wrap(line, width, break_on_hyphens=False, subsequent_indent="  ")) or line
        for line in text.splitlines()
    )


def plain_log_ticks(axis: Any) -> None:
    """Ticks at 1, 2 and 5 of each decade labelled as plain numbers (``%g``), no minor labels."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


def _best_so_far(values: list[float | None], maximize: bool) -> list[float | None]:
    best: float | None = None
    trail = []
    for value in values:
        if value is not None and (best is None or (value > best if maximize else value < best)):
            best = value
        trail.append(best)
    return trail


def draw_convergence(
    trace: SearchTrace, path: Path, *, title: str, subtitle: str, reported: float | None = None
) -> Any:
    """Draw ``trace`` into the PNG file ``path`` (see the module docstring); ``reported`` is the
    tuned test's reported time (its new baseline). Returns the matplotlib figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # no pyplot: no global backend state
    from matplotlib.figure import Figure

    values = [value for value, _ in trace.trials]
    measured = [v for v in values if v is not None] + [
        f.median for f in trace.finalists if f.median is not None
    ]
    measured += [reported] if reported is not None else []
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
        warm = [(n, y) for n, y in ok if n - 1 in set(trace.warm)]  # ok's values are scaled
        if warm:
            axes.scatter(
                *zip(*warm, strict=True), s=70, facecolors="none", edgecolors="tab:orange", linewidths=1.5,
                label=f"warm start: a source's best ({len(warm)})",
            )  # fmt: skip
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
    _draw_finalists(axes, trace, scale, start=len(values) + 1, reported=reported)
    if log:
        axes.set_yscale("log")
        plain_log_ticks(axes.yaxis)
    _trial_ticks(axes, len(values))
    axes.set_xlabel("trial")
    axes.set_ylabel(f"{'time' if trace.unit == 's' else trace.unit} [{unit}]")
    axes.set_title(wrapped(f"{title}\n{subtitle}"), fontsize=9, loc="left")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8, loc="best")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")
    return figure


def _trial_ticks(axes: Any, trials: int) -> None:
    """Integer ticks under the trials only (the finalists right of them are no trial numbers)."""
    from matplotlib.ticker import FixedLocator, MaxNLocator

    ticks = MaxNLocator(integer=True).tick_values(1, max(trials, 1))
    axes.xaxis.set_major_locator(FixedLocator([t for t in ticks if 1 <= t <= trials]))


def _draw_finalists(
    axes: Any, trace: SearchTrace, scale: float, *, start: int, reported: float | None
) -> None:
    """The default's line, the re-measured finalists right of the trials, and the reported time."""
    default = trace.finalist("default")
    if default is not None and default.median is not None:
        axes.axhline(
            default.median / scale,
            color="tab:gray",
            linestyle="--",
            label=f"default in the finalist rounds {format_value(default.median, trace.unit)}",
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
                label=f"winner in the finalist rounds {format_value(value * scale, trace.unit)}",
            )  # fmt: skip
    if reported is not None:
        x = start + len(points) + 1
        axes.hlines(
            reported / scale, x - 0.4, x + 0.4, colors="goldenrod", linewidths=4, zorder=3,
            label=f"reported time: its new baseline {format_value(reported, trace.unit)}",
        )  # fmt: skip
