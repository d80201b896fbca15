"""The one way to run a benchmark: ``python -m benchmarks`` lists, ``python -m benchmarks NAME`` runs.

    python -m benchmarks                          # every benchmark, by folder, with the question it answers
    python -m benchmarks strategy --quick         # run one; the options after its name are its own
    python -m benchmarks strategy --help          # its options

A benchmark is a module in a folder of ``benchmarks/`` (the folder names the question it belongs to)
that sets ``NAME`` and ``QUESTION`` at module level and has a ``main()`` reading its options from the
command line. The listing reads those two constants from the source without importing the module,
so listing costs no heavy import and a new benchmark needs no registration.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Benchmark", "discover", "main"]

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Benchmark:
    """One runnable benchmark: its command name, the question it answers and its module."""

    name: str
    question: str
    module: str


def _constants(path: Path) -> dict[str, str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            found[node.targets[0].id] = node.value.value
    return found


def discover(root: Path = HERE) -> list[Benchmark]:
    """Every benchmark under ``root`` (a module setting ``NAME`` and ``QUESTION``), by folder."""
    found: list[Benchmark] = []
    for path in sorted(root.glob("*/*.py")):
        constants = _constants(path)
        if "NAME" in constants and "QUESTION" in constants:
            module = ".".join((root.name, *path.relative_to(root).with_suffix("").parts))
            found.append(Benchmark(constants["NAME"], constants["QUESTION"], module))
    names = [b.name for b in found]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise RuntimeError(f"benchmark names used twice: {', '.join(duplicates)}")
    return found


def _listing(benchmarks: Sequence[Benchmark]) -> str:
    width = max(len(b.name) for b in benchmarks)
    lines = ["usage: python -m benchmarks NAME [options]   (NAME --help: its options)", ""]
    folder = None
    for b in benchmarks:
        here = b.module.split(".")[1]
        if here != folder:
            folder = here
            lines.append(f"{folder}/")
        lines.append(f"  {b.name:{width}}  {b.question}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """List the benchmarks, or run the one named first with the remaining arguments."""
    args = list(sys.argv[1:] if argv is None else argv)
    benchmarks = discover()
    if not args or args[0] in ("-h", "--help", "list"):
        print(_listing(benchmarks))
        return 0
    by_name = {b.name: b for b in benchmarks}
    if args[0] not in by_name:
        print(f"no benchmark named {args[0]!r}\n\n{_listing(benchmarks)}", file=sys.stderr)
        return 2
    chosen = by_name[args[0]]
    sys.argv = [f"python -m benchmarks {chosen.name}", *args[1:]]
    result = importlib.import_module(chosen.module).main()
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
