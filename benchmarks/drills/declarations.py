"""Bad-input drills of the declaration area: ``@tunable``/``@constraint`` declarations a user can get
wrong (empty ranges, unknown names, cycles, empty spaces, values ``autotune.json`` cannot store,
bad defaults, a ``where=`` that raises or returns a non-boolean, bad policy keywords, launch
geometries with sizes of 0, four dimensions, a block-size name twice or a size worth infinity, Kernel
Tuner keywords given as lists, tuples, strings or callables, and a problem size written as a name).

Each drill writes a test module with one wrong declaration and runs ``pytest --collect-only`` on it
in a subprocess. A row passes when collection fails (nothing is tuned or run) and the output names
the test file and the parameter, constraint or keyword at fault, plus the test function itself
wherever the error is raised by ``@tunable`` (a parameter constructor such as ``Interval(5, 1)``
raises before ``@tunable`` runs: there the output shows the offending ``NAME=...`` source line).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks.drills.bad_input_kit import Drill, Observation
from benchmarks.drills.faults_kit import run_pytest

__all__ = ["DRILLS"]

HEADER = """
import math
from pytest_autotune import Bool, Categorical, Interval, Permutation, Pow2, Real, Set, constraint, tunable
from pytest_autotune import Geometry
"""


def _error_line(output: str) -> str:
    """The last ``E   module.Error: message`` line of pytest's output, without the module path."""
    lines = [line for line in output.splitlines() if line.startswith("E   ")]
    line = lines[-1][4:] if lines else (output.strip().splitlines() or ["(no output)"])[-1]
    return re.sub(r"^[\w.]+\.(\w+(Error|Exception))", r"\1", line)


def _collect_fails(source: str, needles: Sequence[str]) -> Callable[[Path], Observation]:
    """Collection of ``source`` must fail with every one of ``needles`` in the output."""

    def run(path: Path) -> Observation:
        (path / "pytest.ini").write_text("[pytest]\n")
        (path / "test_k.py").write_text(HEADER + source)
        result = run_pytest(path, "--collect-only", "-p", "no:cacheprovider", timeout=60)
        output = result.stdout + result.stderr
        missing = [n for n in needles if n not in output]
        ok = result.returncode != 0 and "ERROR collecting test_k.py" in output and not missing
        observed = _error_line(output)
        if missing:
            observed += f" | missing from the output: {missing}"
        return Observation(observed, passed=ok)

    return run


def _case(name: str, source: str, *needles: str, expected: str = "") -> Drill:
    return Drill(
        "declaration",
        name,
        expected or "collection fails naming test and parameter",
        _collect_fails(source, needles),
    )


T = "test_k.test_drilled"  # how @tunable names the test
BODY = "def test_drilled(autotune):\n    autotune.measure(lambda: None)\n"

