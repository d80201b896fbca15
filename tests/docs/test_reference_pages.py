"""The hand-written reference pages name everything the code accepts (so they cannot silently fall behind)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_autotune.api import DECLARATION_KEYS
from pytest_autotune.policy import POLICY_KEYS
from pytest_autotune.strategies import available_strategies

DOCS = Path(__file__).resolve().parents[2] / "docs"
KINDS = ("Interval", "Pow2", "Set", "Categorical", "Bool", "Real", "Permutation")
FIXTURE_MEMBERS = (
    *("config", "tuning", "device", "launch", "timing"),
    *("measure", "build", "metric", "record", "reject"),
)


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("keyword", sorted(POLICY_KEYS | DECLARATION_KEYS))
def test_every_tunable_keyword_is_in_the_reference(keyword: str) -> None:
    assert re.search(rf"^\| `{keyword}` \|", page("reference/tunable.md"), re.MULTILINE), (
        f"@tunable({keyword}=...) is accepted but has no row in docs/reference/tunable.md"
    )


@pytest.mark.parametrize("kind", KINDS)
def test_every_parameter_kind_is_in_the_reference(kind: str) -> None:
    assert re.search(rf"^\| `{kind}\(", page("reference/tunable.md"), re.MULTILINE)


@pytest.mark.parametrize("member", FIXTURE_MEMBERS)
def test_every_fixture_member_is_in_the_reference(member: str) -> None:
    assert f"`autotune.{member}" in page("reference/tunable.md")


def test_every_public_method_of_the_fixture_is_listed() -> None:
    from pytest_autotune.fixture import Autotune

    plugin_only = {"begin_run", "end_run", "metric_values"}  # called by the plugin, not by tests
    methods = {
        name
        for name, value in vars(Autotune).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, property))
    }
    assert methods - plugin_only <= set(FIXTURE_MEMBERS) | {"timer"}


@pytest.mark.parametrize("strategy", available_strategies())
def test_every_strategy_is_named_for_kernel_tuner_users(strategy: str) -> None:
    assert f"`{strategy}`" in page("coming-from-kernel-tuner.md")
    assert f'`"{strategy}"`' in page("reference/tunable.md")


def test_the_glossary_defines_the_words_the_output_uses() -> None:
    glossary = page("concepts.md").split("## Glossary", 1)[1]
    terms = re.findall(r"^([a-z][a-z ,]*)\n: ", glossary, re.MULTILINE)
    for word in ("noise", "spread", "finalists", "blocks", "history", "device key", "baseline", "tolerance"):
        assert any(word in term for term in terms), f"{word!r} is not in the glossary"
