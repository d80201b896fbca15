"""What a crashed or hung worker printed, cut down to the part that explains the failure.

When a worker dies, the end of its output (a Python traceback, faulthandler's dump of a segfault,
a driver's message) is the only account of why, so the parent quotes it in the trial's failure.
Quoted whole it would be mostly noise: frames of pytest, pluggy and this package around the test
body, faulthandler's list of extension modules, the stacks of other threads. :func:`output_excerpt`
drops those and keeps the text short enough for a test report, cutting in the middle so that both
the start (what ran) and the end (how it died) stay.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

__all__ = ["OUTPUT_LIMIT", "log_size", "output_excerpt", "output_since"]

#: Characters of the worker's output kept in a failure's detail.
OUTPUT_LIMIT: Final = 1500
#: Bytes read from each end of the output since a request: a body that printed gigabytes must not
#: take the parent's memory (the excerpt keeps far less).
READ_LIMIT: Final = 1024 * 1024

# Traceback lines of the machinery around the body (pytest, pluggy, this package, runpy), and
# faulthandler's list of extension modules: dropped from the output quoted in a failure.
_NOISE: Final = re.compile(
    r'File "(<frozen [^>]*>|[^"]*[/\\](_pytest|pluggy|pytest_autotune|pytest)[/\\][^"]*)"'
    r"|^Extension modules:"
)


def _informative_lines(text: str) -> list[str]:
    kept: list[str] = []
    other_thread = False
    for line in text.splitlines():
        if line.startswith("Thread 0x"):  # faulthandler's dump of a thread other than the crashing one
            other_thread = True
        elif not line.strip():
            other_thread = False
        if not other_thread and not _NOISE.search(line):
            kept.append(line)
    return kept


def output_excerpt(text: str) -> str:
    """The informative part of a worker's output: machinery frames dropped, long text cut in the middle."""
    kept = re.sub(r"\n{3,}", "\n\n", "\n".join(_informative_lines(text))).strip()
    if len(kept) <= OUTPUT_LIMIT:
        return kept
    half = OUTPUT_LIMIT // 2
    return f"{kept[:half]}\n[...]\n{kept[-half:]}"


def output_since(log: Path | None, offset: int) -> str:
    """The excerpt of what the worker wrote to ``log`` after byte ``offset`` (empty without a log)."""
    if log is None:
        return ""
    try:
        with open(log, "rb") as handle:
            end = handle.seek(0, 2)
            handle.seek(offset)
            data = handle.read(READ_LIMIT)
            if end - offset > 2 * READ_LIMIT:
                handle.seek(end - READ_LIMIT)
                data += b"\n[...]\n"
            data += handle.read(READ_LIMIT)
    except OSError:
        return ""
    return output_excerpt(data.decode("utf-8", errors="replace"))


def log_size(log: Path | None) -> int:
    """The size of ``log`` in bytes now: where the output of the next request starts."""
    try:
        return log.stat().st_size if log is not None else 0
    except OSError:
        return 0
