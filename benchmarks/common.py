"""Shared pieces of the benchmark commands: where the repository and the replay datasets are, loading
a replay once, and the table printer.

Only the standard library is imported here (the replay module when a replay is loaded): benchmarks
that measure a fresh interpreter's imports and memory (``space_bench``'s workers) import it too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_autotune.replay import Replay

__all__ = [
    "DATASETS",
    "OUT",
    "REPLAY_DATA",
    "ROOT",
    "format_table",
    "load_listing",
    "replay",
    "short_name",
]

#: The repository root: ``python -m benchmarks NAME`` runs from here.
ROOT = Path(__file__).resolve().parent.parent
#: The replayed GPU spaces shipped with the repository: exhaustively measured Kernel Tuner caches and
#: their ``spaces.json`` (see ``benchmarks/data/replay/README.md``).
REPLAY_DATA = Path(__file__).resolve().parent / "data" / "replay"
#: Where the benchmarks read the replayed spaces from: :data:`REPLAY_DATA`, or AUTOTUNE_DATASETS.
DATASETS = Path(os.environ.get("AUTOTUNE_DATASETS") or REPLAY_DATA)
#: Where benchmarks write their JSON, plots and caches (git-ignored).
OUT = Path(__file__).resolve().parent / "out"


def load_listing(datasets: Path = DATASETS) -> list[dict[str, Any]]:
    """The space descriptions of ``spaces.json``."""
    path = datasets / "spaces.json"
    if not path.exists():
        raise SystemExit(f"{path} not found: set AUTOTUNE_DATASETS or pass --datasets")
    listing: list[dict[str, Any]] = json.loads(path.read_text())
    return listing


def format_table(
    header: Sequence[object],
    rows: Iterable[Sequence[object]],
    *,
    align: str = "",
    sep: str = "  ",
    title: str | None = None,
) -> str:
    """A plain-text table: an optional title, the header, a rule, then the rows.

    Cells are ``str()``-ed. ``align`` gives one letter per column, ``l`` (left, the default for
    columns it does not cover) or ``r`` (right); ``sep`` goes between columns (``" | "`` draws
    the rule with ``-+-`` at the column borders). Trailing spaces are dropped.
    """
    cells = [[str(c) for c in header], *([str(c) for c in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    sides = align.ljust(len(widths), "l")[: len(widths)]

    def line(row: list[str]) -> str:
        parts = [
            c.rjust(w) if side == "r" else c.ljust(w) for c, w, side in zip(row, widths, sides, strict=True)
        ]
        return sep.join(parts).rstrip()

    rule_sep = sep.replace(" ", "-").replace("|", "+")
    out = [] if title is None else [title]
    out += [line(cells[0]), rule_sep.join("-" * w for w in widths)]
    out += [line(row) for row in cells[1:]]
    return "\n".join(out)


def short_name(file_name: str) -> str:
    """``gemm__RTX_3090.json.gz`` -> ``gemm__RTX_3090``."""
    return file_name.split(".json")[0]


@cache
def replay(datasets: str, file_name: str) -> Replay:
    """The replay of one dataset, loaded once per process."""
    from pytest_autotune.replay import Replay

    return Replay.from_spaces_json(Path(datasets) / "spaces.json", file_name)
