"""Tables for the commands: aligned columns for a terminal, or Markdown for a pull-request comment."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["markdown", "text"]


def text(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns two spaces apart, a rule under the header."""
    widths = [max(len(line[i]) for line in (header, *rows)) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
             for line in (header, *rows)]  # fmt: skip
    return [lines[0], "  ".join("-" * width for width in widths), *lines[1:]]


def _cell(value: str) -> str:
    return value.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ") or " "


def markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A GitHub-flavoured Markdown table (``|`` in cells escaped)."""
    return [
        "| " + " | ".join(_cell(cell) for cell in header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows),
    ]
