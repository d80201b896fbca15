"""``python -m pytest_autotune show|diff|export``: read ``autotune.json`` outside a test run.

As ``pytest-benchmark list/compare`` read stored results: :mod:`~pytest_autotune.commands.show`
prints what the store holds, :mod:`~pytest_autotune.commands.diff` what changed in it since a git
ref (a reviewer's view of a pull request that re-tunes kernels, ``--md`` for its comment),
:mod:`~pytest_autotune.commands.export` what an application ships (a C header, a minimal store). All
read the store through :mod:`pytest_autotune.store` only; they never import pytest or the plugin,
and never write it. ``__main__`` dispatches here; ``merge`` stays with :mod:`pytest_autotune.recovery`.
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
COMMANDS: Final = ("show", "diff", "export")


#: ``python -m pytest_autotune`` without a command, or with ``--help``: every command, ``merge`` included.
OVERVIEW: Final = """usage: python -m pytest_autotune COMMAND ...

commands:
  show [--device D] [TEST ...]   print what autotune.json holds
  diff REF [--md]                what changed in autotune.json since a git ref
  export --kernel K [--format F] a C header or a minimal store for an application to ship
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
    export = commands.add_parser("export", help="a C/C++ header or a minimal store for an application")
    export.add_argument(
        "--kernel", action="append", required=True, help="a kernel name (or test id); repeat for several"
    )
    export.add_argument("--format", choices=("json", "header"), default="json", help="default: json")
    export.add_argument(
        "--key", action="append", default=[], metavar="NAME=VALUE", help="header: the problem size"
    )
    export.add_argument("--fallback", metavar="DEVICE", help="header: the device whose block is the #else")
    export.add_argument("-o", "--output", type=Path, help="write here (default: standard output)")
    for sub in (show, diff, export):
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
        elif args.command == "export":
            return _export(args)
        else:
            from pytest_autotune.commands.diff import diff

            lines = diff(args.file, args.ref, as_markdown=args.md)
    except CommandError as exc:  # messages quote ids and paths: shown escaped, as every line is
        print(f"pytest-autotune {args.command}: {printable(str(exc))}", file=sys.stderr)
        return 1
    print("\n".join(printable(line) for line in lines))
    return 0


def _export(args: argparse.Namespace) -> int:
    from pytest_autotune.commands.export import export_header, export_json, parse_key

    if args.format == "header":
        if len(args.kernel) != 1:
            raise CommandError("--format header writes one kernel; give one --kernel")
        text = export_header(args.file, args.kernel[0], key=parse_key(args.key), fallback=args.fallback)
    else:
        if args.key or args.fallback:
            raise CommandError("--key and --fallback are for --format header")
        text = export_json(args.file, args.kernel)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    if args.output.resolve() == args.file.resolve():
        raise CommandError(f"--output {args.output} is the store read; write the export elsewhere")
    args.output.write_text(text, encoding="utf-8")
    print(f"{args.output}: {args.format} of {', '.join(args.kernel)} written", file=sys.stderr)
    return 0
