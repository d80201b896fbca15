"""The built-in report formats, in the order they write and the summary names their outcomes.

The plugin's own ``pytest_autotune_reporters`` hook implementation returns :func:`built_in_reporters`;
a new built-in format adds its class to :data:`BUILT_IN` (a third party implements the hook in its
own ``conftest.py`` or plugin instead). The order is the summary's: the JSON and Markdown errors come
before the HTML report's line, as they always did.
"""

from __future__ import annotations

from typing import Final

from pytest_autotune.plugin.report.formats.benchmark_json import BenchmarkJson
from pytest_autotune.plugin.report.formats.markdown import MarkdownSummary
from pytest_autotune.plugin.report.formats.pictures import HtmlReport
from pytest_autotune.plugin.report.formats.reporter import Reporter
from pytest_autotune.plugin.report.formats.terminal import TerminalSummary

__all__ = ["BUILT_IN", "built_in_reporters"]

#: The built-in formats' classes, in order.
BUILT_IN: Final[tuple[type[Reporter], ...]] = (
    TerminalSummary,
    BenchmarkJson,
    MarkdownSummary,
    HtmlReport,
)


def built_in_reporters() -> list[Reporter]:
    """One instance of each built-in format."""
    return [reporter() for reporter in BUILT_IN]