DRILLS: list[Drill] = [
    _case(
        "empty Interval(5, 1)",
        f"@tunable(X=Interval(5, 1))\n{BODY}",
        "X=Interval(5, 1)",
        "Interval(5, 1): empty range",
        expected="collection fails at the X=... line: empty range",
    ),
    _case(
        "Pow2(5, 7): no power of two",
        f"@tunable(Y=Pow2(5, 7))\n{BODY}",
        "Y=Pow2(5, 7)",
        "Pow2(5, 7)",
        expected="collection fails at the Y=... line",
    ),
    _case(
        "Real(1.0, 1.0): empty",
        f"@tunable(R=Real(1.0, 1.0))\n{BODY}",
        "R=Real(1.0, 1.0)",
        expected="collection fails at the R=... line",
    ),
    _case(
        "Permutation with a duplicate item",
        f"@tunable(P=Permutation(['i', 'j', 'i']))\n{BODY}",
        "P=Permutation",
        "duplicate items",
        expected="collection fails at the P=... line: duplicate items",
    ),
    _case(
        "unknown name in where=",
        f"@tunable(WPT=Interval(1, 8), LS=Interval(1, 8, where=lambda WPTT, LS: LS <= WPTT))\n{BODY}",
        f"@tunable on {T}: where= of parameter 'LS': reads unknown parameter 'WPTT'",
    ),
    _case(
        "where= cycle A -> B -> A",
        "@tunable(A=Interval(1, 4, where=lambda A, B: A <= B), B=Interval(1, 4, where=lambda A, B: B <= A))\n"
        + BODY,
        f"@tunable on {T}: constraint cycle between parameters: A -> B -> A",
    ),
    _case(
        "no valid configuration",
        f"@tunable(X=Interval(1, 100, where=lambda X: X > 500))\n{BODY}",
        f"@tunable on {T}:",
        "EmptySpaceError",
        "'X'",
    ),
    _case(
        "no valid configuration (@constraint)",
        f"@constraint(lambda X, Y: X + Y > 100)\n@tunable(X=Interval(1, 8), Y=Interval(1, 8))\n{BODY}",
        f"@tunable on {T}:",
        "EmptySpaceError",
    ),
    _case(
        "Categorical('a', b'x'): bytes",
        f"@tunable(MODE=Categorical('a', b'x'))\n{BODY}",
        "MODE=Categorical('a', b'x')",
        "value b'x' cannot be stored in autotune.json",
        expected="collection fails at the MODE=... line naming the value",
    ),
    _case(
        "Categorical(object())",
        f"@tunable(MODE=Categorical('a', object()))\n{BODY}",
        "MODE=Categorical('a', object())",
        "cannot be stored in autotune.json (JSON cannot store 'object' values)",
        expected="collection fails at the MODE=... line naming the value",
    ),
    _case(
        "Categorical with NaN",
        f"@tunable(F=Categorical(1.0, float('nan')))\n{BODY}",
        "F=Categorical(1.0, float('nan'))",
        "value nan cannot be stored",
        expected="collection fails at the F=... line naming the value",
    ),
    _case(
        "Categorical of a set / nested tuple",
        f"@tunable(S=Categorical((1, (2, 3)), frozenset({{1}})))\n{BODY}",
        "S=Categorical(",
        "value (1, (2, 3)) cannot be stored",
        expected="collection fails at the S=... line naming the value",
    ),
    _case(
        "default outside the range",
        f"@tunable(X=Interval(1, 8, default=9))\n{BODY}",
        "X=Interval(1, 8, default=9)",
        "default 9 is not in its domain",
        expected="collection fails at the X=... line naming the default",
    ),
    _case(
        "default violating where=",
        f"@tunable(X=Interval(1, 8, where=lambda X: X % 2 == 0, default=3))\n{BODY}",
        f"@tunable on {T}: the declared defaults {{'X': 3}} violate the constraints",
    ),
    _case(
        "same parameter object twice",
        f"P = Interval(1, 8)\n\n\n@tunable(A=P, B=P)\n{BODY}",
        f"@tunable on {T}: parameter 'B': this Interval object is already used as parameter 'A'",
    ),
    _case(
        "@tunable applied twice",
        f"@tunable(A=Interval(1, 4))\n@tunable(A=Interval(1, 4))\n{BODY}",
        f"@tunable applied twice to {T}",
    ),
    _case(
        "policy keyword as a parameter name",
        f"@tunable(budget=Interval(1, 4))\n{BODY}",
        f"@tunable on {T}: 'budget' is a policy keyword and cannot name a parameter",
        expected="collection fails naming test and keyword",
    ),
    _case(
        "misspelt keyword bugdet=10",
        f"@tunable(X=Interval(1, 4), bugdet=10)\n{BODY}",
        f"@tunable on {T}: keyword bugdet=10 is neither a parameter kind",
        expected="collection fails naming test and keyword",
    ),
    _case(
        "a single value instead of a list (X=7)",
        f"@tunable(X=7)\n{BODY}",
        f"@tunable on {T}: keyword X=7 is neither a parameter kind",
        "write X=[7] or X=Set(7)",
        expected="collection fails naming test and keyword, showing the accepted spelling",
    ),
    _case(
        "Set((16, 32)): one tuple",
        f"@tunable(X=Set((16, 32)))\n{BODY}",
        "X=Set((16, 32))",
        "write Set(16, 32) or Set([16, 32])",
        expected="collection fails at the X=... line, showing the accepted spellings",
    ),
    _case(
        "dict-style callable reading an unknown key",
        f"@tunable(X=[1, 2], restrictions=[lambda p: p['Y'] > 1])\n{BODY}",
        f"@tunable on {T}:",
        "reads unknown parameter 'Y' (as p['Y']",
    ),
    _case(
        "@constraint with a Kernel Tuner (fn, names) tuple",
        f"@constraint((lambda X: X > 1, ['X']))\n@tunable(X=[1, 2])\n{BODY}",
        "is not a condition; write a restriction string",
        expected="collection fails showing the accepted spellings",
    ),
    _case(
        "block_size_names naming no parameter",
        f"@tunable(X=[1, 2], block_size_names=['BX'])\n{BODY}",
        f"@tunable on {T}: block_size_names: 'BX' is not a parameter",
    ),
    _case(
        "where= that raises",
        f"@tunable(X=Interval(1, 8, where=lambda X: 12 // (X - 3) > 1))\n{BODY}",
        f"@tunable on {T}: where= of parameter 'X' raised ZeroDivisionError",
    ),
    _case(
        "where= returning a non-boolean",
        f"@tunable(X=Interval(1, 8, where=lambda X: X % 2))\n{BODY}",
        f"@tunable on {T}: where= of parameter 'X' returned",
        "not a boolean",
    ),
    _case(
        "@constraint string with an unknown name",
        f"@constraint('X % Y == 0')\n@tunable(X=Interval(1, 8))\n{BODY}",
        f"@tunable on {T}: constraint 'X % Y == 0': unknown name 'Y'",
    ),
    _case(
        "budget='forever'",
        f"@tunable(X=Interval(1, 4), budget='forever')\n{BODY}",
        f"@tunable on {T}",
        "budget",
        "'forever'",
        expected="collection fails naming test and budget",
    ),
    _case(
        "budget=-5",
        f"@tunable(X=Interval(1, 4), budget=-5)\n{BODY}",
        f"@tunable on {T}",
        "budget",
        expected="collection fails naming test and budget",
    ),
    _case(
        "strategy='magic'",
        f"@tunable(X=Interval(1, 4), strategy='magic')\n{BODY}",
        f"@tunable on {T}",
        "'magic'",
        expected="collection fails naming test and strategy",
    ),
    *(
        _case(
            f"Geometry: {label}",
            f"@tunable(BX=Pow2(1, 64), geometry=Geometry({args}))\n{BODY}",
            f"geometry=Geometry({args})",  # the line at fault (Geometry raises before @tunable runs)
            message,
            expected="collection fails at the geometry=... line, naming the mistake",
        )
        for label, args, message in [
            ("problem size 0", "0", "problem_size=0; expected a whole number >= 1"),
            ("negative problem size", "-4096", "problem_size=-4096; expected a whole number >= 1"),
            ("4-D problem size", "(8, 8, 8, 8)", "has 4 dimensions; expected 1 to 3"),
            ("block_size_names twice", "64, block_size_names=['BX', 'BX']", "names a parameter twice"),
            ("grid divisor 0", "64, grid_div_x=0", "grid_div_x: 0 must be a finite number > 0"),
        ]
    ),
    _case(
        "Geometry: problem size '1e400'",
        f"@tunable(BX=Pow2(1, 64), geometry=Geometry('1e400', block_size_names=['BX']))\n{BODY}",
        f"@tunable on {T}: Geometry: problem_size '1e400' gave inf",
        expected="collection fails naming test and the geometry's mistake",
    ),
    # -- issue 44, a new user's hour (wave4-user): Kernel Tuner keywords of any type, geometry strings --
    *(
        _case(
            f"Kernel Tuner keyword {keyword}={value}",
            f"@tunable(BX=Pow2(1, 64), {keyword}={value})\n{BODY}",
            f"@tunable on {T}: keyword {keyword}=",
            "does not belong on @tunable",
            hint,
            expected="collection fails naming test and keyword, with where it belongs (never a parameter)",
        )
        for keyword, value, hint in [
            ("grid_div_x", "['BX', 'tile_x']", "geometry=Geometry(grid_div_x=...)"),
            ("grid_div_y", "('BX',)", "geometry=Geometry(grid_div_y=...)"),
            (
                "compiler_options",
                "['-cl-fast-relaxed-math']",
                "autotune.build(context, source, options=[...])",
            ),
            ("answer", "[None, None]", "assert"),
            ("verify", "lambda a, b, atol=None: True", "assert"),
            ("iterations", "[7]", "repeat=N"),
            ("lang", "'CUDA'", "fixture"),
            ("smem_args", "{'sh': 4096}", "geometry=Geometry(local_memory=...)"),
            ("cmem_args", "{'c': [1, 2]}", "constant-memory"),
        ]
    ),
    _case(
        "Geometry: problem_size='n' (a name, not a number)",
        f"@tunable(BX=Pow2(1, 64), geometry=Geometry('n', block_size_names=['BX']))\n{BODY}",
        f"@tunable on {T}: Geometry problem_size='n': unknown name 'n'",
        "give a size of your own as a number",
        expected="collection fails naming test and problem_size (not a 'constraint')",
    ),
]
