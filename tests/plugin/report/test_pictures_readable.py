"""The pictures read well (issue 38): whole titles, plain log ticks, warm-start trials marked, the one
reported time, and a per-parameter view."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("matplotlib")

from pytest_autotune.plugin.report.params import draw_parameters, ordered_values
from pytest_autotune.plugin.report.plot import TITLE_WIDTH, draw_convergence
from pytest_autotune.plugin.report.search_trace import Finalist, SearchTrace


def _trace(warm: tuple[int, ...] = ()) -> SearchTrace:
    configs = [(bs, mode) for bs in (1, 2, 4, 8, 16, 32, 64) for mode in ("a", "b")]
    times = [1e-3 * (1 + abs(bs.bit_length() - 5) ** 2) * (1.5 if mode == "b" else 1) for bs, mode in configs]
    trials: list[tuple[float | None, str]] = [(t, "ok") for t in times]
    trials[3] = (None, "runtime")
    return SearchTrace(
        unit="s",
        maximize=False,
        best_trial=min(t for t, _ in trials if t is not None),
        trials=tuple(trials),
        finalists=(
            Finalist({"BS": 16, "MODE": "a"}, 1.1e-3, ("best", "winner")),
            Finalist({"BS": 1, "MODE": "a"}, 17e-3, ("default",)),
        ),
        params=("BS", "MODE"),
        configs=tuple(configs),
        warm=warm,
    )


def _texts(figure: Any) -> list[str]:
    return [text.get_text() for axes in figure.axes for text in axes.get_legend().get_texts()]


def test_a_long_title_is_wrapped_not_cut(tmp_path: Path) -> None:
    subtitle = "dev, 14 trials (ok 13, runtime 1), strategy bo\nchosen " + str(
        {f"P{i}": 2**i for i in range(12)}
    )
    figure = draw_convergence(
        _trace(), tmp_path / "a.png", title="t.py::test_x", subtitle=subtitle, reported=1e-3
    )
    title = figure.axes[0].get_title(loc="left")
    assert all(len(line) <= TITLE_WIDTH for line in title.splitlines())
    assert "".join(title.split()) == "".join(f"t.py::test_x\n{subtitle}".split())  # nothing lost
    figure.canvas.draw()
    box = figure.axes[0]._left_title
    assert box.get_window_extent().x1 <= figure.bbox.x1  # inside the picture


def test_log_axis_ticks_read_as_plain_numbers(tmp_path: Path) -> None:
    figure = draw_convergence(_trace(), tmp_path / "a.png", title="t", subtitle="s", reported=1e-3)
    axes = figure.axes[0]
    assert axes.get_yscale() == "log"
    figure.canvas.draw()
    labels = [tick.get_text() for tick in axes.get_yticklabels() if tick.get_text()]
    labels += [tick.get_text() for tick in axes.get_yticklabels(minor=True) if tick.get_text()]
    assert labels
    assert all("10^" not in label and "times" not in label and "\\" not in label for label in labels), labels
    assert {"2", "5", "10"} <= set(labels)


def test_warm_start_trials_are_marked(tmp_path: Path) -> None:
    plain = draw_convergence(_trace(), tmp_path / "a.png", title="t", subtitle="s")
    warm = draw_convergence(_trace(warm=(0, 1, 3)), tmp_path / "b.png", title="t", subtitle="s")
    assert not any(text.startswith("warm start") for text in _texts(plain))
    assert "warm start: a source's best (2)" in _texts(warm)  # trial 3 failed: only the measured ones
    rings = next(c for c in warm.axes[0].collections if c.get_label().startswith("warm start"))
    dots = next(c for c in warm.axes[0].collections if c.get_label() == "trial")
    assert rings.get_offsets().tolist() == dots.get_offsets().tolist()[:2]  # around trials 1 and 2


def test_the_reported_time_is_drawn_and_named_apart_from_the_finalist_rounds(tmp_path: Path) -> None:
    figure = draw_convergence(_trace(), tmp_path / "a.png", title="t", subtitle="s", reported=1.3e-3)
    texts = _texts(figure)
    assert "reported time: its new baseline 1.3ms" in texts
    assert "winner in the finalist rounds 1.1ms" in texts
    assert "default in the finalist rounds 17ms" in texts


def test_the_per_parameter_view_has_a_panel_per_parameter(tmp_path: Path) -> None:
    path = tmp_path / "p.png"
    figure = draw_parameters(_trace(), path, title="t.py::test_x")
    assert path.read_bytes()[:4] == b"\x89PNG"
    assert [axes.get_xlabel() for axes in figure.axes] == ["BS", "MODE"]
    ticks = [tick.get_text() for tick in figure.axes[0].get_xticklabels()]
    assert ticks == ["1", "2", "4", "8", "16", "32", "64"]
    best = figure.axes[0].lines[0].get_ydata()
    assert best[4] == pytest.approx(1.0)  # BS=16 is the best value, in ms
    assert [t.get_text() for t in figure.legends[0].get_texts()] == [
        "trial", "best per value", "failed (1)", "winner's value (at its own time)",
    ]  # fmt: skip


def _stars(figure: Any) -> list[tuple[float, float]]:
    """The winner's star of each panel, as (x, y) in the plotted data."""
    return [
        tuple(collection.get_offsets()[0])
        for axes in figure.axes
        for collection in axes.collections
        if collection.get_label().startswith("winner's value")
    ]


