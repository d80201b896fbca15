"""``--autotune-report=DIR``: a convergence plot per tuned test and an ``index.html`` that links them.

Written once, at the end of the session, by the process that reports (the single process or the
xdist controller), from the results that arrived on the test reports: each tuned test's trials
travel in its result (:mod:`pytest_autotune.plugin.report.search_trace`), so tests tuned on xdist workers
are drawn like the others. The page holds the summary table (test, device, state, time, speedup
over the default, trials per label, metrics, configuration) with each test's plot below it; the
plots are PNG files beside it, so the folder can be kept as a CI artefact and opened as it is.
"""

from __future__ import annotations

import html
import re
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pytest_autotune.plugin.report.formats.reporter import ReportContext, Reporter, ReportOutcome
from pytest_autotune.plugin.report.search_trace import SearchTrace
from pytest_autotune.plugin.report.summary_text import (
    counts_text,
    format_value,
    metrics_text,
    speedup_text,
    tuned_time_text,
)
from pytest_autotune.plugin.report.target import GENERATOR, INDEX, foreign_index

if TYPE_CHECKING:
    from pytest_autotune.plugin.report.results import AutotuneResult

__all__ = ["INDEX", "HtmlReport", "parameters_name", "picture_name", "write_report"]

_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_.-]+")

_STYLE: Final = """
body { font-family: sans-serif; margin: 1.5em; }
table { border-collapse: collapse; font-size: 90%; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
code { font-size: 95%; }
.failed { color: #b00; }
img { max-width: 100%; border: 1px solid #ddd; }
"""


def picture_name(result: AutotuneResult) -> str:
    """A file name for the plot of ``result``: its node id made safe, and a hash of node id and
    device (the same test may be tuned on two devices in one run)."""
    digest = zlib.crc32(f"{result.device}\n{result.nodeid}".encode())
    return f"{_UNSAFE.sub('_', result.nodeid)[:80]}-{digest:08x}.png"


def _subtitle(result: AutotuneResult) -> str:
    """Two lines: the search (device, trials, strategy), and what it chose."""
    tuning = result.tuning or {}
    search = [result.device, f"{tuning.get('trials', 0)} trials ({counts_text(tuning.get('counts'))})"]
    if tuning.get("strategy"):
        search.append(f"strategy {tuning['strategy']}")
    if result.state == "tuned":
        median = (result.stats or {}).get("median")
        chosen = [f"chosen {result.config}: {tuned_time_text(median, result.search, result.unit)}"]
    else:
        chosen = ["tuning failed"]
    if result.speedup:
        chosen.append(f"{speedup_text(result.speedup, result.speedup_at_least)} vs default")
    return ", ".join(search) + "\n" + ", ".join(chosen)


def _draw(directory: Path, result: AutotuneResult) -> str | None:
    """Draw the plot of ``result`` when it carries its trials; its file name, or None."""
    search = result.search or {}
    if not search.get("trials"):
        return None
    from pytest_autotune.plugin.report.params import draw_parameters
    from pytest_autotune.plugin.report.plot import draw_convergence

    name = picture_name(result)
    trace = SearchTrace.from_json(search)
    reported = (result.stats or {}).get("median") if result.state == "tuned" else None
    draw_convergence(
        trace, directory / name, title=result.nodeid, subtitle=_subtitle(result), reported=reported
    )
    if trace.params and trace.configs:
        draw_parameters(
            trace, directory / parameters_name(name), title=f"{result.nodeid}: {_subtitle(result)}"
        )
    return name


def parameters_name(picture: str) -> str:
    """The file name of the per-parameter picture beside the convergence plot ``picture``."""
    return picture.removesuffix(".png") + "-params.png"


def _cell(text: str, css: str = "") -> str:
    attribute = f' class="{css}"' if css else ""
    return f"<td{attribute}>{html.escape(text)}</td>"


