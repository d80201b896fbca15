"""Tables for the commands: aligned columns for a terminal, or Markdown for a pull-request comment.

Cells come from a file anyone may have edited: control and bidi characters are shown escaped
(:func:`~pytest_autotune.store.document.printable`), and a Markdown code span is as long as
CommonMark needs for the backticks its text holds (a backslash in one is literal, never doubled).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from pytest_autotune.store.document import printable

__all__ = ["code_span", "markdown", "text"]


def text(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns two spaces apart, a rule under the header."""
    header = [printable(cell) for cell in header]
    rows = [[printable(cell) for cell in row] for row in rows]
    widths = [max(len(line[i]) for line in (header, *rows)) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
             for line in (header, *rows)]  # fmt: skip
    return [lines[0], "  ".join("-" * width for width in widths), *lines[1:]]


def _cell(value: str) -> str:
    return printable(value.replace("\n", " ")).replace("\\", "\\\\").replace("|", "\\|") or " "


def code_span(value: str) -> str:
    """``value`` as a code span of a GitHub-flavoured table cell: fenced by one backtick more than
    its longest run of backticks, padded by a space where it starts or ends with one (CommonMark);
    its ``|`` escaped (GFM splits cells first, even inside code spans); nothing else escaped."""
    value = printable(value.replace("\n", " "))
    fence = "`" * (max((len(run) for run in re.findall(r"`+", value)), default=0) + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}".replace("|", "\\|")


def markdown(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, code_columns: Collection[int] = ()
) -> list[str]:
    """A GitHub-flavoured Markdown table (``|`` in cells escaped); the cells of ``code_columns`` (by
    index) as code spans (:func:`code_span`)."""

    def cells(row: Sequence[str], code: Collection[int]) -> str:
        shown = (code_span(cell) if i in code else _cell(cell) for i, cell in enumerate(row))
        return "| " + " | ".join(shown) + " |"

    rule = "|" + "|".join("---" for _ in header) + "|"
    return [cells(header, ()), rule, *(cells(row, code_columns) for row in rows)]
