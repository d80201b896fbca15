"""``python -m pytest_autotune show|diff``: read ``autotune.json`` outside a test run.

As ``pytest-benchmark list/compare`` read stored results: :mod:`~pytest_autotune.commands.show`
prints what the store holds, :mod:`~pytest_autotune.commands.diff` what changed in it since a git
ref (a reviewer's view of a pull request that re-tunes kernels, ``--md`` for its comment). Both
read the store through :mod:`pytest_autotune.store` only; they never import pytest or the plugin,
and never write. ``__main__`` dispatches here; ``merge`` stays with :mod:`pytest_autotune.recovery`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from pytest_autotune.commands.errors import CommandError
from pytest_autotune.store.document import printable

__all__ = ["COMMANDS", "OVERVIEW", "main"]

#: The subcommands this package runs.
COMMANDS: Final = ("show", "diff")


#: ``python -m pytest_autotune`` without a command, or with ``--help``: every command, ``merge`` included.
OVERVIEW: Final = """usage: python -m pytest_autotune COMMAND ...

commands:
  show [--device D] [TEST ...]   print what autotune.json holds
  diff REF [--md]                what changed in autotune.json since a git ref
  merge RECOVERY [--into STORE]  merge a recovery file into autotune.json

python -m pytest_autotune COMMAND --help describes each one."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pytest_autotune", description="read autotune.json")
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("show", help="print what autotune.json holds")
    show.add_argument("tests", nargs="*", metavar="TEST", help="node ids, or parts of them (default: all)")
    show.add_argument("--device", help="only this device key (default: every device)")
    diff = commands.add_parser("diff", help="what changed in autotune.json since a git ref")
    diff.add_argument("ref", metavar="REF", help="a commit, branch or tag (e.g. main, HEAD~1)")
    diff.add_argument("--md", action="store_true", help="a Markdown table (for a pull-request comment)")
    for sub in (show, diff):
        sub.add_argument(
            "--file", type=Path, default=Path("autotune.json"), help="the store (default: ./autotune.json)"
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``show`` or ``diff`` (``argv`` without the program name); the exit status."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "show":
            from pytest_autotune.commands.show import show

            lines = show(args.file, device=args.device, tests=args.tests)
        else:
            from pytest_autotune.commands.diff import diff

            lines = diff(args.file, args.ref, as_markdown=args.md)
    except CommandError as exc:  # messages quote ids and paths: shown escaped, as every line is
        print(f"pytest-autotune {args.command}: {printable(str(exc))}", file=sys.stderr)
        return 1
    print("\n".join(printable(line) for line in lines))
    return 0
