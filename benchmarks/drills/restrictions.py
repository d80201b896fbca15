"""Bad-input drills of the restriction-string area: sandbox escapes and denial-of-service strings.

Each hostile string tries to create a marker file (or to hang the loader). It goes in through the
two ways a string reaches the space builder: ``@constraint("...")`` in a real ``pytest
--collect-only`` run on a generated project (a subprocess, so an escape could not harm the drill
itself), and ``Replay.from_spaces_json`` on a generated ``spaces.json`` (in-process, as a user of
the library would call it). A row passes when the error names the test or data file and the string,
no marker file exists afterwards, and nothing else was written. A few valid strings (including the
real Kernel Tuner datasets when they are on this machine) must still tune or load.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from benchmarks.drills.bad_input_kit import Drill, Observation
from benchmarks.drills.faults_kit import DRILL_CONFTEST, run_pytest

__all__ = ["DRILLS", "ESCAPES"]

#: (name, string with MARKER for the marker file's path). Each would create the marker if it ran.
ESCAPES: list[tuple[str, str]] = [
    (
        "subclasses -> _wrap_close -> os.system",
        "[X for X in ().__class__.__base__.__subclasses__() if X.__name__ == '_wrap_close'][0]"
        ".__init__.__globals__['system']('touch MARKER') == 0 or True",
    ),
    ("__import__('os').system", "__import__('os').system('touch MARKER') == 0"),
    ("getattr(__import__('os'), 'system')", "getattr(__import__('os'), 'system')('touch MARKER') == 0"),
    ("eval(...)", "eval(\"open('MARKER', 'w')\") is None"),
    ("exec(...)", "exec(\"open('MARKER', 'w')\") is None"),
    ("open(...)", "open('MARKER', 'w') == X"),
    ("fullwidth open(...) (NFKC)", "\uff4f\uff50\uff45\uff4e('MARKER', 'w') == X"),
    ("list comprehension", "[open('MARKER', 'w') for _ in (1,)] == X"),
    ("generator expression", "min(open('MARKER', 'w') for _ in (1,)) == X"),
    ("lambda", "(lambda: open('MARKER', 'w'))() == X"),
    ("subscript on ().__class__", "().__class__.__base__.__subclasses__()[0] == X"),
    ("'{0.__class__}'.format(1)", "'{0.__class__}'.format(1) == X"),
    ("f-string", "f\"{open('MARKER', 'w')}\" == X"),
    ("walrus :=", "(f := open('MARKER', 'w')) == X"),
    ("breakpoint()", "breakpoint() == X"),
    ("math.__loader__", "math.__loader__.load_module('os').system('touch MARKER') == 0"),
    ("min.__self__ (builtins)", "min.__self__.open('MARKER', 'w') == X"),
    ("int.__subclasses__()", "len(int.__subclasses__()) > X"),
    ("globals()[...]", "globals()['__builtins__']['open']('MARKER', 'w') == X"),
    ("9**9**9**9 (DoS)", "9**9**9**9 > X"),
    ("round(X, -10**9) (DoS)", "round(X, -10**9) == 0"),
    ("'a' * 10**9 (memory)", "'a' * 10**9 == X"),
    ("100,000 nested '-' (parser)", "-" * 100_000 + "1 < X"),
    ("9,000 nested '-' (parser)", "-" * 9_000 + "1 < X"),
]


def _marker_text(text: str, marker: Path) -> str:
    return text.replace("MARKER", str(marker))


def _names_string(output: str, text: str) -> bool:
    """The error quotes the string (long strings: its start)."""
    return repr(text.strip())[:60] in output


def _reason(message: str, text: str) -> str:
    """What an error says is wrong with ``text`` (without the list of what is allowed)."""
    for quoted in (f"{text.strip()!r}: ", "...': "):  # long strings are quoted shortened
        if quoted in message:
            message = message.split(quoted, 1)[1]
            break
    return message.split(" (allowed:", 1)[0]


def _error_line(output: str) -> str:
    """The last ``E   module.Error: message`` line of pytest's output, without the module path."""
    lines = [line for line in output.splitlines() if line.startswith("E   ")]
    line = lines[-1][4:] if lines else (output.strip().splitlines() or ["(no output)"])[-1]
    return re.sub(r"^[\w.]+\.(\w+(Error|Exception))", r"\1", line)


CONSTRAINT_TEST = """
from pytest_autotune import Interval, constraint, tunable


@constraint({text!r})
@tunable(X=Interval(1, 8))
def test_hostile(autotune):
    autotune.measure(lambda: None)
"""


def _pytest_escape(text: str) -> Callable[[Path], Observation]:
    def run(path: Path) -> Observation:
        marker = path / "pwned"
        hostile = _marker_text(text, marker)
        (path / "pytest.ini").write_text("[pytest]\n")
        (path / "test_k.py").write_text(CONSTRAINT_TEST.format(text=hostile))
        before = sorted(p.name for p in path.iterdir())
        result = run_pytest(path, "--collect-only", "-p", "no:cacheprovider", timeout=60)
        output = result.stdout + result.stderr
        # pytest's own folders (__pycache__, pytest-benchmark's .benchmarks) do not count
        after = sorted(
            p.name for p in path.iterdir() if p.name != "__pycache__" and not p.name.startswith(".")
        )
        error = _error_line(output)
        reason = _reason(error, hostile)
        ok = (
            result.returncode != 0
            and "ConstraintError: @tunable on test_k.test_hostile: constraint " in output
            and _names_string(output, hostile)
            and not marker.exists()
            and after == before
        )
        named = (
            "test, string named"
            if _names_string(output, hostile) and "test_hostile" in output
            else "NOT named"
        )
        return Observation(
            f"marker {'CREATED' if marker.exists() else 'absent'}; {named}: {reason}", passed=ok
        )

    return run