def _row(result: AutotuneResult, picture: str | None) -> str:
    tuning = result.tuning or {}
    median = (result.stats or {}).get("median")
    shown = (
        tuned_time_text(median, result.search, result.unit)
        if result.state == "tuned"
        else format_value(median, result.unit)
    )
    test = (
        f'<a href="#{html.escape(picture)}">{html.escape(result.nodeid)}</a>'
        if picture
        else html.escape(result.nodeid)
    )
    failed = result.state in ("tune-failed", "regression")
    return (
        "<tr>"
        + "".join(
            [
                f"<td>{test}</td>",
                _cell(result.device),
                _cell(result.state, "failed" if failed else ""),
                _cell(shown),
                _cell(speedup_text(result.speedup, result.speedup_at_least) or "-"),
                _cell(f"{tuning['trials']} ({counts_text(tuning.get('counts'))})" if tuning else "-"),
                _cell(metrics_text(result.metrics) or "-"),
                f"<td><code>{html.escape(str(result.config))}</code></td>",
            ]
        )
        + "</tr>"
    )


def _figure(directory: Path, result: AutotuneResult, name: str) -> str:
    test, device, link = (html.escape(text) for text in (result.nodeid, result.device, name))
    parts = [
        f'<h2 id="{link}">{test} <small>({device})</small></h2>',
        f'<img src="{link}" alt="convergence plot of {test}">',
    ]
    if (directory / parameters_name(name)).is_file():
        second = html.escape(parameters_name(name))
        parts.append(f'<img src="{second}" alt="time against each parameter of {test}">')
    return "\n".join(parts)


def write_report(directory: Path, results: Sequence[AutotuneResult], *, title: str) -> Path:
    """Write the plots and ``index.html`` into ``directory``; returns the page's path.

    Raises ``FileExistsError`` (before writing anything) when the folder holds an ``index.html``
    the report did not write (:func:`~pytest_autotune.plugin.report.target.foreign_index`).
    """
    refusal = foreign_index(directory)
    if refusal is not None:
        raise FileExistsError(refusal)
    directory.mkdir(parents=True, exist_ok=True)
    pictures = {id(result): _draw(directory, result) for result in results}
    header = ["test", "device", "state", "time", "vs default", "trials", "metrics", "configuration"]
    rows = [_row(result, pictures[id(result)]) for result in results]
    figures = [
        _figure(directory, result, name) for result in results if (name := pictures[id(result)]) is not None
    ]
    page = "\n".join(
        [
            "<!DOCTYPE html>",
            f'<html lang="en"><head><meta charset="utf-8">{GENERATOR}',
            f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
            f"<h1>{html.escape(title)}</h1>",
            "<p>Time: the chosen configuration's new baseline, measured after the choice, what plain "
            "runs are checked against (the gold bar in each plot). The best trial was one short "
            "measurement, the fastest of many, and may read lower or higher. 'vs default' compares the "
            "winner and the declared default in the same interleaved finalist rounds (the star and the "
            "dashed line).</p>",
            "<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in header) + "</tr></thead><tbody>",
            *rows,
            "</tbody></table>",
            *figures,
            "</body></html>",
        ]
    )
    index = directory / INDEX
    index.write_text(page + "\n", encoding="utf-8")
    return index


class HtmlReport(Reporter):
    """The folder of ``--autotune-report``: the page and its plots. A failed write is shown in the
    summary but does not fail the run (the results and the store are not at stake)."""

    name = "html"
    fails_run = False

    def enabled(self, context: ReportContext) -> bool:
        """Asked for by ``--autotune-report`` (or its ini key or environment variable)."""
        return context.settings.report_dir is not None

    def write(self, results: Sequence[AutotuneResult], context: ReportContext) -> ReportOutcome:
        """Write the page and the plots; the summary names the page (or why it could not be written)."""
        directory = context.settings.report_dir
        assert directory is not None
        try:
            page = write_report(directory, results, title="pytest-autotune")
        except OSError as exc:
            return ReportOutcome(error=f"--autotune-report: cannot write {directory} ({exc})")
        return ReportOutcome(written=page, message=f"report: {page}")
