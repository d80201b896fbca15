"""Whose ``index.html`` is it: the report writes only into a folder whose page it wrote itself.

``--autotune-report=DIR`` writes ``DIR/index.html``; a folder may already hold a page of the
project (a symbolic link to a site folder, the rootdir after a mistyped option), and replacing it
loses the user's file. So the page the report writes carries a marker, :data:`GENERATOR` (a
``<meta name="generator">`` tag in its head), and an existing ``index.html`` is replaced only when
it carries it (or starts as the pages written before the marker existed did). The check runs at
start-up (:mod:`pytest_autotune.plugin.options`, a usage error before any tuning) and again just
before writing (:mod:`pytest_autotune.plugin.report.formats.pictures`), since the folder may change during a
long run. The page is read through :mod:`pytest_autotune.input_file`: a FIFO or device named
``index.html`` is refused, never read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from pytest_autotune.input_file import InputFileError, read_head

__all__ = ["GENERATOR", "INDEX", "foreign_index"]

#: Name of the page in the report folder.
INDEX: Final = "index.html"
#: The tag that marks a page as the report's own (in its ``<head>``).
GENERATOR: Final = '<meta name="generator" content="pytest-autotune">'
#: How pages written before :data:`GENERATOR` existed began (still the report's own).
_LEGACY_START: Final = (
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n<title>pytest-autotune</title>'
)
#: Bytes of an existing page read to find the marker (it stands in the first lines).
_HEAD_BYTES: Final = 64 * 1024


def foreign_index(directory: Path) -> str | None:
    """Why ``directory/index.html`` must not be replaced (a sentence naming it), or None when it is
    absent or the report's own page."""
    index = directory / INDEX
    if index.is_symlink():
        return f"{index} is a symbolic link; the report does not write through it"
    try:
        head = read_head(index, _HEAD_BYTES)
    except FileNotFoundError:
        return None
    except InputFileError as exc:
        return str(exc)
    except OSError as exc:
        return f"{index} cannot be read ({exc.strerror or exc})"
    text = head.decode("utf-8", errors="replace")
    if GENERATOR in text or text.startswith(_LEGACY_START):
        return None
    return (
        f"{index} exists and was not written by pytest-autotune; it was left as it was "
        "(choose an empty or new folder for the report, or remove the page)"
    )