@pytest.mark.parametrize(("median", "expected_ms"), [(2.4e-3, 2.4), (None, 2.0)])
def test_the_winners_star_sits_at_its_own_time_not_on_the_best_per_value(
    tmp_path: Path, median: float | None, expected_ms: float
) -> None:
    """Issue 44: the star sat on the best-per-value line (another configuration's time). The winner
    here is BS=8, MODE=a (trial 2 ms): its own time is its finalist median, else its trial's."""
    trace = _trace()
    trace = SearchTrace(
        **{
            **trace.__dict__,
            "finalists": (Finalist({"BS": 8, "MODE": "a"}, median, ("winner",)), *trace.finalists[1:]),
        }
    )
    figure = draw_parameters(trace, tmp_path / "p.png", title="t.py::test_x")
    stars = _stars(figure)
    assert stars == [
        (3, pytest.approx(expected_ms)),
        (0, pytest.approx(expected_ms)),
    ]  # BS=8 is x=3, a is x=0
    best_a = figure.axes[1].lines[0].get_ydata()[0]
    assert best_a == pytest.approx(1.0)  # the best per value of MODE=a is BS=16's 1 ms: not the star's


def test_values_are_ordered_naturally() -> None:
    assert ordered_values([8, "b", 2, 16, "a", 2, True]) == [2, 8, 16, True, "a", "b"]


def test_a_report_draws_the_per_parameter_picture_beside_the_plot(
    project: pytest.Pytester, two_tests: str
) -> None:
    project.makepyfile(test_k=two_tests)
    project.runpytest("--autotune", "--autotune-report=report").assert_outcomes(passed=2)
    folder = project.path / "report"
    names = sorted(p.name for p in folder.glob("*.png"))
    assert len(names) == 4
    assert sum(name.endswith("-params.png") for name in names) == 2
    page = (folder / "index.html").read_text()
    assert all(name in page for name in names)


def test_the_trace_marks_the_trials_a_warm_start_suggested() -> None:
    from pytest_autotune.outcome import Outcome
    from pytest_autotune.tuning.trials import TrialRecord, TuningResult

    configs = [{"BS": 8, "M": "a"}, {"BS": 16, "M": "b"}, {"BS": 4, "M": "a"}]
    history = [
        TrialRecord(i, config, Outcome("ok", 1e-3 * (i + 1)), 0.0, 0.0) for i, config in enumerate(configs)
    ]
    result = TuningResult(configs[0], 1e-3, history, {"ok": 3}, 3, 0.1, "random", 0, None)
    trace = SearchTrace.of_search(result, "s", [{"BS": 16, "M": "b"}, {"BS": 2, "M": "a"}])
    assert trace.params == ("BS", "M")
    assert trace.configs == ((8, "a"), (16, "b"), (4, "a"))
    assert trace.warm == (1,)
    assert SearchTrace.from_json(trace.to_json()) == trace
