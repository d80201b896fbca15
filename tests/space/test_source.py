"""Locating a constraint's exact source: only the defining statement is parsed when it parses alone."""

from __future__ import annotations

import linecache
from collections.abc import Callable
from typing import Any

import pytest

from pytest_autotune.space.conditions import source
from pytest_autotune.space.conditions.source import locate


def _text(fn: Callable[..., Any]) -> str:
    located = locate(fn)
    assert located is not None
    return located.text


def _checker(predicate: Callable[[int], bool]) -> bool:
    return predicate(3)


def _decorate(where: Callable[..., bool]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def apply(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.where = where  # type: ignore[attr-defined]
        return fn

    return apply


def test_lambda_in_an_indented_multiline_statement() -> None:
    limit = 8
    specs: list[tuple[str, Callable[..., bool]]] = [
        ("a", lambda a: a % 2 == 0),
        (
            "b",
            lambda a, b: (
                a * b <= limit  # a comment inside
            ),
        ),
    ]
    assert _text(specs[0][1]) == "lambda a: a % 2 == 0"
    expected = "lambda a, b: (\n                a * b <= limit  # a comment inside\n            )"
    assert _text(specs[1][1]) == expected


def test_two_lambdas_with_the_same_arguments_on_one_line() -> None:
    first, second = (lambda x: x > 1), (lambda x: x < 9)
    assert (_text(first), _text(second)) == ("lambda x: x > 1", "lambda x: x < 9")


def test_lambda_in_a_compound_statement_header_falls_back_to_the_whole_file() -> None:
    texts = []
    if _checker(header := lambda x: x > 2):
        texts.append(_text(header))
    for check in [lambda y: y < 5]:
        texts.append(_text(check))
    assert texts == ["lambda x: x > 2", "lambda y: y < 5"]
    assert (header.__code__.co_filename, 0, 0) in source._PARSED  # the whole file was parsed


def test_lambda_in_a_decorator_line_falls_back_to_the_whole_file() -> None:
    @_decorate(lambda z: z != 4)
    def kernel() -> None:
        return None

    assert _text(kernel.where) == "lambda z: z != 4"  # type: ignore[attr-defined]


def test_only_the_statement_is_parsed_for_a_lambda() -> None:
    filename = "<test_source: statement only>"
    text = "x = 1\ny = [\n    lambda q: q > 1,\n]\ndef broken(:\n"  # the rest of the file does not parse
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    try:
        namespace: dict[str, Any] = {}
        exec(compile("x = 1\ny = [\n    lambda q: q > 1,\n]\n", filename, "exec"), namespace)
        assert _text(namespace["y"][0]) == "lambda q: q > 1"
        assert (filename, 0, 0) not in source._PARSED
    finally:
        del linecache.cache[filename]


@pytest.mark.parametrize("indent", ["", "    "])
def test_statement_offsets_match_the_file(indent: str) -> None:
    filename = f"<test_source: offsets {len(indent)}>"
    body = f"{indent}w = (lambda r: r + 1, lambda r: r - 1)\n"
    text = ("if True:\n" if indent else "") + body
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    try:
        namespace: dict[str, Any] = {}
        exec(compile(text, filename, "exec"), namespace)
        plus, minus = namespace["w"]
        assert (_text(plus), _text(minus)) == ("lambda r: r + 1", "lambda r: r - 1")
    finally:
        del linecache.cache[filename]


def test_lambda_continued_on_the_next_line_is_not_cut_at_its_first_line() -> None:
    filename = "<test_source: continued>"
    text = "y = (\n    lambda a, b: a * b\n    <= 8,\n)\n"  # line 2 alone parses, but is not the lambda
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    try:
        namespace: dict[str, Any] = {}
        exec(compile(text, filename, "exec"), namespace)
        assert _text(namespace["y"][0]) == "lambda a, b: a * b\n    <= 8"
    finally:
        del linecache.cache[filename]
