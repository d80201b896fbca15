"""Restriction strings are checked against a syntax whitelist: known sandbox escapes are refused,
named in the error, and never run (a marker file proves it); the allowed forms still work."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from pytest_autotune.replay import Replay, ReplayError
from pytest_autotune.space import ConstraintError, Interval, Pow2, Set, build_space
from pytest_autotune.space.conditions.constraints import Constraint
from pytest_autotune.space.conditions.safe_expression import FUNCTIONS, MAX_DEPTH, check_restriction
from pytest_autotune.space.conditions.vectorize import split_constraint

#: Known escapes and denial-of-service strings: (id, text with MARKER for a file path, construct the
#: error must name). Each one that could run creates the marker file.
ESCAPES: list[tuple[str, str, str]] = [
    (
        "subclasses-wrap-close",
        "[X for X in ().__class__.__base__.__subclasses__() if X.__name__ == '_wrap_close'][0]"
        ".__init__.__globals__['system']('touch MARKER') == 0 or True",
        "subscript",
    ),
    ("dunder-import", "__import__('os').system('touch MARKER') == 0", "attribute access '.system'"),
    ("getattr", "getattr(__import__('os'), 'system')('touch MARKER') == 0", "getattr"),
    ("eval", "eval(\"open('MARKER', 'w')\") is None", "'eval'"),
    ("exec", "exec(\"open('MARKER', 'w')\") is None", "'exec'"),
    ("compile", "compile(\"open('MARKER', 'w')\", 'x', 'exec') == 1", "'compile'"),
    ("open", "open('MARKER', 'w') == X", "'open'"),
    ("fullwidth-open", "\uff4f\uff50\uff45\uff4e('MARKER', 'w') == X", "call of"),
    ("list-comprehension", "[open('MARKER', 'w') for _ in (1,)] == X", "list comprehension"),
    ("generator-expression", "min(open('MARKER', 'w') for _ in (1,)) == X", "generator expression"),
    ("lambda", "(lambda: open('MARKER', 'w'))() == X", "lambda"),
    ("subscript-on-class", "().__class__.__base__.__subclasses__()[0] == X", "subscript"),
    ("format-string", "'{0.__class__}'.format(1) == X", "attribute access '.format'"),
    ("f-string", "f\"{open('MARKER', 'w')}\" == X", "f-string"),
    ("walrus", "(f := open('MARKER', 'w')) == X", "assignment expression"),
    ("breakpoint", "breakpoint() == X", "'breakpoint'"),
    ("math-dict", "math.__dict__ == X", "attribute access '.__dict__'"),
    ("math-loader", "math.__loader__.load_module('os').system('touch MARKER') == 0", "'.system'"),
    ("min-self-builtins", "min.__self__.open('MARKER', 'w') == X", "attribute access '.open'"),
    ("int-subclasses", "len(int.__subclasses__()) > X", "attribute access '.__subclasses__'"),
    ("param-attribute", "X.__class__.__mro__[-1].__subclasses__() == X", "'.__subclasses__'"),
    ("globals", "globals()['__builtins__']['open']('MARKER', 'w') == X", "subscript"),
    ("builtins-name", "__builtins__.open('MARKER', 'w') == X", "'.open'"),
    ("subprocess", "__import__('subprocess').run(['touch', 'MARKER']) == X", "'.run'"),
    ("starred", "min(*open('MARKER', 'w')) == X", "starred"),
    ("keyword-argument", "max(X, key=open) == X", "keyword argument"),
    ("container-item", "X in (1, ().__class__)", "item '().__class__'"),
    ("type-call", "type(X) == int", "'type'"),
    ("pow-builtin", "pow(9, 9**9) > X", "call of 'pow'"),
    ("huge-power-tower", "9**9**9**9 > X", "'**'"),
    ("huge-exponent", "X ** 99999999999 > 0", "'**'"),
    ("power-of-power", "(X ** 64) ** 64 > 0", "power of a power"),
    ("huge-shift", "1 << 10**12 > X", "'<<'"),
    ("round-digits", "round(X, -10**9) == 0", "constant digits"),
    ("string-repeat", "'a' * 10**9 == X", "string 'a'"),
    ("math-factorial", "math.factorial(10**6) > X", "'.factorial'"),
    ("bytes", "b'x' == X", "bytes constant"),
    ("deep-unary", "-" * 100_000 + "1 < X", "characters"),
    ("deep-unary-9000", "-" * 9_000 + "1 < X", "nested too deeply"),
    ("deep-parentheses", "(" * 1_000 + "X" + ")" * 1_000 + " > 0", "nested"),
    ("deep-sum", "+".join(["X"] * (MAX_DEPTH + 5)) + " > 0", f"more than {MAX_DEPTH} levels"),
    ("huge-literal", "1" * 5_000 + " == X", "not a Python expression"),
]


@pytest.fixture
def marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path / "pwned"


@pytest.mark.parametrize(("text", "construct"), [e[1:] for e in ESCAPES], ids=[e[0] for e in ESCAPES])
def test_escapes_are_refused_naming_the_string_and_construct(text: str, construct: str, marker: Path) -> None:
    text = text.replace("MARKER", str(marker))
    start = time.perf_counter()
    with pytest.raises(ConstraintError) as info:
        build_space({"X": Interval(1, 8)}, [text])
    assert time.perf_counter() - start < 5
    message = str(info.value)
    assert message.startswith("constraint ")
    assert repr(text.strip())[:150] in message or repr(text.strip())[:190] in message
    assert construct in message
    assert not marker.exists()


@pytest.mark.parametrize(
    ("text", "construct"), [e[1:] for e in ESCAPES[:20]], ids=[e[0] for e in ESCAPES[:20]]
)
def test_escapes_through_at_constraint_fail_the_declaration(text: str, construct: str, marker: Path) -> None:
    from pytest_autotune import constraint, tunable

    text = text.replace("MARKER", str(marker))
    with pytest.raises(ConstraintError, match=r"@tunable on .*test_k") as info:

        @constraint(text)
        @tunable(X=Interval(1, 8))
        def test_k() -> None: ...

    assert construct in str(info.value)
    assert not marker.exists()


def test_the_message_lists_what_is_allowed() -> None:
    with pytest.raises(ConstraintError) as info:
        check_restriction("X.__class__ == 1", ["X"])
    assert "attribute access '.__class__' in 'X.__class__' is not allowed in a restriction string" in str(
        info.value
    )
    assert "math.log2()" in str(info.value)


def test_a_hostile_spaces_json_names_the_file_and_runs_nothing(tmp_path: Path, marker: Path) -> None:
    hostile = f"__import__('os').system('touch {marker}') == 0"
    listing = [{"file": "k.json", "tune_params": {"X": [1, 2]}, "restrictions": ["X > 0", hostile]}]
    path = tmp_path / "spaces.json"
    path.write_text(json.dumps(listing))
    with pytest.raises(ReplayError) as info:
        Replay.from_spaces_json(path, "k.json")
    message = str(info.value)
    assert message.startswith(f"{path}: space 'k.json': constraint ")
    assert repr(hostile) in message
    assert "attribute access '.system'" in message
    assert not marker.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spaces.json"]


def test_a_restriction_that_is_not_a_string_is_named(tmp_path: Path) -> None:
    listing = [{"file": "k.json", "tune_params": {"X": [1, 2]}, "restrictions": [{"eval": "x"}]}]
    path = tmp_path / "spaces.json"
    path.write_text(json.dumps(listing))
    with pytest.raises(
        ReplayError, match=r"spaces\.json: space 'k\.json': restriction \{'eval': 'x'\} is not"
    ):
        Replay.from_spaces_json(path, "k.json")


ALLOWED = [
    ("X % Y == 0", lambda x, y: x % y == 0),
    ("min(X, Y) <= 4 and max(X, Y) >= 2", lambda x, y: min(x, y) <= 4 and max(x, y) >= 2),
    ("math.log2(Y) <= 3 or math.ceil(X / 3) == 2", lambda x, y: np.log2(y) <= 3 or -(-x // 3) == 2),
    ("math.floor(math.sqrt(X)) ** 2 == X", lambda x, y: int(x**0.5) ** 2 == x),
    ("X in (1, 2, 4) or Y not in [2, 8]", lambda x, y: x in (1, 2, 4) or y not in (2, 8)),
    ("(X if Y > 2 else Y) > 3", lambda x, y: (x if y > 2 else y) > 3),
    ("abs(X - Y) < 3 or not X > 5", lambda x, y: abs(x - y) < 3 or not x > 5),
    (
        "round(X / 3) == int(X / 3) and 1 << 2 <= X * 2 ** 2",
        lambda x, y: round(x / 3) == int(x / 3) and x * 4 >= 4,
    ),
    ("X * math.pi > -3 and bool(X) and float(Y) >= 1.0 and True", lambda x, y: True),
]


@pytest.mark.parametrize(("text", "reference"), ALLOWED, ids=[a[0] for a in ALLOWED])
def test_allowed_strings_select_what_python_does(text: str, reference: object) -> None:
    space = build_space({"X": Interval(1, 40), "Y": Pow2(1, 64)}, [text])
    expected = [
        {"X": x, "Y": y}
        for x in range(1, 41)
        for y in (1, 2, 4, 8, 16, 32, 64)
        if reference(x, y)  # type: ignore[operator]
    ]
    got = space.configs(space.at_index(list(range(space.size))))
    assert sorted((c["X"], c["Y"]) for c in got) == sorted((c["X"], c["Y"]) for c in expected)


def test_strings_compare_to_categorical_values() -> None:
    from pytest_autotune.space import Categorical

    space = build_space(
        {"M": Categorical("fast", "safe", "slow"), "X": Set(1, 2)}, ["M in ('fast', 'slow') and X == 2"]
    )
    assert space.size == 2


def test_compiled_strings_see_only_the_whitelisted_builtins() -> None:
    params = {"X": Interval(1, 40), "Y": Pow2(1, 64)}
    constraint = Constraint.from_string("min(X, Y) <= 4 and X % 2 == 0", names=list(params))
    namespace = constraint.fn.__globals__
    assert set(namespace) == {"__builtins__", "math"}
    assert set(namespace["__builtins__"]) == set(FUNCTIONS)
    assert "open" not in namespace["__builtins__"]
    assert "__import__" not in namespace["__builtins__"]
    for atom in split_constraint(constraint, {n: p.bind(n) for n, p in params.items()}):
        assert atom.namespace is namespace  # the numpy rewrite compiles its parts in the same globals
    space = build_space(params, ["min(X, Y) <= 4 and X % 2 == 0"])
    assert space.size == sum(1 for x in range(2, 41, 2) for y in (1, 2, 4, 8, 16, 32, 64) if min(x, y) <= 4)


def test_parameters_may_shadow_function_names() -> None:
    space = build_space({"min": Interval(1, 4), "math": Set(1, 2)}, ["min > math"])
    assert space.size == 5
    with pytest.raises(ConstraintError, match=r"attribute access '\.ceil'"):
        build_space({"math": Set(1, 2)}, ["math.ceil(math) == 1"])
