"""docs/conf.py: the optional guides join the navigation once their page exists."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture
def conf(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(DOCS))
    spec = importlib.util.spec_from_file_location("docs_conf", DOCS / "conf.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.delitem(sys.modules, "gen_options", raising=False)
    return module


def guides(conf: ModuleType) -> list[str]:
    source = [(DOCS / "index.md").read_text(encoding="utf-8")]
    conf._optional_guides(None, "index", source)
    block = source[0].split(":caption: Guides", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line and not line.startswith(":")]


def test_without_the_pages_the_guides_are_the_existing_ones(
    conf: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(conf, "HERE", tmp_path)
    assert guides(conf) == ["ci", "runtime", "coming-from-kernel-tuner", "troubleshooting"]


def test_a_page_that_exists_is_listed(
    conf: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "scale-out.md").write_text("# Scale out\n")
    monkeypatch.setattr(conf, "HERE", tmp_path)
    assert guides(conf) == ["ci", "runtime", "coming-from-kernel-tuner", "scale-out", "troubleshooting"]


def test_other_pages_are_left_alone(conf: ModuleType) -> None:
    source = ["optional-guides-go-here\n"]
    conf._optional_guides(None, "tutorial", source)
    assert source == ["optional-guides-go-here\n"]
