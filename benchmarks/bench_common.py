"""Shared pieces of the benchmark commands: where the replay datasets are, and loading them once."""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

from pytest_autotune.replay import Replay

__all__ = ["DATASETS", "OUT", "format_table", "load_listing", "replay", "short_name"]

#: Exhaustively measured Kernel Tuner caches (override with AUTOTUNE_DATASETS).
DATASETS = Path(
    os.environ.get("AUTOTUNE_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets")
)
#: Where benchmarks write their JSON, plots and caches (git-ignored).
OUT = Path(__file__).resolve().parent / "out"


def load_listing(datasets: Path = DATASETS) -> list[dict[str, Any]]:
    """The space descriptions of ``spaces.json``."""
    path = datasets / "spaces.json"
    if not path.exists():
        raise SystemExit(f"{path} not found: set AUTOTUNE_DATASETS or pass --datasets")
    listing: list[dict[str, Any]] = json.loads(path.read_text())
    return listing


def format_table(header: list[str], rows: list[list[str]]) -> str:
    """A plain-text table: the header, a rule, then the rows, columns left-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line, "-" * len(line)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)


def short_name(file_name: str) -> str:
    """``gemm__RTX_3090.json.gz`` -> ``gemm__RTX_3090``."""
    return file_name.split(".json")[0]


@cache
def replay(datasets: str, file_name: str) -> Replay:
    """The replay of one dataset, loaded once per process."""
    return Replay.from_spaces_json(Path(datasets) / "spaces.json", file_name)