def _replay_escape(text: str) -> Callable[[Path], Observation]:
    def run(path: Path) -> Observation:
        from pytest_autotune.replay import Replay, ReplayError

        marker = path / "pwned"
        hostile = _marker_text(text, marker)
        listing = path / "spaces.json"
        cache = {"tune_params_keys": ["X"], "tune_params": {"X": [1, 2]}, "cache": {"1": {"time": 1.0}}}
        (path / "k.json").write_text(json.dumps(cache))
        item = {"file": "k.json", "tune_params": {"X": [1, 2]}, "restrictions": ["X > 0", hostile]}
        listing.write_text(json.dumps([item]))
        try:
            Replay.from_spaces_json(listing, "k.json")
        except ReplayError as exc:
            message = str(exc)
            ok = (
                message.startswith(f"{listing}: space 'k.json': constraint ")
                and _names_string(message, hostile)
                and not marker.exists()
                and sorted(p.name for p in path.iterdir()) == ["k.json", "spaces.json"]
            )
            reason = _reason(message, hostile)
            named = (
                "file, space, string named"
                if message.startswith(f"{listing}: space 'k.json'")
                else "NOT named"
            )
            return Observation(f"marker {'CREATED' if marker.exists() else 'absent'}; {named}: {reason}", ok)
        return Observation(
            f"loaded without error | marker {'CREATED' if marker.exists() else 'absent'}", False
        )

    return run


VALID_TEST = """
from pytest_autotune import Interval, Pow2, constraint, tunable


@constraint({text!r})
@tunable(X=Interval(1, 16), Y=Pow2(1, 16), strategy="exhaustive")
def test_valid(autotune):
    autotune.measure(lambda: None)
"""


def _pytest_valid(text: str, check: Callable[[int, int], bool]) -> Callable[[Path], Observation]:
    def run(path: Path) -> Observation:
        (path / "pytest.ini").write_text("[pytest]\n")
        (path / "conftest.py").write_text(DRILL_CONFTEST)
        (path / "test_k.py").write_text(VALID_TEST.format(text=text))
        result = run_pytest(path, "--autotune", "--autotune-isolate=none", timeout=120)
        store = path / "autotune.json"
        if result.returncode != 0 or not store.exists():
            return Observation(
                f"exit {result.returncode}: {_error_line(result.stdout + result.stderr)}", False
            )
        devices = json.loads(store.read_text())["devices"].values()
        entries = [entry for device in devices for entry in device["tests"].values()]
        config = entries[0]["config"]
        ok = len(entries) == 1 and check(config["X"], config["Y"])
        return Observation(f"tuned, winner {config} satisfies the string", ok)

    return run


def _real_datasets(path: Path) -> Observation:
    from pytest_autotune.replay import Replay

    listing = Path("/work/shared/datasets/spaces.json")
    if not listing.exists():
        return Observation("datasets not on this machine (skipped)", passed=True)
    items = json.loads(listing.read_text())
    strings = sum(len(item.get("restrictions") or []) for item in items)
    sizes = []
    for item in items:
        replay = Replay.from_spaces_json(listing, item["file"])
        sizes.append(replay.space.size == item["constrained_size"])
    return Observation(
        f"{len(items)} spaces, {strings} strings loaded; sizes match: {all(sizes)}", all(sizes)
    )


DRILLS: list[Drill] = [
    *(
        Drill(
            "restriction",
            f"@constraint: {name}",
            "collection fails: ConstraintError names test and string; no marker file",
            _pytest_escape(text),
        )
        for name, text in ESCAPES
    ),
    *(
        Drill(
            "restriction",
            f"spaces.json: {name}",
            "ReplayError names spaces.json, space and string; no marker file, nothing written",
            _replay_escape(text),
        )
        for name, text in ESCAPES[:8] + ESCAPES[19:20] + ESCAPES[22:23]
    ),
    Drill(
        "restriction",
        "valid: 'math.log2(Y) <= 3 and X % Y == 0'",
        "tunes; the winner satisfies the string",
        _pytest_valid("math.log2(Y) <= 3 and X % Y == 0", lambda x, y: y <= 8 and x % y == 0),
    ),
    Drill(
        "restriction",
        "valid: 'X in (1, 2, 4) or min(X, Y) > 8'",
        "tunes; the winner satisfies the string",
        _pytest_valid("X in (1, 2, 4) or min(X, Y) > 8", lambda x, y: x in (1, 2, 4) or min(x, y) > 8),
    ),
    Drill(
        "restriction",
        "valid: the 10 Kernel Tuner spaces.json datasets",
        "every restriction string loads; sizes as recorded",
        _real_datasets,
    ),
]
